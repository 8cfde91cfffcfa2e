package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/faultctl"
)

// etcdClusterReady is what `coordctl etcd --members 3` prints once the
// cluster serves: the proxied client URLs, and the control API.
type etcdClusterReady struct {
	Endpoints []string `json:"endpoints"`
	Control   string   `json:"control"`
}

func (r etcdClusterReady) WriteSimple(w io.Writer) error {
	_, err := fmt.Fprintf(w, "ready endpoints=%s\n", strings.Join(r.Endpoints, ","))
	return err
}

// runEtcdCluster runs three members with fault proxies and the control API
// until ctx is cancelled.
func runEtcdCluster(ctx context.Context, f *factory, opts *etcdOptions) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	if err := checkListen("--control", opts.Control); err != nil {
		return err
	}
	var urls []string
	for _, u := range strings.Split(opts.ClientURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			if err := checkMemberURL("--listen-client-urls", u); err != nil {
				return err
			}
			urls = append(urls, u)
		}
	}
	c, err := etcdembed.StartCluster(ctx, etcdembed.ClusterConfig{Size: opts.Members, DataDir: opts.DataDir, ClientURLs: urls})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer c.Close()
	ctl, err := faultctl.Serve(opts.Control, c)
	if err != nil {
		return err
	}
	defer ctl.Close()
	fmt.Fprintf(f.IO.ErrOut, "coordctl etcd: fault control API on %s (GET /v1/status)\n", ctl.URL())
	if err := p.Print(etcdClusterReady{Endpoints: c.Endpoints(), Control: ctl.URL()}); err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Fprintln(f.IO.ErrOut, "coordctl etcd: stopping")
	return nil
}
