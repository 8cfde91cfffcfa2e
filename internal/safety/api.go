package safety

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	coordkitpy "github.com/coordkit/coordkit/clients/python"
	"github.com/coordkit/coordkit/internal/coordapi"
	"github.com/coordkit/coordkit/session"
)

// pyRMW is the Python process client (Config.Python): it takes the lock
// through the coordination API with clients/python's coordkit.py, then does
// what `coordctl check rmw` does — fence (if asked), read the counter, wait,
// write the value + 1 with the token — and prints the RMWResult line. It
// checks nothing between its read and its write: a client that lost the
// lock meanwhile writes anyway, which only the resource's check of the
// token can refuse. Arguments: the directory of coordkit.py, the agent's
// URL, the lock name, the resource's URL, the key, the id, the work in
// seconds, fence (true or false).
const pyRMW = `import json, sys, time, urllib.error, urllib.request
d, agent, name, res, key, pid, work, fence = sys.argv[1:9]
sys.path.insert(0, d)
import coordkit
try:
    h = coordkit.Client(agent).lock(name, timeout=5).acquire()
except coordkit.CoordError:
    sys.exit(3)
out = {"id": "%s.%d" % (pid, h.token), "token": h.token, "read": 0, "read_ok": False, "wrote": 0}
def call(method, path, body=None):
    req = urllib.request.Request(res + path, data=body, method=method,
                                 headers={"Fencing-Token": str(h.token), "Fencing-Scope": h.scope})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return "ok", json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return {409: "stale", 404: "notfound"}.get(e.code, "fail"), {}
    except Exception:
        return "unknown", {}
def done(msg=""):
    if msg:
        out["message"] = msg
    print(json.dumps(out), flush=True)
    h.release()
    sys.exit(0)
if fence == "true":
    out["fence"] = call("POST", "/v1/fence")[0]
    if out["fence"] != "ok":
        done("fence: " + out["fence"])
got, e = call("GET", "/v1/kv/" + key)
if got == "ok":
    out["read"] = int(e["value"].split(" ")[0])
elif got != "notfound":
    done("read: " + got)
out["read_ok"] = True
time.sleep(float(work))
out["wrote"] = out["read"] + 1
out["write"] = call("PUT", "/v1/kv/" + key, ("%d %s" % (out["wrote"], out["id"])).encode())[0]
done()
`

// apiClients is the coordination API the Python process clients hold
// through: an agent served in the run's process on loopback, on its own
// client of the cluster (its faults are the agent's too), and the
// directory of coordkit.py and the client program.
type apiClients struct {
	cli *clientv3.Client
	srv *coordapi.Server
	dir string
}

// startAPI starts the agent and writes coordkit.py and the client program.
func (r *run) startAPI(ctx context.Context) (*apiClients, error) {
	dir, err := os.MkdirTemp(r.cfg.DataDir, "python-")
	if err != nil {
		return nil, err
	}
	if err := coordkitpy.Install(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "rmw.py"), []byte(pyRMW), 0o644); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: r.cluster.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	srv, err := coordapi.Listen(ctx, coordapi.Config{Client: cli, SessionOptions: []session.Option{session.WithTTL(r.cfg.TTL)}}, "127.0.0.1:0")
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return &apiClients{cli: cli, srv: srv, dir: dir}, nil
}

// close stops the agent, releasing what it holds.
func (a *apiClients) close() {
	_ = a.srv.Close()
	_ = a.cli.Close()
}

// pyExec is the command line of one Python process client.
func (r *run) pyExec(id string) (string, []string) {
	fence := !r.cfg.NoFenceFirst && !r.tokenless()
	return r.cfg.Python, []string{filepath.Join(r.api.dir, "rmw.py"), r.api.dir, r.api.srv.URL, Scope, strings.TrimSuffix(r.resURL, "/"), counterKey, id,
		strconv.FormatFloat(r.rmwWork().Seconds(), 'f', 3, 64), strconv.FormatBool(fence)}
}
