package sidecar

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coordkit/coordkit/internal/childproc"
)

func TestElectFlagsValidate(t *testing.T) {
	valid := ElectFlags{Name: "svc", TTL: 5 * time.Second, KillGrace: childproc.DefaultKillGrace}
	cases := []struct {
		name string
		edit func(*ElectFlags)
		want string // "" for valid
	}{
		{"valid", func(*ElectFlags) {}, ""},
		{"valid candidate with command and policy", func(o *ElectFlags) {
			o.ID, o.Command, o.Coord = "n1", []string{"true"}, CoordFlags{Policy: "priority", Priority: 3}
		}, ""},
		{"valid observer", func(o *ElectFlags) { o.Observe = true }, ""},
		{"short ttl", func(o *ElectFlags) { o.TTL = 500 * time.Millisecond }, "invalid --ttl"},
		{"ttl checked before name", func(o *ElectFlags) { o.TTL, o.Name = 0, "" }, "invalid --ttl"},
		{"empty name", func(o *ElectFlags) { o.Name = " " }, "elect needs a non-empty NAME"},
		{"proposal and id", func(o *ElectFlags) { o.Proposal, o.ID = "p", "x" }, "give either PROPOSAL or --id, not both"},
		{"observe with id", func(o *ElectFlags) { o.Observe, o.ID = true, "x" }, "--observe campaigns for nothing: it takes no PROPOSAL or --id"},
		{"observe with command", func(o *ElectFlags) { o.Observe, o.Command = true, []string{"true"} }, "--observe campaigns for nothing: it runs no command"},
		{"zero kill grace", func(o *ElectFlags) { o.KillGrace = 0 }, "invalid --kill-grace 0s: must be positive"},
		{"candidates with observe", func(o *ElectFlags) { o.Candidates, o.Observe = true, true }, "--candidates lists the queue"},
		{"candidates with policy", func(o *ElectFlags) { o.Candidates, o.Coord.Policy = true, "priority" }, "not with --candidates or --observe"},
		{"observe with label", func(o *ElectFlags) { o.Observe, o.Coord.Labels = true, []string{"a=b"} }, "not with --candidates or --observe"},
		{"bad policy", func(o *ElectFlags) { o.Coord.Policy = "random" }, "invalid --policy"},
		{"bad label", func(o *ElectFlags) { o.Coord.Labels = []string{"zone"} }, "invalid --label"},
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
			require.True(t, errors.Is(err, ErrUsage), "%v does not match ErrUsage", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestElectFlagsValue(t *testing.T) {
	require.Equal(t, "p", ElectFlags{Proposal: "p"}.Value())
	require.Equal(t, "x", ElectFlags{ID: "x"}.Value())
	require.Equal(t, "", ElectFlags{ID: "x", Observe: true}.Value(), "an observer campaigns for nothing")
	require.Equal(t, "", ElectFlags{Candidates: true}.Value())
	require.NotEmpty(t, ElectFlags{}.Value(), "the default is hostname-pid")
}

// (Was election.TestDefaultValueIsHostnamePID.)
func TestDefaultValueIsHostnamePID(t *testing.T) {
	v := DefaultValue()
	if !strings.HasSuffix(v, fmt.Sprintf("-%d", os.Getpid())) {
		t.Fatalf("DefaultValue() = %q, want a -pid suffix", v)
	}
	if host, err := os.Hostname(); err == nil && host != "" && v != fmt.Sprintf("%s-%d", host, os.Getpid()) {
		t.Fatalf("DefaultValue() = %q, want %s-%d", v, host, os.Getpid())
	}
}
