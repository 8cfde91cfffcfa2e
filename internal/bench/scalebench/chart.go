package scalebench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/coordkit/coordkit/chart"
)

// ShapeStrings returns the shapes as ParseShape reads them ("1x500").
func ShapeStrings(ss []Shape) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// Merge returns r with b's rows and notes appended (a note already in r is
// not repeated), Fsync true only if both ran with fsync, and b's targets:
// each replaces r's of the same name unless b did not measure it (NaN),
// and a new one is appended. The zero Result merged with b is b. Neither r
// nor b is modified.
func (r Result) Merge(b Result) Result {
	if r.Benchmark == "" {
		return b
	}
	r.Rows = append(slices.Clone(r.Rows), b.Rows...)
	r.Notes = slices.Clone(r.Notes)
	for _, n := range b.Notes {
		if !slices.Contains(r.Notes, n) {
			r.Notes = append(r.Notes, n)
		}
	}
	r.Fsync = r.Fsync && b.Fsync
	r.Targets = slices.Clone(r.Targets)
	for _, t := range b.Targets {
		i := slices.IndexFunc(r.Targets, func(x Target) bool { return x.Name == t.Name })
		switch {
		case i < 0:
			r.Targets = append(r.Targets, t)
		case !math.IsNaN(float64(t.Measured)):
			r.Targets[i] = t
		}
	}
	return r
}

// Charts turns the result's rows into bar charts, one per curve that has
// rows (handoff p50 by W, acquisitions/s by L, failover max by shape, CPU
// per keepalive by idle sessions N):
// each point of the curve a category, one series per implementation and
// cluster size with a measured value.
func (r Result) Charts() []chart.Chart {
	type spec struct {
		curve, metric, title, ylabel string
	}
	specs := []spec{
		{CurveQueue, "handoff_p50_ms", "Queue depth: handoff p50 by waiters W", "ms"},
		{CurveLocks, "acquisitions_per_s", "Many locks: acquisitions/s by distinct locks L", "acquisitions/s"},
		{CurveCandidates, "failover_max_ms", "Many candidates: failover after the leader's crash, max (TTL " + r.ttl() + ")", "ms"},
		{CurveSessions, "cpu_us_per_keepalive", "Idle sessions on one client: process CPU per keepalive, shared streams vs KeepAliveOnce", "us"},
	}
	var out []chart.Chart
	for _, sp := range specs {
		var rows []Row
		for _, row := range r.Rows {
			if row.Curve == sp.curve && row.Metric == sp.metric {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		var cats []string
		for _, row := range rows {
			if !slices.Contains(cats, row.Point) {
				cats = append(cats, row.Point)
			}
		}
		var members []int
		for _, row := range rows {
			if !slices.Contains(members, row.Members) {
				members = append(members, row.Members)
			}
		}
		c := chart.Chart{Title: sp.title, YLabel: sp.ylabel, Categories: cats}
		for _, m := range members {
			for impl, name := range []string{"coordkit", "etcd concurrency", "KeepAliveOnce"} {
				s := chart.Series{Name: fmt.Sprintf("%s, %d member", name, m)}
				if m > 1 {
					s.Name += "s"
				}
				for _, row := range rows {
					v := float64(row.Coordkit)
					switch {
					case impl == 1:
						v = float64(row.EtcdConcurrency)
					case impl == 2 && row.KeepAliveOnce != nil:
						v = float64(*row.KeepAliveOnce)
					case impl == 2:
						v = math.NaN()
					}
					if row.Members == m && !math.IsNaN(v) {
						s.Points = append(s.Points, chart.Point{X: float64(slices.Index(cats, row.Point)), Y: v})
					}
				}
				if len(s.Points) > 0 {
					c.Series = append(c.Series, s)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// ttl is the candidates' session TTL, read back from the failover target
// (TTL + 1s), 2s when there is none.
func (r Result) ttl() string {
	for _, t := range r.Targets {
		if v := float64(t.Target); t.Unit == "ms" && v > 1000 {
			return (time.Duration(v)*time.Millisecond - time.Second).String()
		}
	}
	return "2s"
}

// WriteSVG writes r's charts stacked in one SVG image, each under its
// title. A result without a curve to draw gives ErrNoCurve.
func WriteSVG(w io.Writer, r Result) error {
	charts := r.Charts()
	if len(charts) == 0 {
		return ErrNoCurve
	}
	const width, height, titleH = 720, 320, 24
	total := len(charts) * (height + titleH)
	fmt.Fprintf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, total, width, total)
	fmt.Fprintf(w, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, total)
	for i, c := range charts {
		y := i * (height + titleH)
		var title bytes.Buffer
		_ = xmlEscape(&title, c.Title)
		fmt.Fprintf(w, "<text x=\"10\" y=\"%d\" font-size=\"14\" font-family=\"sans-serif\" font-weight=\"bold\">%s</text>\n", y+17, title.String())
		fmt.Fprintf(w, "<g transform=\"translate(0,%d)\">\n", y+titleH)
		if err := chart.WriteSVG(w, c); err != nil {
			return err
		}
		fmt.Fprintln(w, "</g>")
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}

func xmlEscape(w io.Writer, s string) error {
	for _, r := range s {
		var err error
		switch r {
		case '<':
			_, err = io.WriteString(w, "&lt;")
		case '>':
			_, err = io.WriteString(w, "&gt;")
		case '&':
			_, err = io.WriteString(w, "&amp;")
		default:
			_, err = io.WriteString(w, string(r))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
