package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/coordkit/coordkit/internal/bench"
	"github.com/coordkit/coordkit/internal/bench/electbench"
	"github.com/coordkit/coordkit/scenarios/report"
)

// bench elect --rolling: coordinated election measured with real sidecar
// processes (electbench.RunRolling).

type benchRollingFlags struct {
	rolling, preemptRounds int
	html                   string
}

func addRollingFlags(cmd *cobra.Command) *benchRollingFlags {
	fl := &benchRollingFlags{}
	cmd.Flags().IntVar(&fl.rolling, "rolling", 0, "measure a rolling upgrade of N sidecar processes instead (first-come against newest-version with a resign-to-best preStop)")
	cmd.Flags().IntVar(&fl.preemptRounds, "preempt-rounds", 20, "with --rolling: preemptions timed")
	cmd.Flags().StringVar(&fl.html, "html", "", "with --rolling: also write the timelines and figures as an HTML page to FILE")
	return fl
}

// rollingOutput is the table, then the timelines (simple output); the
// JSON form is the result itself.
type rollingOutput struct {
	res electbench.RollingResult
}

func (o rollingOutput) MarshalJSON() ([]byte, error) { return json.Marshal(o.res) }

func (o rollingOutput) WriteSimple(w io.Writer) error {
	if err := bench.WriteTable(w, o.res.Table()); err != nil {
		return err
	}
	return o.res.WriteTimelines(w)
}

func runBenchElectRolling(ctx context.Context, f *factory, fl *benchRollingFlags) error {
	p, err := f.Printer()
	if err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench elect --rolling: the sidecars run this binary: %w", err)
	}
	opts := electbench.RollingOptions{Replicas: fl.rolling, PreemptRounds: fl.preemptRounds, Binary: bin, Progress: f.IO.ErrOut}
	res, err := electbench.RunRolling(ctx, opts)
	if err != nil {
		return benchError(ctx, "elect", electbench.ErrOptions, err)
	}
	if fl.html != "" {
		if err := writeRollingHTML(fl.html, res); err != nil {
			return err
		}
	}
	return p.Print(rollingOutput{res})
}

func writeRollingHTML(path string, res electbench.RollingResult) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(fh, "coordctl bench elect --rolling", res.Reports()); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
