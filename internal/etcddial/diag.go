package etcddial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// endpointDiag is what one endpoint's raw connection showed.
type endpointDiag struct {
	ep  string
	err error // nil: the transport works
}

// diagnosis is the raw connection to each endpoint that explainDialError
// reads when the client's requests got no answer. It runs beside the
// requests, from half the dial timeout on, and ends at the same deadline,
// so that a dial that fails takes no longer than --dial-timeout: run after
// the requests had given up, it took as long again (an etcd that accepts
// connections and answers nothing, a frozen one, kept a command 2x
// --dial-timeout).
type diagnosis struct {
	eps    []string
	tlsCfg *tls.Config
	timer  *time.Timer
	once   sync.Once
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{}
	diags  []endpointDiag
}

// startDiagnosis arms the diagnosis of eps to start after delay (or at
// run), each endpoint's connection ending at deadline.
func startDiagnosis(ctx context.Context, eps []string, tlsCfg *tls.Config, delay time.Duration, deadline time.Time) *diagnosis {
	d := &diagnosis{eps: eps, tlsCfg: tlsCfg, done: make(chan struct{})}
	d.ctx, d.cancel = context.WithDeadline(ctx, deadline)
	d.timer = time.AfterFunc(delay, d.start)
	return d
}

func (d *diagnosis) start() {
	d.once.Do(func() {
		go func() {
			defer close(d.done)
			diags := make(chan endpointDiag, len(d.eps))
			for _, ep := range d.eps {
				go func() { diags <- endpointDiag{ep: ep, err: diagnoseEndpoint(d.ctx, ep, d.tlsCfg)} }()
			}
			for range d.eps {
				d.diags = append(d.diags, <-diags)
			}
		}()
	})
}

// results starts the diagnosis if it has not started and waits for it.
func (d *diagnosis) results() []endpointDiag {
	d.timer.Stop()
	d.start()
	<-d.done
	return d.diags
}

// stop gives the diagnosis up (the dial succeeded): a connection it made is
// closed.
func (d *diagnosis) stop() {
	d.cancel()
	if d.timer.Stop() {
		return // never started
	}
	d.start() // started: wait for it, so that no connection outlives Dial
	<-d.done
}

// explainDialError turns the error of clientv3.New or of the first request
// into one that says what happened, from diag's raw connections:
// ErrUnreachable only when nothing answered, ErrTLS or ErrAuth otherwise.
func explainDialError(diag *diagnosis, user string, timeout time.Duration, reqErr error) error {
	if explained := explainRequestError(reqErr, user); explained != nil {
		diag.stop()
		return explained
	}
	eps := diag.eps
	var firstUnreachable error
	var transportOK []string
	var answered error
	for _, d := range diag.results() {
		switch {
		case d.err == nil:
			transportOK = append(transportOK, d.ep)
		case errors.Is(d.err, ErrUnreachable):
			if firstUnreachable == nil {
				firstUnreachable = d.err
			}
		case answered == nil:
			answered = d.err
		}
	}
	if answered != nil {
		return answered
	}
	if len(transportOK) > 0 {
		cause := reqErr
		if errors.Is(reqErr, context.DeadlineExceeded) || status.Code(reqErr) == codes.DeadlineExceeded {
			cause = fmt.Errorf("it accepted the connection but did not answer within --dial-timeout %s", timeout)
		}
		return fmt.Errorf("etcd at %s: %w", strings.Join(transportOK, ","), cause)
	}
	return fmt.Errorf("%w at %s: nothing answered within --dial-timeout %s (%v)", ErrUnreachable,
		strings.Join(eps, ","), timeout, errors.Unwrap(firstUnreachable))
}

// explainRequestError recognizes the answers of an etcd that was reached;
// nil when err is not one of them.
func explainRequestError(err error, user string) error {
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrGRPCAuthFailed):
		return fmt.Errorf("%w for user %s: wrong name or password", ErrAuth, user)
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrGRPCUserEmpty):
		return fmt.Errorf("%w: etcd requires a user: give --user NAME:PASSWORD, or a client certificate whose common name is a user", ErrAuth)
	case errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrGRPCPermissionDenied):
		return fmt.Errorf("%w: permission denied for user %s", ErrAuth, user)
	}
	return nil
}

// useTLS says whether etcd's client speaks TLS to ep: always for https://,
// never for http://, and for a bare host:port when TLS is configured.
func useTLS(ep string, tlsCfg *tls.Config) (host string, useTLS bool) {
	if scheme, rest, ok := strings.Cut(ep, "://"); ok {
		if u, err := url.Parse(ep); err == nil {
			rest = u.Host
		}
		return rest, scheme == "https" || scheme == "unixs"
	}
	return ep, tlsCfg != nil
}

// diagnoseEndpoint connects to ep as etcd's client would and returns nil
// when the transport works, or the error that says why not.
func diagnoseEndpoint(ctx context.Context, ep string, tlsCfg *tls.Config) error {
	if strings.HasPrefix(ep, "unix") {
		return nil // sockets: nothing to add to the client's own error
	}
	hostport, wantTLS := useTLS(ep, tlsCfg)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return &unreachableError{err: err}
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// Given up (the dial succeeded meanwhile): a read in progress ends now.
	defer context.AfterFunc(ctx, func() { _ = conn.Close() })()
	if !wantTLS {
		if speaksTLS(ctx, conn, hostport) {
			return fmt.Errorf("%w: %s: the endpoint speaks TLS; use https:// and --cacert", ErrTLS, ep)
		}
		return nil
	}
	cfg := &tls.Config{}
	if tlsCfg != nil {
		cfg = tlsCfg.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(hostport)
	}
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return classifyTLSError(ep, err)
	}
	// With TLS 1.3 the server checks our certificate after our side of the
	// handshake is done: its verdict arrives as an alert on the first read.
	// Say hello as HTTP/2 does and read its first frame.
	if _, err := io.WriteString(tc, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		return classifyTLSError(ep, err)
	}
	if _, err := tc.Read(make([]byte, 1)); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // connected and silent: the request's own error says more
		}
		return classifyTLSError(ep, err)
	}
	return nil
}

// unreachableError is a dial that nothing answered; it matches ErrUnreachable.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string        { return e.err.Error() }
func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

// speaksTLS reports whether the server at conn completes (its side of) a
// TLS handshake.
func speaksTLS(ctx context.Context, conn net.Conn, hostport string) bool {
	host, _, _ := net.SplitHostPort(hostport)
	// Only to find out whether TLS is spoken; nothing is sent over it.
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: host}) //nolint:gosec
	err := tc.HandshakeContext(ctx)
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert) || strings.Contains(err.Error(), "remote error: tls")
}

// classifyTLSError words a failed TLS exchange with ep.
func classifyTLSError(ep string, err error) error {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	msg := err.Error()
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w: %s: %v (is --cacert the CA that signed etcd's certificate?)", ErrTLS, ep, unknownCA)
	case errors.As(err, &hostErr):
		return fmt.Errorf("%w: %s: %v", ErrTLS, ep, hostErr)
	case errors.As(err, &invalid):
		return fmt.Errorf("%w: %s: %v", ErrTLS, ep, invalid)
	case errors.As(err, &verify):
		return fmt.Errorf("%w: %s: %v", ErrTLS, ep, verify.Err)
	case errors.As(err, &rhe), errors.Is(err, io.EOF), strings.Contains(msg, "connection reset"):
		return fmt.Errorf("%w: %s: the endpoint does not speak TLS (%v); use http:// without --cacert", ErrTLS, ep, err)
	case strings.Contains(msg, "certificate required"):
		return fmt.Errorf("%w: %s: etcd requires a client certificate: give --cert and --key (%v)", ErrTLS, ep, err)
	case strings.Contains(msg, "remote error: tls"):
		return fmt.Errorf("%w: %s: etcd rejected the client certificate (%v): is it signed by a CA etcd trusts?", ErrTLS, ep, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrTLS, ep, err)
}
