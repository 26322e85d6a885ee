// Package ncclreportcmd implements `tcpxogen nccl-report`: judge a captured
// nccl-tests all_reduce_perf log (for gIB also all_gather_perf) offline
// against a bandwidth floor and the pinned plugin version, and write the
// CTRF report and the busbw chart.
//
// It links the generated constants (the default plugin version), so, like
// rendercmd, it is kept apart from extract.
package ncclreportcmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

// Output file names inside --out: the report package's, which validate
// writes too.
const (
	ReportFile   = report.File
	ChartFile    = report.ChartFile
	EvidenceFile = evidence.BundleFile
)

// DefaultFloor is the declared H100 GKE floor for nccl-all-reduce-bw (GB/s).
const DefaultFloor = "300"

// pinned is what a fabric's run is judged against by default: its declared
// floor and the versions of record from its generated package. How a
// fabric's log reads is busbw's table (busbw.LookupFabric); this one holds
// only what the generated code knows. A fabric without an entry has no
// pinned versions yet and no single declared floor: gIB's are declared per
// machine type and collective in busbw's table (Fabric.DeclaredFloor), so
// it needs --machine-type or --floor.
var pinned = map[string]struct{ floor, plugin, nccl string }{
	"tcpxo": {DefaultFloor, tcpxo.PluginVersion, tcpxo.NCCLVersion},
}

// Commands returns the nccl-report command.
func Commands() cli.Commands {
	return cli.Commands{"nccl-report": {Summary: "judge a captured nccl-tests all_reduce_perf log (--fabric gib: or all_gather_perf) against a busbw floor; write a CTRF report and a chart", Run: run}}
}

func run(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("nccl-report", "nccl-report --log FILE [--fabric tcpxo|gib] [--floor GBPS] [--machine-type T] [--plugin-version V] [--out DIR] [--sign-key KEY.pem]", s)
	flagsUsage := fs.Usage
	fs.Usage = func() {
		flagsUsage()
		fmt.Fprintf(s.Out, "\n%s\nExit status: 0 the run passed; 1 it failed (wrong results, truncated, one node, wrong network or plugin, below the floor); 2 bad usage, or the log is not nccl-tests output or is from a collective other than all_reduce_perf (with --fabric gib: all_gather_perf or all_reduce_perf).\n", busbw.FormatsHelp)
	}
	logPath := fs.String("log", "", "`FILE` holding the nccl-tests all_reduce_perf output (with --fabric gib, all_gather_perf or all_reduce_perf), e.g. kubectl logs of the benchmark launcher (required)")
	fabricFlag := fs.String("fabric", busbw.DefaultFabric, fmt.Sprintf("the fabric the run was to use, one of %s: which network NCCL must report ('Using network FasTrak' for tcpxo, gIB for gib) and what a failure tells you to check", strings.Join(busbw.FabricNames(), ", ")))
	floorFlag := fs.String("floor", DefaultFloor, fmt.Sprintf(`declared busbw floor in GB/s as a recipe writes it: ">= N", "> N" or "N", N a plain decimal up to %d; the run passes at 0.9 × N (with --fabric gib the default is declared per machine type, --machine-type, for all_gather_perf logs; all_reduce_perf logs need --floor)`, bandwidth.MaxGBps))
	machineType := fs.String("machine-type", "", gibMachineTypeHelp())
	plugin := fs.String("plugin-version", tcpxo.PluginVersion, "NCCL plugin version the log's 'Initializing network FasTrak, version:' line must match (a leading v is ignored; --fabric tcpxo only)")
	out := fs.String("out", ".", "directory for "+ReportFile+" and "+ChartFile)
	signKey := fs.String("sign-key", "", "`FILE`: an unencrypted ECDSA P-256 or Ed25519 private key (PEM, as openssl genpkey writes it); also write "+EvidenceFile+", a Sigstore bundle signing the report and the chart, which `tcpxogen verify` checks with the public key alone")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *logPath == "" {
		return cli.BadInput("--log is required: give the file holding the all_reduce_perf output")
	}
	fab, err := busbw.LookupFabric(*fabricFlag)
	if err != nil {
		return cli.BadInput("--fabric: %w", err)
	}
	pins, havePins := pinned[fab.Name]
	if *machineType != "" && !slices.Contains(fab.PublishedMachineTypes(), *machineType) {
		if len(fab.Published) == 0 {
			return cli.BadInput("--machine-type is for --fabric gib, whose floors are declared per machine type; --fabric %s's floor is --floor (default %s)", fab.Name, DefaultFloor)
		}
		return cli.BadInput("--machine-type %s: %s floors are declared for %s", excerpt.Quote(*machineType), fab.Short, strings.Join(fab.PublishedMachineTypes(), " and "))
	}
	declared := !fs.Changed("floor") && *machineType != ""
	if !havePins && !fs.Changed("floor") && !declared {
		return cli.BadInput("--floor or --machine-type is required with --fabric %s: its declared floors are per machine type (--machine-type %s, for all_gather_perf logs); or give the floor your recipe declares, as --floor '>= N' in GB/s", fab.Name, strings.Join(fab.PublishedMachineTypes(), "|"))
	}
	var floor busbw.Floor
	if !declared {
		if floor, err = busbw.ParseFloor(*floorFlag); err != nil {
			return cli.BadInput("--floor: %w", err)
		}
	}
	if !fab.PluginVersionLine {
		if fs.Changed("plugin-version") {
			return cli.BadInput("--plugin-version applies to --fabric tcpxo only: no log line in which the %s plugin states its version is known, so there is nothing to compare it with; drop the flag", fab.Network)
		}
		*plugin = ""
	} else if strings.TrimSpace(*plugin) == "" {
		return cli.BadInput("--plugin-version is empty: give the pinned plugin version (default %s)", tcpxo.PluginVersion)
	}

	// The key is read before the log is judged: an unusable key is bad
	// input, and no report is written without the evidence asked for.
	var key *evidence.PrivateKey
	if *signKey != "" {
		if key, err = ReadSignKey(*signKey); err != nil {
			return err
		}
	}

	l, err := readLog(*logPath, fab)
	if err != nil {
		return err
	}
	var published busbw.Published
	if declared {
		// A log that shows no collective (no rows, no name) failed to run;
		// it is judged against the fabric's first, the published one.
		collective := cmp.Or(l.Collective, fab.Collectives[0])
		var ok bool
		if floor, published, ok = fab.DeclaredFloor(*machineType, collective); !ok {
			return cli.BadInput("--log %s is %s's: %s floors are declared for %s only, the collective whose busbw Google publishes; give --floor for this run", *logPath, collective, fab.Short, fab.Collectives[0])
		}
	}
	v := busbw.EvaluateFabric(l, floor, *plugin, fab)

	// Provenance is left unknown: a captured log does not record which
	// runtime produced it, and a flag would be an unchecked claim.
	ctrf, err := report.CTRF(v, l, report.Context{PluginVersion: *plugin, NCCLVersion: pins.nccl})
	if err != nil {
		return err
	}
	svg, err := report.Chart(l, v)
	if err != nil {
		return err
	}
	reportPath, chartPath := filepath.Join(*out, ReportFile), filepath.Join(*out, ChartFile)
	files := atomicfile.Set{reportPath: ctrf, chartPath: svg}
	evidencePath := ""
	if key != nil {
		bundle, err := evidence.Sign(key, []evidence.File{{Name: ReportFile, Data: ctrf}, {Name: ChartFile, Data: svg}}, report.Evidence(l, v, report.Context{PluginVersion: *plugin, NCCLVersion: pins.nccl}))
		if err != nil {
			return fmt.Errorf("--sign-key %s: %w", *signKey, err)
		}
		evidencePath = filepath.Join(*out, EvidenceFile)
		files[evidencePath] = bundle
	}
	// All files or none: a report next to a stale chart (or a bundle
	// signing an earlier report) would contradict itself.
	if _, err := files.Commit(0o644); err != nil {
		return fmt.Errorf("write the report to %s: %w", *out, err)
	}

	summarize(s.Out, *logPath, l, v, fab, *plugin, pins.nccl, reportPath, chartPath, published)
	if evidencePath != "" {
		fmt.Fprintf(s.Out, "  evidence   %s (signed with the %s key %s; verify with `tcpxogen verify --key PUB.pem %s`)\n", evidencePath, key.Algorithm(), key.Public().Hint(), evidencePath)
	}
	if !v.Pass {
		return fmt.Errorf("the benchmark failed with %d problem(s); see %s", len(v.Problems), reportPath)
	}
	return nil
}

// ReadSignKey reads --sign-key; any problem is bad input (exit 2) naming
// the flag, the file and the fix.
func ReadSignKey(path string) (*evidence.PrivateKey, error) {
	key, err := evidence.LoadPrivateKey("--sign-key", path)
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	return key, nil
}

// readLog parses the log; a file that cannot be read, that is not
// nccl-tests output at all, that has a malformed table or that is from a
// collective other than the ones fab's runs are judged by (all_reduce_perf;
// gIB also all_gather_perf) is bad input (exit 2). A run that failed or
// stopped early is not: Evaluate judges it (exit 1).
func readLog(path string, fab busbw.Fabric) (*busbw.Log, error) {
	f, err := inputfile.Open(path, inputfile.Spec{What: "--log", Max: inputfile.MaxLog})
	if err != nil {
		return nil, cli.BadInput("%w", err)
	}
	defer f.Close()
	l, err := busbw.Parse(f)
	if err != nil {
		return nil, cli.BadInput("--log %s: %w", path, err)
	}
	if err := l.CheckFabricCollective(fab); err != nil {
		return nil, cli.BadInput("--log %s: %w", path, err)
	}
	return l, nil
}

func summarize(w io.Writer, logPath string, l *busbw.Log, v busbw.Verdict, fab busbw.Fabric, plugin, ncclPinned, reportPath, chartPath string, published busbw.Published) {
	verdict := "FAIL"
	if v.Pass {
		verdict = "PASS"
	}
	fmt.Fprintf(w, "nccl-report: %s\n", verdict)
	if fab.Name != busbw.DefaultFabric {
		// The default fabric's summary is as it was before fabrics were named.
		fmt.Fprintf(w, "  fabric     %s (%s)\n", fab.Name, fab.Title)
	}
	fmt.Fprintf(w, "  log        %s (%s)\n", logPath, sweep(l))
	if l.Collective != "" {
		fmt.Fprintf(w, "  benchmark  %s, from %s\n", l.Collective, l.CollectiveFrom)
	} else {
		fmt.Fprintf(w, "  benchmark  not named in the log, and no rows to tell it by\n")
	}
	if v.Rows > 0 {
		fmt.Fprintf(w, "  measured   %s GB/s out-of-place busbw at %s\n", busbw.FormatGBps(v.Measured), busbw.FormatSize(v.Size))
	} else {
		fmt.Fprintf(w, "  measured   nothing\n")
	}
	fmt.Fprintf(w, "  threshold  %s GB/s (%g × declared floor %s GB/s)\n", busbw.FormatGBps(v.Threshold), busbw.PassFraction, v.Floor)
	if published.GBps > 0 {
		fmt.Fprintf(w, "  floor      %g %% of the published %g GB/s (%s, %s, %d nodes, %s; %s): tcpxogen's judgement, not a published rule\n",
			busbw.DeclaredFraction*100, published.GBps, published.MachineType, strings.TrimSuffix(published.Collective, "_perf"), published.Nodes, published.Size, published.Source)
	}
	fmt.Fprintf(w, "  nodes      %s\n", nodes(l))
	fmt.Fprintf(w, "  network    %s\n", orAbsent(strings.Join(l.Networks, ", ")))
	if fab.PluginVersionLine {
		fmt.Fprintf(w, "  plugin     %s (expected %s)\n", orAbsent(strings.Join(l.PluginVersions, ", ")), plugin)
	} else {
		fmt.Fprintf(w, "  plugin     not checked (no %s plugin version line is known)\n", fab.Network)
	}
	fmt.Fprintf(w, "  nccl       %s\n", ncclVersion(l, ncclPinned))
	if len(v.Problems) > 0 {
		fmt.Fprintf(w, "  problems\n")
		for _, p := range v.Problems {
			fmt.Fprintf(w, "    - %s\n", p)
		}
	}
	fmt.Fprintf(w, "  report     %s\n", reportPath)
	fmt.Fprintf(w, "  chart      %s\n", chartPath)
}

// gibMachineTypeHelp is --machine-type's help: the declared floors, each
// with the published figure it comes from.
func gibMachineTypeHelp() string {
	fab, err := busbw.LookupFabric("gib")
	if err != nil {
		return "with --fabric gib: the machine type the run was on"
	}
	var each []string
	for _, p := range fab.Published {
		floor, _, _ := fab.DeclaredFloor(p.MachineType, p.Collective)
		each = append(each, fmt.Sprintf("%s %s GB/s (%g %% of the published %g GB/s)", p.MachineType, floor, busbw.DeclaredFraction*100, p.GBps))
	}
	return fmt.Sprintf("with --fabric gib and no --floor: the machine type the run was on, whose declared floor judges an all_gather_perf log: %s; %d-node all_gather busbw at %s from %s; the %g %% is tcpxogen's judgement",
		strings.Join(each, ", "), fab.Published[0].Nodes, fab.Published[0].Size, `Google's "Run NCCL on custom GKE clusters that use A4 or A3 Ultra"`, busbw.DeclaredFraction*100)
}

func sweep(l *busbw.Log) string {
	n := len(l.Rows)
	if n == 0 {
		return "no data rows"
	}
	state := "complete"
	if !l.Complete {
		state = "no closing trailer"
	}
	return fmt.Sprintf("%d sizes, %s..%s, %s; %s", n, busbw.FormatSize(l.Rows[0].Size), busbw.FormatSize(l.Rows[n-1].Size), state, l.Table)
}

func nodes(l *busbw.Log) string {
	switch {
	case l.Nodes == 0:
		return "not in the log"
	case l.Ranks > 0:
		return fmt.Sprintf("%d ranks on %d node(s): %s (from %s)", l.Ranks, l.Nodes, strings.Join(l.Hosts, ", "), l.NodesFrom)
	}
	return fmt.Sprintf("%d node(s): %s (from %s)", l.Nodes, strings.Join(l.Hosts, ", "), l.NodesFrom)
}

// ncclVersion is what the log shows of NCCL, next to the pinned version
// ("" when the fabric has none pinned yet).
func ncclVersion(l *busbw.Log, pinned string) string {
	pin := " (pinned " + pinned + ")"
	if pinned == "" {
		pin = " (none pinned for this fabric yet)"
	}
	if l.NCCLVersion == "" {
		return "not in the log" + pin
	}
	return fmt.Sprintf("%s, from %s%s", l.NCCLVersion, l.NCCLVersionFrom, pin)
}

func orAbsent(s string) string {
	if s == "" {
		return "not in the log"
	}
	return s
}
