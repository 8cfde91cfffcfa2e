package electcmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/childproc"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil"
	"github.com/coordkit/coordkit/internal/cmd/cmdutil/hold"
)

func TestElectOptionsValidate(t *testing.T) {
	valid := electOptions{Name: "svc", TTL: 5 * time.Second, KillGrace: childproc.DefaultKillGrace}
	cases := []struct {
		name string
		edit func(*electOptions)
		want string // "" for valid
	}{
		{"valid", func(*electOptions) {}, ""},
		{"valid candidate with command and policy", func(o *electOptions) {
			o.ID, o.Command, o.Coord = "n1", []string{"true"}, hold.CoordFlags{Policy: "priority", Priority: 3}
		}, ""},
		{"valid observer", func(o *electOptions) { o.Observe = true }, ""},
		{"short ttl", func(o *electOptions) { o.TTL = 500 * time.Millisecond }, "invalid --ttl"},
		{"ttl checked before name", func(o *electOptions) { o.TTL, o.Name = 0, "" }, "invalid --ttl"},
		{"empty name", func(o *electOptions) { o.Name = " " }, "elect needs a non-empty NAME"},
		{"proposal and id", func(o *electOptions) { o.Proposal, o.ID = "p", "x" }, "give either PROPOSAL or --id, not both"},
		{"observe with id", func(o *electOptions) { o.Observe, o.ID = true, "x" }, "--observe campaigns for nothing: it takes no PROPOSAL or --id"},
		{"observe with command", func(o *electOptions) { o.Observe, o.Command = true, []string{"true"} }, "--observe campaigns for nothing: it runs no command"},
		{"zero kill grace", func(o *electOptions) { o.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
		{"candidates with observe", func(o *electOptions) { o.Candidates, o.Observe = true, true }, "--candidates lists the queue"},
		{"candidates with policy", func(o *electOptions) { o.Candidates, o.Coord.Policy = true, "priority" }, "not with --candidates or --observe"},
		{"observe with label", func(o *electOptions) { o.Observe, o.Coord.Labels = true, []string{"a=b"} }, "not with --candidates or --observe"},
		{"bad policy", func(o *electOptions) { o.Coord.Policy = "random" }, "invalid --policy"},
		{"bad label", func(o *electOptions) { o.Coord.Labels = []string{"zone"} }, "invalid --label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.edit(&o)
			err := o.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, errors.As(err, new(*cmdutil.UsageError)), "%v is not a usage error", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestElectOptionsValue(t *testing.T) {
	require.Equal(t, "p", electOptions{Proposal: "p"}.Value())
	require.Equal(t, "x", electOptions{ID: "x"}.Value())
	require.Equal(t, "", electOptions{ID: "x", Observe: true}.Value(), "an observer campaigns for nothing")
	require.Equal(t, "", electOptions{Candidates: true}.Value())
	require.NotEmpty(t, electOptions{}.Value(), "the default is hostname-pid")
}

// (Was election.TestDefaultValueIsHostnamePID.)
func TestDefaultValueIsHostnamePID(t *testing.T) {
	v := defaultValue()
	if !strings.HasSuffix(v, fmt.Sprintf("-%d", os.Getpid())) {
		t.Fatalf("defaultValue() = %q, want a -pid suffix", v)
	}
	if host, err := os.Hostname(); err == nil && host != "" && v != fmt.Sprintf("%s-%d", host, os.Getpid()) {
		t.Fatalf("defaultValue() = %q, want %s-%d", v, host, os.Getpid())
	}
}
