// Package busbw reads the output of nccl-tests and judges an all_reduce_perf
// run against a declared bus-bandwidth floor.
//
// The benchmark runs over MPI with one rank per GPU, so the log a user hands
// us is whatever the launcher printed: rank 0's results table, every rank's
// NCCL INFO lines, ssh and mpirun chatter, often with per-rank or per-host
// prefixes. Parse keeps what matters (the table, its parameter line and
// trailer, the collective, the ranks and their hosts, the network, plugin and
// NCCL version) and ignores the rest, but it refuses a table row it cannot
// read: a silently skipped row could be the one that carried the measurement
// or the wrong-results count. FormatsHelp lists the formats it reads.
package busbw

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
)

// Log is what Parse recovered from one nccl-tests run.
type Log struct {
	// Rows is the results table in the order printed. With -N (run_cycles)
	// the sweep repeats; CycleStart is the index of the last cycle's first
	// row, and Cycles how many sweeps the table holds.
	Rows       []Row
	CycleStart int
	Cycles     int

	// Table describes the table's layout ("nccl-tests 2.13+ table, 13
	// columns (...)"), "" when the log has no table. Legacy is true for the
	// pre-2.13 layout, whose error column is not a wrong-element count.
	Table  string
	Legacy bool

	// Collective is the benchmark that wrote the log ("all_reduce_perf"), ""
	// when nothing in the log says; CollectiveFrom says what identified it.
	Collective, CollectiveFrom string

	// TestsVersion is X of "# nccl-tests version X ...", "" if absent.
	TestsVersion string

	// NCCLVersion is the NCCL core version the log shows: from "NCCL INFO
	// NCCL version X", the plain "NCCL version X" line, or failing both the
	// nccl-library=N code of nccl-tests' header. NCCLVersionFrom says which.
	NCCLVersion, NCCLVersionFrom string

	// Network is the first network named by an "NCCL INFO Using network X"
	// line, "" when NCCL logged below INFO. Networks holds every distinct one in
	// order of appearance: ranks that disagree mean some pods lack the wiring.
	Network  string
	Networks []string

	// PluginVersion is X of the plugin's "Initializing network FasTrak,
	// version: X" line, "" if absent; PluginVersions every distinct one.
	PluginVersion  string
	PluginVersions []string

	// CUDAWanted are the libcudart sonames a plugin library failed to load
	// ("Error loading libnccl-net_internal.so: libcudart.so.12"), distinct,
	// in order; CUDAWantedAt says on which line each was first seen.
	CUDAWanted   []string
	CUDAWantedAt []int
	// Enforced are the guest config checker's "NCCL/NET (<plugin>) mismatch
	// enforced" warnings, each as "line N: <quoted line>", the first few.
	// EnforcedVars are the variables they name (the first NCCL_ word after
	// "mismatch enforced"), distinct, in order, the first few.
	Enforced     []string
	EnforcedVars []string

	// Ranks and Nodes count the ranks and hosts that took part, 0 when the
	// log does not say; Hosts names them; NodesFrom says what they were
	// counted from.
	Ranks, Nodes int
	Hosts        []string
	NodesFrom    string

	// MinBytes, MaxBytes and the step come from the "# nThread ... minBytes
	// ... maxBytes ... step: N(factor|bytes)" parameter line; 0 when absent.
	// Validation is its "validation: N" (-c), -1 when absent.
	MinBytes, MaxBytes    int64
	StepFactor, StepBytes int64
	Validation            int

	// AvgBusBW is the "# Avg bus bandwidth" trailer (0 when absent or not a
	// finite number). Complete reports that the trailer was printed: nccl-tests
	// prints it once, after the last size, so a run that died mid-sweep lacks it.
	AvgBusBW float64
	Complete bool

	// OutOfBounds is the "# Out of bounds values : N" count (nccl-tests' total
	// of wrong elements), -1 when the line is absent.
	OutOfBounds int64

	// FirstError is the first NCCL WARN, nccl-tests failure or "# error:"
	// line, kept so a failed run's report can say why it stopped.
	FirstError string

	layout        layout
	shapeMismatch string
}

// ErrNoOutput means the input holds nothing nccl-tests prints: it is not an
// nccl-tests log at all (a wrong file, a training log, or a launcher that
// never started the benchmark), as opposed to a run that failed after it
// started.
var ErrNoOutput = errors.New("not an nccl-tests log")

// maxLine bounds one line. A results row is about 130 bytes; longer lines are
// noise (core dumps, base64 blobs) and are skipped rather than buffered whole.
const maxLine = 64 << 10

var (
	paramLine     = regexp.MustCompile(`^nThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)`)
	stepPattern   = regexp.MustCompile(`\bstep:\s*(\d+)\((factor|bytes)\)`)
	validationKey = regexp.MustCompile(`\bvalidation:\s*(\d+)`)
	testsVersion  = regexp.MustCompile(`^nccl-tests version (\S+).*?\bnccl-library=(\d+)`)
	collectiveAt  = regexp.MustCompile(`^Collective test (?:starting|concluded):\s*(\S+)`)
	// "#  Rank  0 Group  0 Pid  1234 on HOST device  0 [..] NAME" (2.13+);
	// "#   Rank  0 Pid  1234 on HOST device  0 [0x04] NAME" (2.0-2.12);
	// "#   Rank  0 on HOST device  0 [0x04] NAME" (1.x).
	rankLine    = regexp.MustCompile(`^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+device\s+\d+`)
	outOfBounds = regexp.MustCompile(`^Out of bounds values\s*:\s*(\S+)`)
	avgBusBW    = regexp.MustCompile(`^Avg bus bandwidth\s*:\s*(\S*)`)

	usingNetwork = regexp.MustCompile(`NCCL INFO Using network (.+)$`)
	pluginInit   = regexp.MustCompile(`Initializing network FasTrak, version: (\S+)`)
	// The facts' symptom of a worker whose CUDA major the plugin does not
	// find: the soname after the library names what the plugin wanted.
	cudaMissing = regexp.MustCompile(`Error loading \S*libnccl-net\S*?: (libcudart\.so\.\d+)`)
	// The guest config checker's warning for a violated enforced value; the
	// plugin is named "shim" from v1.0.16, "uninitialized_shim_v7" before.
	enforcedMismatch = regexp.MustCompile(`NCCL WARN NCCL/NET \([^)]*\) mismatch enforced`)
	// The variable a checker warning names: our reading of the line, which
	// names it after "mismatch enforced" in the form the tests reconstruct.
	ncclVariable = regexp.MustCompile(`\bNCCL_[A-Z0-9_]+\b`)
	// "NCCL INFO NCCL version 2.18.5+cuda12.2" and the plain "NCCL version
	// 2.12.7+cuda11.4" NCCL prints at NCCL_DEBUG=VERSION/WARN.
	ncclVersion = regexp.MustCompile(`(?:^|\s)NCCL version (\d+\.\d+\.\d+[^\s,;]*)`)
	ncclHost    = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] NCCL `)
	commNodes   = regexp.MustCompile(`\bnRanks (\d+) nNodes (\d+)\b`)
	commRanks   = regexp.MustCompile(`\bnranks (\d+)\b`)
)

// maxEnforcedShown bounds the checker warnings a report quotes: every rank
// logs its own, and a few say what is wrong.
const maxEnforcedShown = 3

// maxEnforcedVars bounds the distinct variables named from those warnings.
const maxEnforcedVars = 8

// parser is Parse's state between lines.
type parser struct {
	l                   *Log
	line                int
	haveLayout          bool
	sawParams, sawTable bool
	sawHeaderLine       bool // nccl-tests-only lines: version, collective, trailer with '#'
	announced           string
	names               []string
	nameLine            int
	rankHost            map[int]string
	dupRank             string
	ncclHosts           []string
	commRanks           int
	commNodes           int
	libraryCode         int64
	torch               bool
}

// Parse reads an nccl-tests log. It returns an error when the input cannot be
// read, when a table row is malformed or out of order, when the log holds
// more than one run, and (wrapping ErrNoOutput) when it holds no nccl-tests
// output at all. A run that failed, stopped early or printed an empty table
// parses fine: judging it is Evaluate's job; which collective it measured is
// CheckCollective's.
func Parse(r io.Reader) (*Log, error) {
	p := &parser{l: &Log{OutOfBounds: -1, Validation: -1}, rankHost: map[int]string{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for p.line = 1; ; p.line++ {
		raw, terminated, err := readLine(br)
		if err != nil {
			return nil, fmt.Errorf("reading the log at line %d: %w", p.line, err)
		}
		if raw == nil {
			break
		}
		if err := p.parseLine(string(raw), terminated); err != nil {
			return nil, err
		}
	}
	return p.finish()
}

func (p *parser) parseLine(raw string, terminated bool) error {
	text := strings.TrimSpace(stripPrefixes(raw))
	if text == "" {
		return nil
	}
	// A collector may have stripped the '#' nccl-tests starts its comment
	// lines with; every comment is recognised with or without it.
	hashed := strings.HasPrefix(text, "#")
	body := strings.TrimSpace(strings.TrimPrefix(text, "#"))
	fields := strings.Fields(body)
	switch {
	case len(fields) == 0:
		return nil
	case paramLine.MatchString(body):
		return p.params(body)
	case fields[0] == "size" && slices.Contains(fields, "busbw"):
		if ly, ok := headerLayout(fields); ok {
			if p.sawTable && len(p.l.Rows) > 0 {
				return fmt.Errorf("line %d: a second results-table header after %d rows: the log holds more than one run; capture one run per file", p.line, len(p.l.Rows))
			}
			p.setLayout(ly)
			p.sawTable = true
		}
		return nil
	case testsVersion.MatchString(body):
		m := testsVersion.FindStringSubmatch(body)
		p.l.TestsVersion = m[1]
		if code, err := strconv.ParseInt(m[2], 10, 64); err == nil {
			p.libraryCode = code // an overflowing code stays unknown
		}
		p.sawHeaderLine = true
		return nil
	case collectiveAt.MatchString(body):
		p.announced = strings.TrimSuffix(collectiveAt.FindStringSubmatch(body)[1], "_mpi")
		p.sawHeaderLine = true
		return nil
	case rankLine.MatchString(body):
		m := rankLine.FindStringSubmatch(body)
		p.rank(m[1], m[2])
		return nil
	case outOfBounds.MatchString(body):
		v := outOfBounds.FindStringSubmatch(body)[1]
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil || c < 0 {
			return fmt.Errorf("line %d: the out-of-bounds count %s is not a count", p.line, excerpt(v))
		}
		p.l.OutOfBounds = c
		return nil
	case avgBusBW.MatchString(body):
		// nccl-tests divides by the number of sizes, so a sweep without rows
		// prints nan; the trailer still proves the run ended, so keep Complete
		// and record no average rather than a value JSON cannot carry.
		switch v := avgBusBW.FindStringSubmatch(body)[1]; strings.TrimPrefix(v, "-") {
		case "nan", "":
		default:
			// A value that is no number at all (another tool's "40.6GB/s")
			// stays unknown, as nan does; one that is a number but
			// impossible is an error, never a figure in a report.
			f, err := bandwidth.GBps(v)
			switch {
			case errors.Is(err, bandwidth.ErrImplausible):
				return fmt.Errorf("line %d: the average bus bandwidth %s is %w", p.line, excerpt(v), err)
			case err == nil:
				p.l.AvgBusBW = f
			}
		}
		p.l.Complete = true
		p.sawHeaderLine = p.sawHeaderLine || hashed
		return nil
	case hashed && strings.HasPrefix(body, "error:"):
		p.firstError(text)
		return nil
	case hashed:
		return nil // device list, units, "out-of-place in-place" banner; nccl-tests never prints a row after '#'
	case isRowCandidate(fields):
		return p.row(text, fields, terminated)
	}
	p.noise(text)
	return nil
}

func (p *parser) setLayout(ly layout) {
	p.haveLayout = true
	p.l.layout = ly
	p.l.Table = ly.String()
	p.l.Legacy = ly.legacy
}

// params handles the "# nThread ... minBytes ... maxBytes ..." line.
func (p *parser) params(body string) error {
	if p.sawParams || len(p.l.Rows) > 0 {
		return fmt.Errorf("line %d: a second nccl-tests parameter line: the log holds more than one run (if every process printed its own, nccl-tests was built without MPI=1 and each rank ran alone); capture one run per file", p.line)
	}
	m := paramLine.FindStringSubmatch(body)
	var err error
	if p.l.MinBytes, err = strconv.ParseInt(m[1], 10, 64); err != nil {
		return fmt.Errorf("line %d: minBytes %s: %w", p.line, excerpt(m[1]), err)
	}
	if p.l.MaxBytes, err = strconv.ParseInt(m[2], 10, 64); err != nil {
		return fmt.Errorf("line %d: maxBytes %s: %w", p.line, excerpt(m[2]), err)
	}
	if s := stepPattern.FindStringSubmatch(body); s != nil {
		step, err := strconv.ParseInt(s[1], 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: step %s: %w", p.line, excerpt(s[1]), err)
		}
		if s[2] == "factor" {
			p.l.StepFactor = step
		} else {
			p.l.StepBytes = step
		}
	}
	if v := validationKey.FindStringSubmatch(body); v != nil {
		if n, err := strconv.Atoi(v[1]); err == nil {
			p.l.Validation = n
		}
	}
	p.sawParams = true
	return nil
}

func (p *parser) rank(num, host string) {
	n, err := strconv.Atoi(num)
	if err != nil {
		return // the pattern admits digits only; an overflowing rank is noise
	}
	if prev, ok := p.rankHost[n]; ok && p.dupRank == "" {
		p.dupRank = fmt.Sprintf("line %d: rank %d is listed twice (on %s and on %s): every process ran its own single-rank benchmark, so nccl-tests was built without MPI=1 or launched without mpirun; rebuild it with MPI=1", p.line, n, prev, host)
	}
	p.rankHost[n] = host
}

// row reads a data row. A row-shaped line that does not fit the table is an
// error once the log has shown it is nccl-tests output, and noise before.
func (p *parser) row(text string, fields []string, terminated bool) error {
	if !p.haveLayout {
		ly, ok := inferLayout(fields)
		if !ok {
			if p.sawParams || p.sawTable {
				return fmt.Errorf("line %d: malformed nccl-tests data row %s: %d columns match no nccl-tests table layout", p.line, excerpt(text), len(fields))
			}
			p.noise(text)
			return nil
		}
		p.setLayout(ly)
	}
	r, err := p.l.layout.parseRow(fields)
	if err != nil {
		if !terminated {
			// The last line was cut mid-write (the pod was killed while
			// printing). It carries no usable measurement; dropping it
			// leaves a truncated run, which Evaluate fails as such.
			return nil
		}
		return fmt.Errorf("line %d: malformed nccl-tests data row %s: %w", p.line, excerpt(text), err)
	}
	p.sawTable = true
	rows := p.l.Rows
	if k := len(rows); k > 0 {
		prev := rows[k-1]
		switch {
		case r.Type != prev.Type || r.RedOp != prev.RedOp || r.Root != prev.Root:
			return fmt.Errorf("line %d: the row of size %d is %s %s root %d where the rows before are %s %s root %d: the table holds sweeps of several data types, reductions or roots (-d all, -o all, -r); capture a run of one", p.line, r.Size, r.Type, r.RedOp, r.Root, prev.Type, prev.RedOp, prev.Root)
		case r.Size < prev.Size && r.Size == rows[p.l.CycleStart].Size:
			// -N (run_cycles) repeats the sweep in the same table.
			p.l.CycleStart = k
			p.l.Cycles++
		case r.Size < prev.Size:
			return fmt.Errorf("line %d: size %d does not follow %d: the rows are out of order or the log holds more than one run; capture one run per file", p.line, r.Size, prev.Size)
		}
	} else {
		p.l.Cycles = 1
	}
	p.l.Rows = append(rows, r)
	return nil
}

// noise scans a line outside the table for the facts we report.
func (p *parser) noise(text string) {
	l := p.l
	if m := usingNetwork.FindStringSubmatch(text); m != nil {
		if n := strings.TrimSpace(m[1]); n != "" {
			l.Networks = appendDistinct(l.Networks, n)
			l.Network = l.Networks[0]
		}
	}
	if m := pluginInit.FindStringSubmatch(text); m != nil {
		l.PluginVersions = appendDistinct(l.PluginVersions, strings.TrimRight(m[1], ",;."))
		l.PluginVersion = l.PluginVersions[0]
	}
	if m := cudaMissing.FindStringSubmatch(text); m != nil && !slices.Contains(l.CUDAWanted, m[1]) {
		l.CUDAWanted = append(l.CUDAWanted, m[1])
		l.CUDAWantedAt = append(l.CUDAWantedAt, p.line)
	}
	if loc := enforcedMismatch.FindStringIndex(text); loc != nil {
		if len(l.Enforced) < maxEnforcedShown {
			// From the warning on: the host and rank prefix would use up the
			// quote's bound before the variable it names.
			l.Enforced = append(l.Enforced, fmt.Sprintf("line %d: %s", p.line, excerpt(text[loc[0]:])))
		}
		if v := ncclVariable.FindString(text[loc[1]:]); v != "" && len(l.EnforcedVars) < maxEnforcedVars {
			l.EnforcedVars = appendDistinct(l.EnforcedVars, v)
		}
	}
	if m := ncclVersion.FindStringSubmatch(text); m != nil && l.NCCLVersion == "" {
		l.NCCLVersion = m[1]
		if strings.Contains(text, "NCCL INFO") {
			l.NCCLVersionFrom = "the 'NCCL INFO NCCL version' line"
		} else {
			l.NCCLVersionFrom = "the 'NCCL version' line"
		}
	}
	if m := ncclHost.FindStringSubmatch(text); m != nil {
		p.ncclHosts = appendDistinct(p.ncclHosts, m[1])
	}
	// The patterns admit digits only; a count that overflows stays unknown.
	if m := commNodes.FindStringSubmatch(text); m != nil {
		if r, err := strconv.Atoi(m[1]); err == nil {
			p.commRanks = r
		}
		if n, err := strconv.Atoi(m[2]); err == nil {
			p.commNodes = n
		}
	} else if m := commRanks.FindStringSubmatch(text); m != nil && strings.Contains(text, "NCCL INFO") {
		if r, err := strconv.Atoi(m[1]); err == nil {
			p.commRanks = r
		}
	}
	if !strings.Contains(text, "NCCL INFO") {
		for _, m := range perfName.FindAllString(text, -1) {
			name := strings.TrimSuffix(m, "_mpi")
			if !slices.Contains(p.names, name) && p.nameLine == 0 {
				p.nameLine = p.line
			}
			p.names = appendDistinct(p.names, name)
		}
	}
	if strings.Contains(text, "torch.distributed") || strings.Contains(text, "torch/distributed") || strings.Contains(text, "torchrun") {
		p.torch = true
	}
	if strings.Contains(text, "NCCL WARN") || strings.Contains(text, "Test NCCL failure") || strings.Contains(text, "Test CUDA failure") {
		p.firstError(text)
	}
}

func (p *parser) firstError(text string) {
	if p.l.FirstError != "" {
		return
	}
	const keep = 300
	if r := []rune(text); len(r) > keep {
		text = string(r[:keep]) + "..."
	}
	p.l.FirstError = text
}

// finish checks the log was nccl-tests output and derives what needs every
// line: nodes, ranks, the NCCL version fallback and the collective.
func (p *parser) finish() (*Log, error) {
	l := p.l
	if !p.sawParams && !p.sawTable && !p.sawHeaderLine {
		what := "the input"
		if p.torch {
			what = "the input is a PyTorch (torch.distributed) program's log, which"
		}
		return nil, fmt.Errorf("%w: %s has no '# nThread ... minBytes ... maxBytes' parameter line, no results-table header ('#  size  count  type ... busbw #wrong') and no row of one; pass the output of an nccl-tests benchmark such as all_reduce_perf (for example `kubectl logs` of the benchmark's launcher pod)", ErrNoOutput, what)
	}
	if p.dupRank != "" {
		return nil, errors.New(p.dupRank)
	}
	switch {
	case len(p.rankHost) > 0:
		l.Ranks = len(p.rankHost)
		ranks := make([]int, 0, len(p.rankHost))
		for r := range p.rankHost {
			ranks = append(ranks, r)
		}
		slices.Sort(ranks)
		for _, r := range ranks {
			l.Hosts = appendDistinct(l.Hosts, p.rankHost[r])
		}
		l.Nodes, l.NodesFrom = len(l.Hosts), "the '#  Rank N ... on HOST' device lines"
	case p.commNodes > 0:
		l.Ranks, l.Nodes, l.NodesFrom = p.commRanks, p.commNodes, "NCCL's 'nRanks N nNodes M' init line"
		l.Hosts = p.ncclHosts
	case len(p.ncclHosts) > 1:
		l.Ranks, l.Nodes, l.NodesFrom = p.commRanks, len(p.ncclHosts), "the hosts of the NCCL INFO lines (at least this many)"
		l.Hosts = p.ncclHosts
	}
	if l.NCCLVersion == "" && p.libraryCode > 0 {
		l.NCCLVersion = versionFromCode(p.libraryCode)
		l.NCCLVersionFrom = fmt.Sprintf("nccl-library=%d in the nccl-tests header", p.libraryCode)
	}
	p.identifyCollective()
	return l, nil
}

// versionFromCode renders NCCL_VERSION_CODE: major*10000 + minor*100 + patch
// from 2.9 on, major*1000 + minor*100 + patch before (nccl.h, NCCL_VERSION).
func versionFromCode(code int64) string {
	if code >= 20900 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// readLine returns the next line without its newline, nil at EOF, and whether
// the line was newline-terminated. Lines longer than maxLine are returned
// truncated (they can only be noise) with the remainder discarded.
func readLine(br *bufio.Reader) ([]byte, bool, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out) < maxLine {
			out = append(out, chunk[:min(len(chunk), maxLine-len(out))]...)
		}
		switch {
		case err == nil:
			return trimEOL(out), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(out) == 0 {
				return nil, false, nil
			}
			return trimEOL(out), false, nil
		default:
			return nil, false, err
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if b == nil {
		return []byte{}
	}
	return b
}

func appendDistinct(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
