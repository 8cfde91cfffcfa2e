package sqlbench

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The -w json keys of bench sql (internal/cli's TestBenchSQLJSON checked
// them through a run; TestRunTiny checks the values).
func TestResultJSONKeys(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Result{Benchmark: "sql", Driver: "sqlite", Server: "3.46", Writers: 3, Fence: FenceDo,
		Rows: []Row{{Metric: "distinct_3_p50_ms", Fenced: 2, Unfenced: 1, Unit: "ms"}}})
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	for _, k := range []string{"benchmark", "driver", "server", "writers", "fence", "rows"} {
		require.Contains(t, out, k)
	}
	row := out["rows"].([]any)[0].(map[string]any)
	for _, k := range []string{"metric", "fenced", "unfenced", "unit"} {
		require.Contains(t, row, k)
	}
}
