package lockbench

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/bench"
)

// A tiny run against the coordination API from Python processes: the
// column and rows are there, positive; not performance. (The crash
// handoff needs a coordctl binary for coordkit's holder: not run here.)
func TestRunAgainstAPI(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the api_python column runs clients/python")
	}
	o := tiny()
	o.Against, o.Python = []string{AgainstAPI}, py
	res, err := Run(context.Background(), o)
	require.NoError(t, err)
	require.True(t, res.API)
	for _, r := range res.Rows {
		require.NotNil(t, r.APIPython, r.Metric)
		if r.Unit == "requests" {
			require.True(t, math.IsNaN(*r.APIPython), "the agent's requests are not the client's")
			continue
		}
		require.Positive(t, *r.APIPython, r.Metric)
	}
	tab := res.Table()
	require.Equal(t, []string{"coordkit", "etcd_concurrency", "api_python"}, tab.Columns)
	var out bytes.Buffer
	require.NoError(t, bench.WriteTable(&out, tab))
	require.Contains(t, out.String(), "coordkit better than api_python by")
}
