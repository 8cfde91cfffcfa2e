package faultctl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coordkit/coordkit/internal/etcdembed"
	"github.com/coordkit/coordkit/internal/faultctl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeCluster records calls and fails like etcdembed.Cluster does.
type fakeCluster struct {
	calls   []string
	stopped map[int]bool
}

func (f *fakeCluster) check(n int) error {
	if n < 1 || n > 3 {
		return fmt.Errorf("%w: %d", etcdembed.ErrNoMember, n)
	}
	return nil
}

func (f *fakeCluster) StopMember(n int) error {
	if err := f.check(n); err != nil {
		return err
	}
	if f.stopped[n] {
		return etcdembed.ErrMemberStopped
	}
	f.stopped[n] = true
	f.calls = append(f.calls, fmt.Sprintf("stop %d", n))
	return nil
}

func (f *fakeCluster) StartMember(ctx context.Context, n int) error {
	if err := f.check(n); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		return fmt.Errorf("start without a deadline")
	}
	f.stopped[n] = false
	f.calls = append(f.calls, fmt.Sprintf("start %d", n))
	return nil
}

func (f *fakeCluster) Isolate(n int) error {
	f.calls = append(f.calls, fmt.Sprintf("isolate %d", n))
	return f.check(n)
}

func (f *fakeCluster) BlackholeClient(n int) error {
	f.calls = append(f.calls, fmt.Sprintf("blackhole %d", n))
	return f.check(n)
}

func (f *fakeCluster) DelayLink(from, to int, d time.Duration) error {
	f.calls = append(f.calls, fmt.Sprintf("delay %d %d %s", from, to, d))
	return nil
}

func (f *fakeCluster) CutLink(from, to int) error {
	f.calls = append(f.calls, fmt.Sprintf("cut %d %d", from, to))
	return nil
}

func (f *fakeCluster) Heal() { f.calls = append(f.calls, "heal") }

func (f *fakeCluster) Status() etcdembed.ClusterStatus {
	return etcdembed.ClusterStatus{Leader: 2, Faults: []etcdembed.LinkFault{}}
}

func TestFaultctlAPI(t *testing.T) {
	fc := &fakeCluster{stopped: map[int]bool{}}
	srv := httptest.NewServer(faultctl.NewHandler(fc))
	defer srv.Close()
	tests := []struct {
		method, path string
		code         int
		call         string
		errPart      string
	}{
		{"POST", "/v1/members/2/stop", 200, "stop 2", ""},
		{"POST", "/v1/members/2/stop", 409, "", "stopped"},
		{"POST", "/v1/members/2/start", 200, "start 2", ""},
		{"POST", "/v1/members/4/isolate", 404, "isolate 4", "no such member"},
		{"POST", "/v1/members/x/isolate", 400, "", "bad member"},
		{"POST", "/v1/members/1/isolate", 200, "isolate 1", ""},
		{"POST", "/v1/clients/3/blackhole", 200, "blackhole 3", ""},
		{"POST", "/v1/links/delay?from=1&to=2&ms=150", 200, "delay 1 2 150ms", ""},
		{"POST", "/v1/links/delay?from=1&to=2", 400, "", "bad ms"},
		{"POST", "/v1/links/cut?from=3&to=1", 200, "cut 3 1", ""},
		{"POST", "/v1/links/cut?from=3", 400, "", "bad to"},
		{"POST", "/v1/heal", 200, "heal", ""},
		{"GET", "/v1/status", 200, "", ""},
		{"GET", "/v1/heal", 405, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := len(fc.calls)
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tc.code, resp.StatusCode)
			if tc.call != "" {
				require.Equal(t, tc.call, fc.calls[len(fc.calls)-1])
			} else if tc.code != 409 {
				require.Len(t, fc.calls, before)
			}
			var body map[string]any
			if resp.StatusCode == 405 {
				return
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			if tc.errPart != "" {
				require.Contains(t, strings.ToLower(fmt.Sprint(body["error"])), tc.errPart)
			} else {
				require.EqualValues(t, 2, body["leader"])
			}
		})
	}
}

func TestFaultctlServe(t *testing.T) {
	s, err := faultctl.Serve("127.0.0.1:0", &fakeCluster{stopped: map[int]bool{}})
	require.NoError(t, err)
	resp, err := http.Get(s.URL() + "/v1/status")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, s.Close())
	http.DefaultClient.CloseIdleConnections()
}
