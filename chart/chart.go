package chart

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart is a line chart (Categories empty: X is numeric) or a grouped bar
// chart (Categories set: point j of every series is the bar of category j).
type Chart struct {
	Title      string   `json:"title"`
	XLabel     string   `json:"x_label,omitempty"`
	YLabel     string   `json:"y_label,omitempty"`
	Categories []string `json:"categories,omitempty"`
	Series     []Series `json:"series"`
}

// Series is one named line or set of bars. Dashed marks a model (what
// theory predicts) rather than a measurement.
type Series struct {
	Name   string  `json:"name"`
	Dashed bool    `json:"dashed,omitempty"`
	Points []Point `json:"points"`
}

// Point is one (x, y) value.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// svgWriter writes SVG markup; like html/template's escaping, text goes
// through esc.
type svgWriter struct{ w io.Writer }

func (p *svgWriter) raw(s string)                 { _, _ = io.WriteString(p.w, s) }
func (p *svgWriter) f(format string, args ...any) { _, _ = fmt.Fprintf(p.w, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

var palette = []string{"#1565c0", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00838f", "#6d4c41", "#546e7a"}

// FormatValue prints a number compactly: integers without decimals, others
// with three significant digits after the point at most.
func FormatValue(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// NiceStep returns a round step (1, 2 or 5 times a power of ten) that cuts
// span into about n intervals.
func NiceStep(span float64, n int) float64 {
	if span <= 0 || n <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

type chartFrame struct {
	width, height, left, right, top, bottom int
}

func (c chartFrame) plotW() float64 { return float64(c.width - c.left - c.right) }
func (c chartFrame) plotH() float64 { return float64(c.height - c.top - c.bottom) }

func (p *svgWriter) chartStart(fr chartFrame, c Chart, ymax float64) (y func(float64) float64) {
	p.f("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", fr.width, fr.height, fr.width, fr.height)
	p.f("<title>%s</title>\n", esc(c.Title))
	p.f("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", fr.width, fr.height)
	y = func(v float64) float64 { return float64(fr.top) + fr.plotH()*(1-v/ymax) }
	step := NiceStep(ymax, 5)
	for v := 0.0; v <= ymax*1.0001; v += step {
		yy := y(v)
		p.f("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
			fr.left, yy, fr.width-fr.right, yy, fr.left-4, yy+3, esc(FormatValue(v)))
	}
	p.f("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", fr.left, fr.top, fr.left, fr.height-fr.bottom)
	p.f("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", fr.left, fr.height-fr.bottom, fr.width-fr.right, fr.height-fr.bottom)
	if c.YLabel != "" {
		p.f("<text x=\"14\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">%s</text>\n", fr.top+int(fr.plotH()/2), fr.top+int(fr.plotH()/2), esc(c.YLabel))
	}
	if c.XLabel != "" {
		p.f("<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", fr.left+int(fr.plotW()/2), fr.height-fr.bottom+32, esc(c.XLabel))
	}
	return y
}

func (p *svgWriter) legend(fr chartFrame, series []Series) {
	lx, ly := fr.left+8, fr.top+4
	colors := seriesColors(series)
	for i, s := range series {
		color := colors[i]
		dash := ""
		name := s.Name
		if s.Dashed {
			dash = " stroke-dasharray=\"6,4\""
			if !strings.Contains(name, "model") {
				name += " (model)"
			}
		}
		p.f("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"%s/><text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n",
			lx, ly+i*15+4, lx+18, ly+i*15+4, color, dash, lx+22, ly+i*15+8, esc(name))
	}
}

func (p *svgWriter) lineChart(c Chart) {
	fr := chartFrame{width: 720, height: 320, left: 60, right: 20, top: 16, bottom: 44}
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			xmin, xmax, ymax = math.Min(xmin, pt.X), math.Max(xmax, pt.X), math.Max(ymax, pt.Y)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if xmin > 0 && xmin < (xmax-xmin) {
		xmin = 0
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax = niceCeil(ymax * 1.1)
	y := p.chartStart(fr, c, ymax)
	x := func(v float64) float64 { return float64(fr.left) + fr.plotW()*(v-xmin)/(xmax-xmin) }
	step := NiceStep(xmax-xmin, 8)
	for v := math.Ceil(xmin/step) * step; v <= xmax*1.0001; v += step {
		xx := x(v)
		p.f("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/><text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
			xx, fr.height-fr.bottom, xx, fr.height-fr.bottom+4, xx, fr.height-fr.bottom+16, esc(FormatValue(v)))
	}
	colors := seriesColors(c.Series)
	for i, s := range c.Series {
		color := colors[i]
		pts := make([]string, 0, len(s.Points))
		for _, pt := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt.X), y(pt.Y)))
		}
		dash := ""
		if s.Dashed {
			dash = " stroke-dasharray=\"6,4\""
		}
		if len(pts) > 1 {
			p.f("<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", strings.Join(pts, " "), color, dash)
		}
		for _, pt := range s.Points {
			p.f("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s: %s → %s</title></circle>\n",
				x(pt.X), y(pt.Y), color, esc(s.Name), esc(FormatValue(pt.X)), esc(FormatValue(pt.Y)))
		}
	}
	p.legend(fr, c.Series)
	p.raw("</svg>\n")
}

func (p *svgWriter) barChart(c Chart) {
	fr := chartFrame{width: 720, height: 320, left: 60, right: 20, top: 16, bottom: 44}
	ymax := 0.0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			ymax = math.Max(ymax, pt.Y)
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax = niceCeil(ymax * 1.1)
	y := p.chartStart(fr, c, ymax)
	n := len(c.Categories)
	groupW := fr.plotW() / float64(n)
	ns := max(len(c.Series), 1)
	barW := groupW * 0.8 / float64(ns)
	colors := seriesColors(c.Series)
	for j, cat := range c.Categories {
		gx := float64(fr.left) + groupW*float64(j)
		p.f("<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", gx+groupW/2, fr.height-fr.bottom+14, esc(cat))
		for i, s := range c.Series {
			for _, pt := range s.Points {
				if int(pt.X) != j {
					continue
				}
				bx := gx + groupW*0.1 + barW*float64(i)
				by := y(pt.Y)
				style := ""
				if s.Dashed {
					style = fmt.Sprintf(" fill-opacity=\"0.3\" stroke=\"%s\" stroke-dasharray=\"4,3\"", colors[i])
				}
				p.f("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s><title>%s, %s: %s</title></rect>\n",
					bx, by, math.Max(barW-1, 1), math.Max(float64(fr.height-fr.bottom)-by, 0), colors[i], style, esc(s.Name), esc(cat), esc(FormatValue(pt.Y)))
			}
		}
	}
	p.legend(fr, c.Series)
	p.raw("</svg>\n")
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// seriesColors gives each series a color; a dashed series (a model) that
// follows a solid one (its measurement) shares its color.
func seriesColors(series []Series) []string {
	out := make([]string, len(series))
	k := 0
	for i, s := range series {
		if s.Dashed && i > 0 && !series[i-1].Dashed {
			out[i] = out[i-1]
			continue
		}
		out[i] = palette[k%len(palette)]
		k++
	}
	return out
}

// WriteSVG writes c as one SVG element (what scenarios/report's HTML pages
// embed and coordctl bench scale --svg writes alone): grouped bars when c
// has categories, lines otherwise.
func WriteSVG(w io.Writer, c Chart) error {
	bw := bufio.NewWriter(w)
	p := &svgWriter{w: bw}
	if len(c.Categories) > 0 {
		p.barChart(c)
	} else {
		p.lineChart(c)
	}
	return bw.Flush()
}
