package busbw

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
	excerptpkg "github.com/tcpxogen/tcpxogen/internal/excerpt"
)

// Floor is a declared bandwidth constraint, e.g. the recipe's
// `nccl-all-reduce-bw >= 300`.
type Floor struct {
	Op   string // ">=", the only operator a bandwidth floor has
	GBps float64
}

// ParseFloor reads a floor in the recipe's grammar (bandwidth.Floor):
// ">= 300", "> 300" or "300" GB/s, a plain decimal of at most
// bandwidth.MaxGBps. Both comparisons judge the same way, at >= 0.9 × the
// floor: the allowance for run-to-run variance dwarfs their difference.
func ParseFloor(s string) (Floor, error) {
	_, v, err := bandwidth.Floor(s)
	if err != nil {
		return Floor{}, fmt.Errorf("floor %s: %w (for example \">= 300\")", excerpt(s), err)
	}
	return Floor{Op: ">=", GBps: v}, nil
}

// PassFraction is the share of the declared floor a measurement must reach:
// a floor is a fleet-wide expectation and single runs vary by a few percent.
const PassFraction = 0.9

// Threshold is the value a measurement must reach to pass, 0.9 × GBps. It is
// computed as GBps*9/10 rather than GBps*0.9 because 0.9 has no exact binary
// form: for about one whole-number floor in five (13, 21, 26, ...) the
// product lands an ulp away from the decimal threshold, which a measurement
// printed as exactly that decimal would then miss.
func (f Floor) Threshold() float64 { return f.GBps * 9 / 10 }

func (f Floor) String() string { return f.Op + " " + FormatGBps(f.GBps) }

func (f Floor) valid() bool {
	return f.Op == ">=" && f.GBps > 0 && !math.IsNaN(f.GBps) && !math.IsInf(f.GBps, 0)
}

// Status is a check's outcome, named as CTRF names test statuses.
type Status string

const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped" // the log cannot answer the question; not a failure
)

// Check names, one per rule Evaluate applies.
const (
	CheckComplete = "run-complete"
	CheckCorrect  = "results-correct"
	CheckNodes    = "inter-node"
	CheckNetwork  = "network"
	CheckCUDA     = "plugin-cuda"
	CheckGuest    = "guest-config"
	CheckPlugin   = "plugin-version"
	CheckFloor    = "bandwidth-floor"
)

// Check is the outcome of one rule; Message is a sentence either way.
type Check struct {
	Name    string
	Status  Status
	Message string
}

// Verdict is the judgement of one run.
type Verdict struct {
	// Fabric is the name of the fabric the run was judged for (see
	// LookupFabric); "" in a verdict built by hand means DefaultFabric.
	Fabric    string
	Measured  float64 // out-of-place busbw (GB/s) at the largest size
	Size      int64   // that size in bytes; 0 when the table is empty
	Rows      int     // sizes in the table; 0 when nothing was measured
	Floor     Floor
	Threshold float64 // PassFraction × Floor.GBps
	Pass      bool
	Problems  []string // the messages of the failed checks, in Checks order
	Checks    []Check
}

// Evaluate applies every rule to l. The order of Checks (and so of Problems)
// is fixed and puts causes before symptoms: an incomplete run, corrupted
// results, a run that never left one node, the wrong network and the wrong
// plugin each explain a number better than the number itself.
//
// The floor is an inter-node fabric floor: a run whose ranks all sat on one
// node measured NVLink, not the fabric, and cannot pass it. Which collective
// the log is from is CheckCollective's question, asked before this one.
func Evaluate(l *Log, f Floor, pluginVersion string) Verdict {
	return EvaluateFabric(l, f, pluginVersion, fabrics[0])
}

// EvaluateFabric is Evaluate for a run of fabric fab (LookupFabric): the
// network NCCL must have used, the plugin and guest config lines that apply,
// and what the messages tell the reader to check are fab's; every other rule
// is the same for every fabric. pluginVersion is ignored for a fabric whose
// plugin logs no known version line.
func EvaluateFabric(l *Log, f Floor, pluginVersion string, fab Fabric) Verdict {
	if l == nil {
		l = &Log{OutOfBounds: -1, Validation: -1}
	}
	v := Verdict{Fabric: fab.Name, Floor: f, Threshold: f.Threshold()}
	if n := len(l.Rows); n > 0 {
		v.Measured, v.Size, v.Rows = l.Rows[n-1].OOP.BusBW, l.Rows[n-1].Size, n
	}
	v.Checks = []Check{
		checkComplete(l),
		checkCorrect(l),
		checkNodes(l),
		checkCUDA(l, fab),
		checkGuest(l, fab),
		checkNetwork(l, fab),
		checkPlugin(l, pluginVersion, fab),
		checkFloor(l, v),
	}
	for _, c := range v.Checks {
		if c.Status == Failed {
			v.Problems = append(v.Problems, c.Message)
		}
	}
	v.Pass = len(v.Problems) == 0
	return v
}

func checkComplete(l *Log) Check {
	c := Check{Name: CheckComplete, Status: Failed}
	why := ""
	if l.FirstError != "" {
		why = fmt.Sprintf(" The first error in the log: %s.", excerptpkg.QuoteN(l.FirstError, 200))
	}
	n := len(l.Rows)
	switch {
	case n == 0:
		c.Message = "The results table is empty: nccl-tests printed no measurement, so the run failed before its first message size." + why + " Fix the cause and rerun the benchmark."
	case !l.Complete:
		target := "its largest size"
		if l.MaxBytes > 0 {
			target = FormatSize(l.MaxBytes)
		}
		c.Message = fmt.Sprintf("The run is truncated: the last size measured is %s and the closing '# Avg bus bandwidth' line is missing, so the sweep to %s did not finish.%s Rerun the benchmark and capture its whole output.", FormatSize(l.Rows[n-1].Size), target, why)
	case l.MaxBytes == 0:
		c.Message = fmt.Sprintf("The log lacks the nccl-tests parameter line ('# nThread ... maxBytes ...'), so nothing shows the sweep that ended at %s was the one asked for; capture the complete output, from its first line.", FormatSize(l.Rows[n-1].Size))
	case stepsShort(l):
		c.Message = fmt.Sprintf("The run is truncated: its sizes stop at %s but it was asked to reach maxBytes %s; capture one complete run.", FormatSize(l.Rows[n-1].Size), FormatSize(l.MaxBytes))
	default:
		c.Status = Passed
		last := l.Rows[max(0, min(l.CycleStart, n-1)):]
		c.Message = fmt.Sprintf("The sweep is complete: %d sizes from %s to %s.", len(last), FormatSize(last[0].Size), FormatSize(last[len(last)-1].Size))
		if l.Cycles > 1 {
			c.Message += fmt.Sprintf(" The table holds %d cycles (-N); the last is judged and every cycle is checked for wrong results.", l.Cycles)
		}
	}
	return c
}

// stepsShort reports whether one more step would still have fit under
// maxBytes, i.e. rows are missing at the top. nccl-tests loops
// `for size = min; size <= max; size *= factor` (or += bytes), so the last
// size is the largest step not above maxBytes, not necessarily maxBytes.
func stepsShort(l *Log) bool {
	last := l.Rows[len(l.Rows)-1].Size
	switch {
	case l.StepFactor > 1:
		return last <= l.MaxBytes/l.StepFactor
	case l.StepBytes > 0:
		return last <= l.MaxBytes-l.StepBytes
	default:
		return last < l.MaxBytes
	}
}

func checkCorrect(l *Log) Check {
	c := Check{Name: CheckCorrect}
	if len(l.Rows) == 0 {
		c.Status, c.Message = Skipped, "No rows to check for wrong results."
		return c
	}
	if l.Legacy {
		return checkCorrectLegacy(l)
	}
	var bad []string
	checked := false
	for _, r := range l.Rows {
		if r.OOP.Checked || r.IP.Checked {
			checked = true
		}
		var parts []string
		if r.OOP.Wrong > 0 {
			parts = append(parts, FormatCount(r.OOP.Wrong)+" out-of-place")
		}
		if r.IP.Wrong > 0 {
			parts = append(parts, FormatCount(r.IP.Wrong)+" in-place")
		}
		if parts != nil {
			bad = append(bad, fmt.Sprintf("%s (%s)", FormatSize(r.Size), strings.Join(parts, ", ")))
		}
	}
	switch {
	case bad != nil:
		c.Status = Failed
		c.Message = fmt.Sprintf("nccl-tests found wrong results (#wrong > 0) at %s: the reductions were corrupted on the data path (GPU, NIC, plugin or daemon), so no bandwidth from this run counts; investigate the nodes and rerun.", strings.Join(bad, "; "))
	case l.OutOfBounds > 0:
		c.Status = Failed
		c.Message = fmt.Sprintf("nccl-tests reported %d out-of-bounds (wrong) values although no row shows them: rows are missing from the log or the results were corrupted; rerun and capture the whole output.", l.OutOfBounds)
	case !checked:
		c.Status = Skipped
		c.Message = "Result validation was disabled (-c 0): #wrong is N/A at every size, so correctness is unchecked."
	default:
		c.Status = Passed
		c.Message = fmt.Sprintf("No wrong results: #wrong is 0 at all %d sizes.", len(l.Rows))
	}
	return c
}

// checkCorrectLegacy judges a pre-2.13 table, whose per-size "error" column is
// the largest deviation from the expected value: floating-point sums deviate
// a little at every size, so only nccl-tests' own out-of-bounds count says
// whether a deviation was too large.
func checkCorrectLegacy(l *Log) Check {
	c := Check{Name: CheckCorrect}
	checked := slices.ContainsFunc(l.Rows, func(r Row) bool { return r.OOP.Checked || r.IP.Checked })
	switch {
	case l.OutOfBounds > 0:
		c.Status = Failed
		c.Message = fmt.Sprintf("nccl-tests counted %d out-of-bounds values (results beyond its tolerance for the data type): the reductions were corrupted on the data path, so no bandwidth from this run counts; investigate the nodes and rerun.", l.OutOfBounds)
	case !checked:
		c.Status = Skipped
		c.Message = "Result validation was disabled (-c 0): the error column is N/A at every size, so correctness is unchecked."
	case l.OutOfBounds == 0:
		c.Status = Passed
		c.Message = fmt.Sprintf("nccl-tests counted 0 out-of-bounds values; this release's error column is the largest deviation per size (at most %g), within its tolerance.", maxError(l))
	default:
		c.Status = Skipped
		c.Message = "This nccl-tests release prints the largest deviation per size, not a count, and the log lacks its '# Out of bounds values' line, so correctness is unchecked."
	}
	return c
}

func maxError(l *Log) float64 {
	m := 0.0
	for _, r := range l.Rows {
		m = max(m, r.OOP.MaxError, r.IP.MaxError)
	}
	return m
}

// checkNodes refuses to let a single-node run stand for the fabric: with all
// ranks on one node NCCL moves everything over NVLink or PCIe, and busbw
// measures those.
func checkNodes(l *Log) Check {
	c := Check{Name: CheckNodes}
	ranks := ""
	if l.Ranks > 0 {
		ranks = fmt.Sprintf("%d ranks", l.Ranks)
	}
	switch {
	case l.Nodes == 0:
		c.Status = Skipped
		c.Message = "The log does not show how many nodes took part (no '#  Rank N ... on HOST' device lines and no NCCL 'nNodes' line), so nothing shows the traffic crossed the fabric; capture the output from its first line."
	case l.Nodes == 1:
		c.Status = Failed
		on := ""
		if len(l.Hosts) == 1 {
			on = " (" + l.Hosts[0] + ")"
		}
		switch l.Ranks {
		case 0:
			ranks = "every rank ran"
		case 1:
			ranks = "its only rank ran" // and one rank's busbw is 0 by definition
		default:
			ranks = "all " + ranks + " ran"
		}
		c.Message = fmt.Sprintf("The run had one node: %s on one host%s, per %s, so its traffic stayed on NVLink/PCIe inside the node and says nothing about the inter-node fabric the floor is for; run the benchmark across at least two nodes.", ranks, on, l.NodesFrom)
	default:
		c.Status = Passed
		if ranks != "" {
			ranks += " on "
		}
		c.Message = fmt.Sprintf("The run spanned %s%d nodes (%s), per %s.", ranks, l.Nodes, strings.Join(l.Hosts, ", "), l.NodesFrom)
		if len(l.Hosts) == 0 {
			c.Message = fmt.Sprintf("The run spanned %s%d nodes, per %s.", ranks, l.Nodes, l.NodesFrom)
		}
	}
	return c
}

// checkCUDA fails a run whose plugin could not load the CUDA runtime it
// needs: NCCL then runs without the fabric's plugin. The soname says which major the
// plugin wanted (facts, round 3, "CUDA coupling": "Error loading
// libnccl-net_internal.so: libcudart.so.12 ... the soname names what the
// plugin wanted").
func checkCUDA(l *Log, fab Fabric) Check {
	c := Check{Name: CheckCUDA}
	if len(l.CUDAWanted) == 0 {
		c.Status, c.Message = Passed, "No plugin library failed to load libcudart ('Error loading libnccl-net...: libcudart.so.N')."
		return c
	}
	var majors []string
	for _, so := range l.CUDAWanted {
		majors = append(majors, strings.TrimPrefix(so, "libcudart.so."))
	}
	c.Status = Failed
	c.Message = fmt.Sprintf("Line %d: the installer's net plugin could not load %s, so NCCL ran without %s: the worker image's CUDA major must be %s "+
		"(the plugin finds libcudart in the workload image); use a CUDA %s worker image, or declare its major in bom/bom.yaml images.worker.cudaMajor and run make bom-check.",
		l.CUDAWantedAt[0], strings.Join(l.CUDAWanted, " and "), fab.Network, strings.Join(majors, " or "), majors[0])
	return c
}

// checkGuest fails a run in which the installer's guest config checker
// found an enforced value violated (facts, round 3, "Log strings": "NCCL
// WARN NCCL/NET (shim) mismatch enforced"): the plugin aborts or hangs such
// a workload, and any number it printed is not the fabric's. gIB's checker
// is the same shim; that it words the line the same is our belief (see
// fabrics).
func checkGuest(l *Log, fab Fabric) Check {
	c := Check{Name: CheckGuest}
	if len(l.Enforced) == 0 {
		c.Status, c.Message = Passed, "The guest config checker reported no violated enforced value ('NCCL/NET (shim) mismatch enforced')."
		if fab.CheckerWording != "" {
			c.Message = fmt.Sprintf("The guest config checker reported no violated enforced value (no 'NCCL/NET (shim) mismatch enforced' line: %s).", fab.CheckerWording)
		}
		return c
	}
	c.Status = Failed
	variable := "the variable"
	if fab.NameEnforced {
		switch n := len(l.EnforcedVars); {
		case n == 0:
			variable = "the variable the line names (it names no NCCL_ variable tcpxogen recognises)"
		case n == 1:
			variable = l.EnforcedVars[0]
			c.Message = fmt.Sprintf("%s aborted the run on enforced variable %s (%s)", fab.Checker, variable, strings.Join(l.Enforced, "; "))
		default:
			variable = strings.Join(l.EnforcedVars, ", ")
			c.Message = fmt.Sprintf("%s aborted the run on enforced variables %s (%s)", fab.Checker, variable, strings.Join(l.Enforced, "; "))
		}
	}
	if c.Message == "" {
		c.Message = fmt.Sprintf("%s found an enforced value violated (%s)", fab.Checker, strings.Join(l.Enforced, "; "))
	}
	c.Message += fmt.Sprintf(": the pods' NCCL env breaks the guest config; set %s to the value the guest config enforces (%s).", variable, fab.GuestFix)
	return c
}

// FasTrak is the network name the GPUDirect-TCPXO plugin registers with NCCL.
const FasTrak = "FasTrak"

// checkNetwork judges the network NCCL says it used ("NCCL INFO Using
// network X", NCCL's src/init.cc): the fabric's own passes, anything else
// (NCCL's built-in IB or Socket, another plugin) means the fabric's plugin
// did not carry the traffic.
func checkNetwork(l *Log, fab Fabric) Check {
	c := Check{Name: CheckNetwork}
	if l.Nodes == 1 {
		c.Status = Skipped
		c.Message = "With every rank on one node no network carried traffic, so the network check does not apply."
		if len(l.Networks) > 0 {
			c.Message = fmt.Sprintf("With every rank on one node the network NCCL chose (%s) carried no traffic: no %s fallback, and no evidence about %s either.", strings.Join(l.Networks, ", "), fab.Fallbacks, fab.Short)
		}
		return c
	}
	if len(l.Networks) == 0 {
		if fab.RequireNetwork && len(l.Rows) == 0 {
			c.Status = Skipped
			c.Message = "The log names no network ('NCCL INFO Using network') and nothing was measured, so no traffic's network is left to check."
			return c
		}
		if fab.RequireNetwork {
			c.Status = Failed
			c.Message = fmt.Sprintf("The log does not say which network NCCL used (no 'NCCL INFO Using network' line; NCCL logs it only at NCCL_DEBUG=INFO), so nothing proves %s carried the traffic rather than a fallback to %s; set NCCL_DEBUG=INFO and rerun the benchmark.", fab.Network, fab.Fallbacks)
			return c
		}
		c.Status = Skipped
		c.Message = "The log does not say which network NCCL used (it logs 'Using network' only at NCCL_DEBUG=INFO); set NCCL_DEBUG=INFO to record it."
		return c
	}
	var other []string
	own := false
	for _, n := range l.Networks {
		if n == fab.Network {
			own = true
		} else {
			other = append(other, n)
		}
	}
	if other == nil {
		c.Status, c.Message = Passed, fmt.Sprintf("NCCL used %s (%s) for inter-node traffic.", fab.Network, fab.Title)
		return c
	}
	c.Status = Failed
	some := ""
	if own {
		some = fmt.Sprintf(" on some ranks (%s on others)", fab.Network)
	}
	switch {
	case len(other) == 1 && other[0] == "Socket" && l.Nodes == 0:
		c.Message = fmt.Sprintf("NCCL used Socket%s: if the run spanned nodes (the log does not show how many took part), inter-node traffic went over %s; %s.", some, fab.TCP, fab.Fix)
	case len(other) == 1 && other[0] == "Socket":
		c.Message = fmt.Sprintf("NCCL used Socket%s: inter-node traffic between the %d nodes went over %s; %s.", some, l.Nodes, fab.TCP, fab.Fix)
	default:
		c.Message = fmt.Sprintf("NCCL used %s%s, not %s: %s; %s.", strings.Join(other, " and "), some, fab.Network, fab.NotUsed, fab.Fix)
	}
	return c
}

func checkPlugin(l *Log, want string, fab Fabric) Check {
	c := Check{Name: CheckPlugin}
	if !fab.PluginVersionLine {
		c.Status = Skipped
		c.Message = fmt.Sprintf("No log line in which the %s plugin states its version is known (none is published), so the plugin version is unchecked.", fab.Network)
		return c
	}
	if len(l.PluginVersions) == 0 {
		c.Status = Skipped
		c.Message = "The log carries no 'Initializing network FasTrak, version:' line (NCCL logged below INFO, or the plugin never loaded), so the plugin version is unchecked."
		return c
	}
	got := strings.Join(l.PluginVersions, ", ")
	if strings.TrimSpace(want) == "" {
		c.Status = Failed
		c.Message = fmt.Sprintf("The log reports FasTrak plugin %s but no expected plugin version was given; pass the BOM's plugin version.", got)
		return c
	}
	for _, v := range l.PluginVersions {
		if normalizeVersion(v) != normalizeVersion(want) {
			c.Status = Failed
			c.Message = fmt.Sprintf("The pods loaded FasTrak plugin %s but the BOM pins %s: the nodes run a different NCCL plugin installer than the one tcpxogen pinned; deploy the pinned installer, or pin the deployed one in bom/bom.yaml and regenerate.", got, want)
			return c
		}
	}
	c.Status = Passed
	c.Message = fmt.Sprintf("The pods loaded FasTrak plugin %s, the version the BOM pins (%s).", got, want)
	return c
}

// normalizeVersion drops one leading "v": installer tags are "v1.0.15", the
// plugin prints "1.0.15". Nothing else is forgiven.
func normalizeVersion(s string) string {
	return strings.TrimPrefix(strings.TrimSpace(s), "v")
}

// tolerance absorbs float rounding between a threshold and a measurement
// printed to two decimals; it is far below any meaningful bandwidth step.
const tolerance = 1e-9

func checkFloor(l *Log, v Verdict) Check {
	c := Check{Name: CheckFloor}
	switch {
	case !v.Floor.valid():
		c.Status = Failed
		c.Message = "No valid bandwidth floor was declared (it needs the >= operator and a positive GB/s value); declare one such as \">= 300\"."
		return c
	case len(l.Rows) == 0:
		c.Status, c.Message = Skipped, "Nothing was measured, so there is no bandwidth to compare with the floor."
		return c
	}
	across := ""
	switch {
	case l.Nodes > 1 && l.Ranks > 0:
		across = fmt.Sprintf(" across %d nodes (%d ranks)", l.Nodes, l.Ranks)
	case l.Nodes > 1:
		across = fmt.Sprintf(" across %d nodes", l.Nodes)
	case l.Nodes == 1:
		across = " on one node"
	}
	where := fmt.Sprintf("Out-of-place busbw at %s%s is %s GB/s", FormatSize(v.Size), across, FormatGBps(v.Measured))
	if !l.Complete || (l.MaxBytes > 0 && stepsShort(l)) {
		// Say so: a partial sweep's top size is not the size the floor is for.
		where = fmt.Sprintf("Out-of-place busbw at %s%s, the largest size this incomplete run reached, is %s GB/s", FormatSize(v.Size), across, FormatGBps(v.Measured))
	}
	against := fmt.Sprintf("the pass threshold %s GB/s (%g × the declared floor %s GB/s)", FormatGBps(v.Threshold), PassFraction, v.Floor)
	if v.Measured >= v.Threshold-tolerance {
		c.Status = Passed
		c.Message = fmt.Sprintf("%s, at or above %s.", where, against)
	} else {
		c.Status = Failed
		c.Message = fmt.Sprintf("%s, below %s.", where, against)
	}
	return c
}

// FormatSize renders a byte count the way nccl-tests' -b/-e flags take it:
// 1K, 512K, 16G; sizes that are not a whole number of a unit stay in bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// FormatCount renders a wrong-element count as nccl-tests prints it (%g: six
// significant digits, so a million reads 1.04858e+06).
func FormatCount(n int64) string {
	return strconv.FormatFloat(float64(n), 'g', 6, 64)
}

// FormatGBps renders a bandwidth with at most two decimals and no trailing
// zeros: 270, 299.7, 343.3.
func FormatGBps(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
