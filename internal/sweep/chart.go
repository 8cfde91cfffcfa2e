package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coordkit/coordkit/chart"
)

// ErrNotNumeric: a percentile curve against a parameter whose values are
// not numbers or durations.
var ErrNotNumeric = errors.New("sweep: parameter values are not numeric")

// cdfPoints is how many points a CDF line keeps: enough for the shape,
// few enough for the chart's markers to stay readable.
const cdfPoints = 50

// CDFChart draws one cumulative distribution per summary, as the Raft
// paper's Figure 16: x the metric, y the percentage of trials at or below.
func CDFChart(title, xlabel string, sums []Summary) chart.Chart {
	c := chart.Chart{Title: title, XLabel: xlabel, YLabel: "% of trials"}
	for _, s := range sums {
		if s.N == 0 {
			continue
		}
		ser := chart.Series{Name: s.Label}
		for i := 0; i <= cdfPoints; i++ {
			p := float64(i) / cdfPoints
			v := Quantile(s.Values, p)
			if i == 0 {
				v = s.Values[0]
			}
			ser.Points = append(ser.Points, chart.Point{X: v, Y: 100 * p})
		}
		c.Series = append(c.Series, ser)
	}
	return c
}

// Number reads a parameter value as a number: a Go duration in
// milliseconds ("7.5ms" → 7.5), a plain number as it is.
func Number(v string) (float64, bool) {
	if d, err := time.ParseDuration(v); err == nil {
		return float64(d) / float64(time.Millisecond), true
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && !math.IsNaN(f)
}

// PercentileChart draws p50, p90, p99 and max of the summaries against
// the numeric parameter param, one set of lines per combination of the
// other swept parameters.
func PercentileChart(title, ylabel string, s Spec, param string, sums []Summary) (chart.Chart, error) {
	c := chart.Chart{Title: title, XLabel: param, YLabel: ylabel}
	type group struct {
		name   string
		series [4]chart.Series
	}
	var groups []*group
	byName := map[string]*group{}
	for _, sm := range sums {
		x, ok := Number(sm.Point[param])
		if !ok {
			return c, fmt.Errorf("%w: %s=%q", ErrNotNumeric, param, sm.Point[param])
		}
		var rest []string
		for _, p := range s.Params {
			if p.Name != param {
				rest = append(rest, p.Name+"="+sm.Point[p.Name])
			}
		}
		name := strings.Join(rest, " ")
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			for i, q := range []string{"p50", "p90", "p99", "max"} {
				g.series[i].Name = strings.TrimSpace(name + " " + q)
			}
			byName[name] = g
			groups = append(groups, g)
		}
		if sm.N == 0 {
			continue
		}
		for i, v := range []float64{sm.P50, sm.P90, sm.P99, sm.Max} {
			g.series[i].Points = append(g.series[i].Points, chart.Point{X: x, Y: v})
		}
	}
	for _, g := range groups {
		c.Series = append(c.Series, g.series[:]...)
	}
	return c, nil
}

// WriteSVG writes the charts stacked in one SVG image, each under its title.
func WriteSVG(w io.Writer, charts ...chart.Chart) error {
	const width, height, titleH = 720, 320, 24
	total := len(charts) * (height + titleH)
	var b bytes.Buffer
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, total, width, total)
	fmt.Fprintf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, total)
	for i, c := range charts {
		y := i * (height + titleH)
		fmt.Fprintf(&b, "<text x=\"10\" y=\"%d\" font-size=\"14\" font-family=\"sans-serif\" font-weight=\"bold\">%s</text>\n", y+17, escape(c.Title))
		fmt.Fprintf(&b, "<g transform=\"translate(0,%d)\">\n", y+titleH)
		if err := chart.WriteSVG(&b, c); err != nil {
			return err
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
