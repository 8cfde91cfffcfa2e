package fencing_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/fencing"
)

// The text forms are what 'coordctl resource' prints without -w json.
func TestWriteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    interface{ WriteText(io.Writer) error }
		want string
	}{
		{"put", fencing.PutResult{Key: "config", Token: 42, Scope: "jobs", Seq: 1, Version: 1},
			"ok key=config seq=1 version=1 token=42 scope=jobs\n"},
		{"get: the value alone, no newline added", fencing.Entry{Key: "k", Value: "two\nlines", Token: 3, Version: 2}, "two\nlines"},
		{"fence", fencing.FenceResult{Scope: "jobs", Token: 57, Floor: 57}, "ok scope=jobs floor=57\n"},
		{"log", fencing.LogResult{Writes: []fencing.Write{
			{Seq: 1, Scope: "jobs", Token: 42, Key: "config", Version: 1, Value: "v1"},
			{Seq: 2, Scope: "jobs", Token: 42, Key: "config", Version: 2, Value: "a \"quoted\"\nvalue"}}, Rejected: 2},
			"seq=1 scope=jobs token=42 key=config version=1 value=\"v1\"\n" +
				"seq=2 scope=jobs token=42 key=config version=2 value=\"a \\\"quoted\\\"\\nvalue\"\n" +
				"writes=2 rejected=2\n"},
		{"empty log", fencing.LogResult{}, "writes=0 rejected=0\n"},
		{"floors in scope order", fencing.FloorsResult{Floors: map[string]fencing.Token{"jobs/y": 1234, "jobs/x": 90}, Highest: 1234, HighestScope: "jobs/y"},
			"scope=jobs/x floor=90\nscope=jobs/y floor=1234\nhighest=1234 scope=jobs/y\n"},
		{"no floors", fencing.FloorsResult{}, "highest=0 scope=\n"},
		{"sound log", fencing.RepairPlan{Path: "/d/resource.log", Size: 100, Keep: 100}, "ok log=/d/resource.log: no damaged record, nothing to drop\n"},
		{"repair plan that needs a bound", fencing.RepairPlan{Path: "/d/resource.log", Size: 300, Keep: 200, NeedsBound: true, HighestKept: 5,
			Dropped: []fencing.DroppedRecord{
				{Offset: 200, Size: 60, Damaged: "checksum mismatch in a full-length record", Type: "fence", Scope: "s", Token: 900},
				{Offset: 260, Size: 40, Trusted: true, Type: "fence", Scope: "t", Token: 950}},
			Refence: []fencing.Admission{{Scope: "t", Token: 950}}},
			"log /d/resource.log: 300 bytes; keeping the first 200, dropping 2 record(s):\n" +
				"  offset=200 size=60 type=fence scope=\"s\" token=900 (damaged: checksum mismatch in a full-length record; untrusted: its scope and token may be anything)\n" +
				"  offset=260 size=40 type=fence scope=\"t\" token=950 (intact, after the damage)\n" +
				"re-fence scope=\"t\" token=950 (floor otherwise: 0), so that it does not go down\n" +
				"needs a bound: no granted token exceeds it, at or above the highest floor kept (5)\n"},
		{"applied repair with a bound", fencing.RepairPlan{Path: "/d/resource.log", Size: 300, Keep: 200, Applied: true, Backup: "/d/resource.log.before-repair",
			NeedsBound: true, Bound: 1200,
			Dropped: []fencing.DroppedRecord{{Offset: 200, Size: 100, Damaged: "bad record header (length unreadable)"}}},
			"log /d/resource.log: 300 bytes; keeping the first 200, dropping 1 record(s):\n" +
				"  offset=200 size=100 type=- scope=\"\" token=0 (damaged: bad record header (length unreadable); untrusted: its scope and token may be anything)\n" +
				"raise the floor of every scope, named in the log or not, to the bound 1200, so that none goes down\n" +
				"repaired; the old log is in /d/resource.log.before-repair\n"},
		{"floors with a floor of every scope", fencing.FloorsResult{Floors: map[string]fencing.Token{"jobs/x": 1300}, All: 1200, Highest: 1300, HighestScope: "jobs/x"},
			"scope=jobs/x floor=1300\nevery-scope floor=1200\nhighest=1300 scope=jobs/x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, tc.v.WriteText(&b))
			require.Equal(t, tc.want, b.String())
		})
	}
}
