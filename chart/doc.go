// Package chart draws the line and grouped-bar charts of coordkit's reports
// as self-contained SVG: the scenarios' HTML pages (scenarios/report) embed
// them, and coordctl bench scale --svg writes them alone. It holds the
// chart model (Chart, Series, Point, whose JSON form is part of a report's)
// and the number formatting the charts and the text reports share
// (FormatValue, NiceStep).
//
// It is pure: it imports nothing from this module and does no I/O beyond
// the io.Writer it is given. It promises a well-formed SVG element (every
// element closed, attributes quoted, text escaped), not a particular
// layout: sizes, colours and tick positions may change.
package chart
