package validate

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

// LogFile is the launcher's log as captured, kept next to the report so the
// verdict can be rechecked (tcpxogen nccl-report --log) and argued with.
const LogFile = "nccl-launcher.log"

// maxLog bounds how much launcher log is read. A full 1K..16G sweep with NCCL
// INFO logging from 16 ranks is a few MiB.
const maxLog = 64 << 20

// outcome is one judged run: the parsed log, the verdict, and the files that
// record it.
type outcome struct {
	Log     *busbw.Log
	Verdict busbw.Verdict
	raw     []byte
	ctrf    []byte
	chart   []byte
	// bundle is the signed evidence (--sign-key), written with the rest.
	bundle []byte
}

// judging is how the run's launcher log is judged: the floor, the
// collective the benchmark ran, and the fabric's log rules (busbw's table:
// the network NCCL must name, the plugin version line where the fabric
// has one).
type judging struct {
	floor busbw.Floor
	// collective is busbw's name of the benchmark's collective (its perf
	// binary: all_gather_perf).
	collective    string
	fabric        busbw.Fabric
	pluginVersion string
}

// judging is the run's: its fabric's log rules, the recipe's floor, the
// benchmark's collective and the pinned plugin version.
func (v *validation) judging() (judging, error) {
	fab, err := busbw.LookupFabric(v.fab.Name)
	if err != nil {
		// busbw's tests hold its table to the fabric registry.
		return judging{}, fmt.Errorf("judging a --fabric %s log, which is a bug in tcpxogen: %w", v.fab.Name, err)
	}
	return judging{floor: v.floor, collective: benchmark.Perf(v.params.Collective), fabric: fab, pluginVersion: v.facts.PluginVersion}, nil
}

// judge evaluates a launcher log the way `tcpxogen nccl-report --fabric F`
// does, but with the provenance only a live run knows (rc: runtime source,
// trainer lifecycle action, versions). A log that is not nccl-tests output
// of the benchmark's collective at all is an error; a run that failed,
// stopped early or was too slow is a verdict.
func judge(r io.Reader, j judging, rc report.Context) (*outcome, error) {
	perf := j.collective
	raw, err := io.ReadAll(io.LimitReader(r, maxLog+1))
	if err != nil {
		return nil, fmt.Errorf("reading the launcher log: %w", err)
	}
	if len(raw) > maxLog {
		return nil, fmt.Errorf("the launcher log is larger than %d MiB; %s prints a few MiB at most, so the launcher ran something else: check the benchmark image", maxLog>>20, perf)
	}
	o := &outcome{raw: raw}
	o.Log, err = busbw.Parse(bytes.NewReader(raw))
	if err != nil {
		return o, fmt.Errorf("the launcher log holds no readable %s run: %w", perf, err)
	}
	if err := o.Log.CheckCollective(j.collective); err != nil {
		return o, fmt.Errorf("the launcher log is not an %s run: %w", perf, err)
	}
	o.Verdict = busbw.EvaluateFabric(o.Log, j.floor, j.pluginVersion, j.fabric)
	if o.ctrf, err = report.CTRF(o.Verdict, o.Log, rc); err != nil {
		return o, fmt.Errorf("writing the CTRF report: %w", err)
	}
	if o.chart, err = report.Chart(o.Log, o.Verdict); err != nil {
		return o, fmt.Errorf("drawing the busbw chart: %w", err)
	}
	return o, nil
}

// write saves the outcome into dir, all files or none, so a report never sits
// next to the chart or log of another run. An outcome whose log could not be
// parsed saves the log alone.
func (o *outcome) write(dir string) ([]string, error) {
	set := atomicfile.Set{filepath.Join(dir, LogFile): o.raw}
	if o.ctrf != nil && o.chart != nil {
		set[filepath.Join(dir, report.File)] = o.ctrf
		set[filepath.Join(dir, report.ChartFile)] = o.chart
		if o.bundle != nil {
			set[filepath.Join(dir, evidence.BundleFile)] = o.bundle
		}
	}
	if _, err := set.Commit(0o644); err != nil {
		return nil, fmt.Errorf("writing the results to %s: %w", dir, err)
	}
	paths := make([]string, 0, len(set))
	for _, name := range []string{report.File, report.ChartFile, LogFile, evidence.BundleFile} {
		if _, ok := set[filepath.Join(dir, name)]; ok {
			paths = append(paths, filepath.Join(dir, name))
		}
	}
	return paths, nil
}

// summary is the result as printed.
func (o *outcome) summary(w io.Writer, paths []string) {
	v := o.Verdict
	verdict := "FAIL"
	if v.Pass {
		verdict = "PASS"
	}
	fmt.Fprintf(w, "\nresult: %s\n", verdict)
	if v.Size > 0 {
		fmt.Fprintf(w, "  measured   %s GB/s out-of-place busbw at %s\n", busbw.FormatGBps(v.Measured), busbw.FormatSize(v.Size))
	} else {
		fmt.Fprintln(w, "  measured   nothing")
	}
	fmt.Fprintf(w, "  threshold  %s GB/s (%g × declared floor %s GB/s)\n", busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  problem    %s\n", p)
	}
	for _, p := range paths {
		fmt.Fprintf(w, "  wrote      %s\n", p)
	}
}
