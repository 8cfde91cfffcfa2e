package labbench

import "time"

// WithModeDefaults returns o with the defaults of its mode for each option
// not given explicitly (given reports it by its flag's name: nodes,
// writers, duration; nil: none was): Model runs nodes 3, 5 and 7; UI runs
// 5 nodes, 16 writers, 6s in total.
func (o Options) WithModeDefaults(given func(flag string) bool) Options {
	if given == nil {
		given = func(string) bool { return false }
	}
	if o.Model && !given("nodes") {
		o.Nodes = []int{3, 5, 7}
	}
	if o.UI {
		if !given("nodes") {
			o.Nodes = []int{5}
		}
		if !given("writers") {
			o.Writers = []int{16}
		}
		if !given("duration") {
			o.Duration = 6 * time.Second
		}
	}
	return o
}
