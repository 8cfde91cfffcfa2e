package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coordkit/coordkit/chart"
	"github.com/coordkit/coordkit/cluster"
	"github.com/coordkit/coordkit/scenarios/report"
)

// The claims of the scenarios in this file: declared in Scenario.Claims, checked by ID.
const (
	claimLoseBigSiteStops       ClaimID = "lose-big-site-stops"
	claimLoseSmallSiteGoesOn    ClaimID = "lose-small-site-goes-on"
	claimWitnessSurvivesAnySite ClaimID = "witness-survives-any-site"
)

func twoDC() Scenario {
	return Scenario{
		Name:    "two-dc",
		Summary: "3 nodes over 2 sites (2+1): losing the 2-node site stops writes. With a witness in a third site (2+2+1 of 5), losing any one site does not.",
		Claims: []Claim{
			{ID: claimLoseBigSiteStops, Kind: Safety, Text: "3 nodes over 2 sites (2+1): losing the site with 2 nodes stops writes"},
			{ID: claimLoseSmallSiteGoesOn, Kind: Safety, Text: "3 nodes over 2 sites (2+1): losing the site with 1 node does not"},
			{ID: claimWitnessSurvivesAnySite, Kind: Safety, Text: "5 nodes over 3 sites (2+2+1, a witness in the third): losing any one site does not stop writes"},
		},
		Run: runTwoDC,
	}
}

// siteLayout names sites and their nodes.
type siteLayout struct {
	names []string
	nodes [][]cluster.NodeID
	short string // "2+1"
}

func (l siteLayout) size() int {
	n := 0
	for _, s := range l.nodes {
		n += len(s)
	}
	return n
}

func (l siteLayout) String() string {
	var parts []string
	for i, s := range l.nodes {
		parts = append(parts, fmt.Sprintf("%s %v", l.names[i], s))
	}
	return strings.Join(parts, ", ")
}

// interSite is the one-way delay between sites; within a site links are fast.
const interSite = 5 * time.Millisecond

type siteLoss struct {
	wrote bool
	took  time.Duration
	err   error
	left  int
	// leaderLost: the leader was in the lost site, so the survivors had to
	// elect one first.
	leaderLost bool
}

// loseSite starts the layout, crashes every node of site lose, and tries to
// write through the survivors for up to budget.
func loseSite(ctx context.Context, env Env, l siteLayout, lose int, budget time.Duration) (siteLoss, error) {
	cfg := labConfig(env, l.size())
	cfg.SampleInterval = 0
	c, err := startLab(ctx, env, cfg)
	if err != nil {
		return siteLoss{}, err
	}
	defer c.Close()
	site := map[cluster.NodeID]int{}
	for si, s := range l.nodes {
		for _, id := range s {
			site[id] = si
		}
	}
	for a := range site {
		for b := range site {
			if a != b && site[a] != site[b] {
				if err := c.SetDelay(a, b, interSite, 0); err != nil {
					return siteLoss{}, err
				}
			}
		}
	}
	leader, err := waitLeader(ctx, c, 5*time.Second)
	if err != nil {
		return siteLoss{}, err
	}
	for _, id := range l.nodes[lose] {
		if err := c.Crash(id); err != nil {
			return siteLoss{}, err
		}
	}
	res := siteLoss{left: l.size() - len(l.nodes[lose]), leaderLost: site[leader] == lose}
	cl := c.NewClient(0)
	start := time.Now()
	for time.Since(start) < budget {
		_, res.err = cl.Put(ctx, "k", "after losing "+l.names[lose])
		if res.err == nil {
			res.wrote = true
			break
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	res.took = time.Since(start)
	return res, nil
}

func runTwoDC(ctx context.Context, env Env) (*report.Report, error) {
	rep := report.New("two-dc", "")
	budget := 2500 * time.Millisecond
	twoSites := siteLayout{names: []string{"site A", "site B"}, nodes: [][]cluster.NodeID{{1, 2}, {3}}, short: "2+1"}
	threeSites := siteLayout{names: []string{"site A", "site B", "witness site"}, nodes: [][]cluster.NodeID{{1, 2}, {3, 4}, {5}}, short: "2+2+1"}
	tbl := report.Table{Title: "Losing one site", Columns: []string{"layout", "site lost", "leader there", "nodes left", "quorum", "writes", "first write after"}}
	ch := chart.Chart{Title: "Nodes left after losing one site, against the quorum", YLabel: "nodes",
		Series: []chart.Series{{Name: "nodes left"}, {Name: "quorum", Dashed: true}}}
	row := func(l siteLayout, lose int, r siteLoss) {
		j := float64(len(ch.Categories))
		ch.Categories = append(ch.Categories, fmt.Sprintf("%s, %s lost", l.short, strings.TrimPrefix(l.names[lose], "site ")))
		ch.Series[0].Points = append(ch.Series[0].Points, chart.Point{X: j, Y: float64(r.left)})
		ch.Series[1].Points = append(ch.Series[1].Points, chart.Point{X: j, Y: float64(l.size()/2 + 1)})
		w := "continue"
		if !r.wrote {
			w = "stop: " + shortErr(r.err)
		}
		after := fmtMs(r.took)
		if !r.wrote {
			after = "none in " + r.took.Round(time.Millisecond).String()
		}
		tbl.Rows = append(tbl.Rows, []string{l.String(), l.names[lose], yesNo(r.leaderLost), fmt.Sprintf("%d of %d", r.left, l.size()), fmt.Sprint(l.size()/2 + 1), w, after})
	}

	env.Progressf("two-dc: 3 nodes over 2 sites, losing the site with 2")
	bigLost, err := loseSite(ctx, env, twoSites, 0, budget)
	if err != nil {
		return nil, err
	}
	row(twoSites, 0, bigLost)
	env.Progressf("two-dc: 3 nodes over 2 sites, losing the site with 1")
	smallLost, err := loseSite(ctx, env, twoSites, 1, budget)
	if err != nil {
		return nil, err
	}
	row(twoSites, 1, smallLost)
	check(rep, claimLoseBigSiteStops, "1 of 3 left, quorum 2: no write for as long as we try ("+budget.String()+")",
		fmt.Sprintf("writes %s after %s", stopped(bigLost), bigLost.took.Round(time.Millisecond)),
		!bigLost.wrote)
	check(rep, claimLoseSmallSiteGoesOn, "2 of 3 left, quorum 2: writes go on",
		fmt.Sprintf("writes %s, first one %s after the loss", stopped(smallLost), fmtMs(smallLost.took)),
		smallLost.wrote)

	var survived []string
	all := true
	for si := range threeSites.nodes {
		env.Progressf("two-dc: 5 nodes over 3 sites, losing %s", threeSites.names[si])
		r, err := loseSite(ctx, env, threeSites, si, budget)
		if err != nil {
			return nil, err
		}
		row(threeSites, si, r)
		how := "leader elsewhere"
		if r.leaderLost {
			how = "leader was there: new election"
		}
		survived = append(survived, fmt.Sprintf("%s: writes %s (%s, %s)", threeSites.names[si], stopped(r), how, fmtMs(r.took)))
		rep.Metric("witness_layout_write_after_losing_"+strings.ReplaceAll(threeSites.names[si], " ", "_")+"_ms", cluster.Ms(r.took), "ms")
		all = all && r.wrote
	}
	check(rep, claimWitnessSurvivesAnySite, "at least 3 of 5 left whichever site is lost: writes go on, after an election if the leader was there",
		strings.Join(survived, "; "),
		all)
	rep.AddTable(tbl)
	rep.AddChart(ch)
	rep.Note("Two sites cannot both survive the loss of either: one of them holds a majority, and losing it stops everything. The witness can be a small machine: it only needs to vote and keep the log.")
	rep.Note("Sites are %s apart one way; within a site links are fast.", interSite)
	return rep, nil
}

func stopped(r siteLoss) string {
	if r.wrote {
		return "continue"
	}
	return "stop (" + shortErr(r.err) + ")"
}
