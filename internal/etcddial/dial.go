package etcddial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Errors of Dial; each is wrapped with the endpoint and the cause in words.
var (
	// ErrUnreachable: nothing answered at any endpoint within the dial timeout.
	ErrUnreachable = errors.New("etcd unreachable")
	// ErrTLS: an endpoint answered but the TLS handshake failed or TLS was
	// used on one side only.
	ErrTLS = errors.New("etcd TLS failed")
	// ErrAuth: etcd answered and refused the credentials.
	ErrAuth = errors.New("etcd authentication failed")
	// ErrTLSConfig: the TLS files of Config did not make a client
	// configuration (nothing was dialed).
	ErrTLSConfig = errors.New("TLS configuration")
	// ErrCertUsage: the client certificate's extended key usages do not
	// include clientAuth, so etcd would refuse it in the handshake; it
	// comes wrapped with ErrTLSConfig from Dial.
	ErrCertUsage = errors.New("the client certificate is not for client authentication")
)

// Config is what Dial connects with.
type Config struct {
	Endpoints   []string
	DialTimeout time.Duration
	// CACert, Cert and Key are PEM files; with CACert or Cert set the client
	// speaks TLS to bare host:port endpoints.
	CACert, Cert, Key string
	// Username and Password authenticate; empty Username: no authentication.
	Username, Password string
}

// Dial connects to cfg's endpoints and checks, within cfg.DialTimeout, that
// at least one answers. When none does it finds out why from a raw
// connection to each: ErrUnreachable when nothing answered, ErrTLS or
// ErrAuth with the cause in words when something did; ErrTLSConfig when the
// TLS files do not load; ctx's error when ctx ended. Endpoints that answer
// for two etcd clusters are ErrClusterMismatch, at Dial or (an endpoint that
// answered late) on the client's first answer from the other cluster. The
// caller closes the client.
func Dial(ctx context.Context, cfg Config) (*clientv3.Client, error) {
	ccfg := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: cfg.DialTimeout,
		Logger:               zap.NewNop(),
		// Not ctx's cancellation: a hold's ctx ends at SIGTERM, which is
		// forwarded to its command, and the lease (the session keeps it
		// alive through the client's context) must stay alive until that
		// command has exited. Close ends the client.
		Context:  context.WithoutCancel(ctx),
		Username: cfg.Username,
		Password: cfg.Password,
	}
	pin := &clusterPin{}
	ccfg.DialOptions = pin.dialOptions()
	if cfg.CACert != "" || cfg.Cert != "" {
		if err := checkClientCert(cfg.Cert, cfg.Key); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTLSConfig, err)
		}
		info := transport.TLSInfo{TrustedCAFile: cfg.CACert, CertFile: cfg.Cert, KeyFile: cfg.Key}
		tlsCfg, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTLSConfig, err)
		}
		ccfg.TLS = tlsCfg
	}
	// One budget for the whole dial: the requests get --dial-timeout, and
	// the raw connections that explain a failure run beside them from half
	// of it on (most dials have their answer long before), ending with them.
	diag := startDiagnosis(ctx, cfg.Endpoints, ccfg.TLS, cfg.DialTimeout/2, time.Now().Add(cfg.DialTimeout))
	cli, err := clientv3.New(ccfg)
	if err == nil {
		var sts []endpointStatus
		sts, err = probeClusters(ctx, cli, cfg.Endpoints, cfg.DialTimeout)
		switch {
		case errors.Is(err, ErrClusterMismatch):
			_ = cli.Close()
			diag.stop()
			return nil, err
		case err != nil:
			_ = cli.Close()
		default:
			pin.set(sts[0].cluster, sts[0].endpoint)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			diag.stop()
			return nil, ctx.Err()
		}
		return nil, explainDialError(diag, cfg.Username, cfg.DialTimeout, err)
	}
	diag.stop()
	return cli, nil
}
