package sweep

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestGridAndTrials(t *testing.T) {
	s := Spec{Experiment: "x", Params: []Param{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}},
		Fixed: map[string]string{"c": "k"}, Seeds: []int64{7, 8}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	g := s.Grid()
	var labels []string
	for _, p := range g {
		labels = append(labels, s.Label(p))
		if p["c"] != "k" {
			t.Errorf("fixed parameter missing from %v", p)
		}
	}
	want := []string{"a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x", "a=2 b=y", "a=2 b=z"}
	if !slices.Equal(labels, want) {
		t.Errorf("grid %v, want %v (first parameter slowest)", labels, want)
	}
	tr := s.Trials()
	if len(tr) != 12 {
		t.Fatalf("%d trials, want 12", len(tr))
	}
	if tr[0].Key() != "a=1 b=x c=k #7" || tr[1].Key() != "a=1 b=x c=k #8" || tr[2].Key() != "a=1 b=y c=k #7" {
		t.Errorf("trials not point by point, seeds inner: %s, %s, %s", tr[0].Key(), tr[1].Key(), tr[2].Key())
	}
	if (Spec{}).Label(Point{}) != "all" {
		t.Error("label of a grid without swept parameters")
	}
}

func TestValidate(t *testing.T) {
	ok := Spec{Experiment: "x", Seeds: []int64{1}}
	cases := []struct {
		name string
		edit func(*Spec)
	}{
		{"no experiment", func(s *Spec) { s.Experiment = "" }},
		{"no seeds", func(s *Spec) { s.Seeds = nil }},
		{"repeated seed", func(s *Spec) { s.Seeds = []int64{1, 1} }},
		{"repeated param", func(s *Spec) { s.Params = []Param{{"a", []string{"1"}}, {"a", []string{"2"}}} }},
		{"no values", func(s *Spec) { s.Params = []Param{{"a", nil}} }},
		{"repeated value", func(s *Spec) { s.Params = []Param{{"a", []string{"1", "1"}}} }},
		{"bad name", func(s *Spec) { s.Params = []Param{{"a b", []string{"1"}}} }},
		{"swept and fixed", func(s *Spec) { s.Params = []Param{{"a", []string{"1"}}}; s.Fixed = map[string]string{"a": "2"} }},
		{"too many", func(s *Spec) {
			v := make([]string, 1001)
			for i := range v {
				v[i] = strings.Repeat("x", i+1)
			}
			s.Params = []Param{{"a", v}, {"b", v}}
		}},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			if err := s.Validate(); !errors.Is(err, ErrSpec) {
				t.Errorf("Validate = %v, want ErrSpec", err)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want []int64
		bad  bool
	}{
		{"1..3", []int64{1, 2, 3}, false},
		{"5", []int64{5}, false},
		{"4,2,9", []int64{4, 2, 9}, false},
		{"3..1", nil, true},
		{"a..b", nil, true},
		{"1,x", nil, true},
		{"1..2000000", nil, true},
		// (moved from internal/cli's TestParseSeeds)
		{"-2..-2", []int64{-2}, false},
		{"", nil, true},
		{"..", nil, true},
		{"1..", nil, true},
		{"..2", nil, true},
		{"1...3", nil, true},
		{"x", nil, true},
	}
	for _, c := range cases {
		got, err := ParseSeeds(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestParseSpec(t *testing.T) {
	in := `# Figure 16, small
experiment election
param timeout 12ms,25ms   # two ranges
param prevote on,off
set delay 7.5ms
seeds 1..3
`
	s, err := ParseSpec(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Experiment != "election" || len(s.Params) != 2 || s.Params[1].Name != "prevote" || s.Fixed["delay"] != "7.5ms" || len(s.Seeds) != 3 {
		t.Errorf("spec %+v", s)
	}
	if len(s.Trials()) != 12 {
		t.Errorf("%d trials, want 12", len(s.Trials()))
	}
	for _, bad := range []string{"experiment\n", "param a\n", "set a\n", "seeds\n", "frobnicate x\n", "experiment x\nseeds 2..1\n", "experiment x\n"} {
		if _, err := ParseSpec(strings.NewReader(bad)); !errors.Is(err, ErrSpec) {
			t.Errorf("ParseSpec(%q) = %v, want ErrSpec", bad, err)
		}
	}
}

// A spec given as flags: values parsed as ParseSpec's directives, seeds
// 1..10 by default, and a *FlagError naming the flag of a bad value.
func TestFlagsSpec(t *testing.T) {
	s, err := Flags{Experiment: "election", Params: []string{"timeout=12ms,25ms"}, Sets: []string{"delay=7.5ms"}}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Experiment: "election", Params: []Param{{Name: "timeout", Values: []string{"12ms", "25ms"}}},
		Fixed: map[string]string{"delay": "7.5ms"}, Seeds: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("spec %+v, want %+v", s, want)
	}

	tests := []struct {
		name  string
		flags Flags
		flag  string
		text  string
	}{
		{name: "param without values", flags: Flags{Experiment: "e", Params: []string{"timeout"}}, flag: "param", text: `param: sweep: invalid spec: parameter "timeout": want name=v1,v2`},
		{name: "set without value", flags: Flags{Experiment: "e", Sets: []string{"delay="}}, flag: "set", text: `set "delay=": want name=value`},
		{name: "set empty", flags: Flags{Experiment: "e", Sets: []string{""}}, flag: "set", text: `set "": want name=value`},
		{name: "seeds backwards", flags: Flags{Experiment: "e", Seeds: "3..1"}, flag: "seeds", text: `seeds: sweep: invalid spec: seeds "3..1": want A..B with A <= B`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.flags.Spec()
			var fe *FlagError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FlagError", err)
			}
			if fe.Flag != tt.flag || fe.Error() != tt.text {
				t.Fatalf("flag %q, text %q; want %q, %q", fe.Flag, fe.Error(), tt.flag, tt.text)
			}
		})
	}
	_, err = Flags{}.Spec()
	var fe *FlagError
	if err == nil || errors.As(err, &fe) {
		t.Fatalf("no experiment: error %v, want Validate's", err)
	}
}
