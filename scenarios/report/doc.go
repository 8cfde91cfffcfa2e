// Package report is the result of one scenario run: the claims it tested
// (what theory predicts, what the run observed, whether the prediction held),
// metrics, tables, a timeline of the cluster and its clients, and series for
// charts; and its three renderings: text, JSON and a self-contained HTML page.
//
// A Report is plain data. Scenarios fill it with the builder methods (Check,
// CheckID, Metric, AddTable, Note) and call Finish; renderers only read it,
// so a report decoded from JSON renders the same as the one that was
// encoded. A Recorder builds the Timeline and, for a scenario that tells a
// story, its Steps (coordctl demo narrates them).
//
// A Claim's Kind is "safety" or "timing" (package scenarios declares them);
// the renderings mark timing claims, which a loaded machine can miss. This
// package does not import package cluster: it renders etcd and process runs
// as well as the lab's, so its operation outcomes are plain strings.
//
// What the renderings guarantee: the text rendering is deterministic for a
// given report (it is golden-tested); the HTML page loads nothing from the
// network, runs no script, and is well-formed XML (XHTML-compatible) so that
// any XML parser can read it. What they do not: the HTML layout is not a
// stable contract; the JSON encoding is (see Report).
package report
