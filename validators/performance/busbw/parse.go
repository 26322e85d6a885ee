// Package busbw reads the output of nccl-tests' all_reduce_perf and judges it
// against a declared bus-bandwidth floor.
//
// The benchmark runs over MPI with one rank per GPU, so the log a user hands
// us is whatever the launcher pod printed: rank 0's results table, every
// rank's NCCL INFO lines, ssh and mpirun chatter, often with per-rank or
// per-host prefixes. Parse keeps what matters (the table, its parameter line
// and trailer, the network and plugin NCCL chose) and ignores the rest, but it
// refuses a table row it cannot read: a silently skipped row could be the one
// that carried the measurement or the wrong-results count.
package busbw

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Row is one message size of the results table.
type Row struct {
	Size, Count int64
	Type, RedOp string
	Root        int
	OOP, IP     Result // out-of-place, in-place
}

// Result is one half (out-of-place or in-place) of a table row.
type Result struct {
	TimeUS, AlgBW, BusBW float64
	Wrong                int64 // -1 when N/A (validation disabled with -c 0)
}

// Log is what Parse recovered from one all_reduce_perf run.
type Log struct {
	Rows []Row

	// Network is the first network named by an "NCCL INFO Using network X"
	// line, "" when NCCL logged below INFO. Networks holds every distinct one in
	// order of appearance: ranks that disagree mean some pods lack the wiring.
	Network  string
	Networks []string

	// PluginVersion is X of the plugin's "Initializing network FasTrak,
	// version: X" line, "" if absent; PluginVersions every distinct one.
	PluginVersion  string
	PluginVersions []string

	// NCCLVersion is from "NCCL INFO NCCL version X" (e.g. 2.28.7+cuda12.8).
	NCCLVersion string

	// MinBytes, MaxBytes and the step come from the "# nThread ... minBytes
	// ... maxBytes ... step: N(factor|bytes)" parameter line; 0 when absent.
	MinBytes, MaxBytes    int64
	StepFactor, StepBytes int64

	// AvgBusBW is the "# Avg bus bandwidth" trailer (0 when absent or not a
	// finite number). Complete reports that the trailer was printed: nccl-tests
	// prints it once, after the last size, so a run that died mid-sweep lacks it.
	AvgBusBW float64
	Complete bool

	// OutOfBounds is the "# Out of bounds values : N" count (nccl-tests' total
	// of wrong elements), -1 when the line is absent.
	OutOfBounds int64

	// FirstError is the first NCCL WARN or nccl-tests failure line, kept so a
	// failed run's report can say why it stopped.
	FirstError string
}

// ErrNoOutput means the input holds nothing nccl-tests prints: it is not an
// all_reduce_perf log at all (a wrong file, or a launcher that never started
// the benchmark), as opposed to a run that failed after it started.
var ErrNoOutput = errors.New("no nccl-tests output")

// maxLine bounds one line. A results row is about 130 bytes; longer lines are
// noise (core dumps, base64 blobs) and are skipped rather than buffered whole.
const maxLine = 64 << 10

var (
	// Prefixes launchers and log collectors put in front of a program's lines.
	mpiTagPrefix    = regexp.MustCompile(`^\[\d+,\d+\]<(?:stdout|stderr)>:`)                   // mpirun --tag-output
	bracketPrefix   = regexp.MustCompile(`^\[[^\]]*\]\s?`)                                     // kubectl logs --prefix, [host:pid] of OpenMPI
	timestampPrefix = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})\s`) // kubectl logs --timestamps
	// "host: text" (pdsh, mpirun --output ... and friends). NCCL's own
	// "host:pid:tid [dev] NCCL ..." has no space after the first colon and is
	// deliberately left alone.
	hostPrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*:\s+`)

	paramLine    = regexp.MustCompile(`\bminBytes\s+(\d+)\s+maxBytes\s+(\d+)`)
	stepPattern  = regexp.MustCompile(`\bstep:\s*(\d+)\((factor|bytes)\)`)
	usingNetwork = regexp.MustCompile(`NCCL INFO Using network (\S+)`)
	pluginInit   = regexp.MustCompile(`Initializing network FasTrak, version: (\S+)`)
	ncclVersion  = regexp.MustCompile(`NCCL INFO NCCL version (\S+)`)
)

// Parse reads an all_reduce_perf log. It returns an error when the input
// cannot be read, when a table row is malformed or out of order, when the
// log holds more than one run, and (wrapping ErrNoOutput) when it holds no
// nccl-tests output at all. A run that failed, stopped early or printed an
// empty table parses fine: judging it is Evaluate's job.
func Parse(r io.Reader) (*Log, error) {
	l := &Log{OutOfBounds: -1}
	var sawParams, sawColumns bool
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		raw, terminated, err := readLine(br)
		if err != nil {
			return nil, fmt.Errorf("read nccl-tests log at line %d: %w", n, err)
		}
		if raw == nil {
			break
		}
		line := stripPrefixes(string(raw))
		text := strings.TrimSpace(line)
		switch {
		case text == "":
		case strings.HasPrefix(text, "#"):
			if err := l.comment(text, n, &sawParams, &sawColumns); err != nil {
				return nil, err
			}
		case isRowCandidate(text):
			row, err := parseRow(text)
			if err != nil {
				if !terminated {
					// The last line was cut mid-write (the pod was killed while
					// printing). It carries no usable measurement; dropping it
					// leaves a truncated run, which Evaluate fails as such.
					continue
				}
				return nil, fmt.Errorf("line %d: malformed nccl-tests data row %q: %w; the table must have 13 columns (size count type redop root, then time algbw busbw #wrong out-of-place and in-place)", n, text, err)
			}
			if k := len(l.Rows); k > 0 && row.Size <= l.Rows[k-1].Size {
				return nil, fmt.Errorf("line %d: size %d does not follow %d: the rows are out of order or the log holds more than one run; capture one all_reduce_perf run per file", n, row.Size, l.Rows[k-1].Size)
			}
			l.Rows = append(l.Rows, row)
		default:
			l.noise(text)
		}
	}
	if !sawParams && !sawColumns && len(l.Rows) == 0 && !l.Complete {
		return nil, fmt.Errorf("%w: no '# nThread ... maxBytes' parameter line, column header, data row or '# Avg bus bandwidth' trailer; pass the all_reduce_perf output (for example `kubectl logs` of the benchmark's launcher pod)", ErrNoOutput)
	}
	return l, nil
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

// stripPrefixes removes launcher and collector prefixes, which can nest
// (kubectl --timestamps around mpirun --tag-output around a hostname).
func stripPrefixes(s string) string {
	for range 4 {
		before := s
		for _, re := range []*regexp.Regexp{timestampPrefix, mpiTagPrefix, bracketPrefix, hostPrefix} {
			if loc := re.FindStringIndex(s); loc != nil {
				s = s[loc[1]:]
			}
		}
		if s == before {
			break
		}
	}
	return s
}

// comment handles a '#' line: the parameter line, the column header and the
// trailer; other comments (device list, units) carry nothing we judge.
func (l *Log) comment(text string, n int, sawParams, sawColumns *bool) error {
	body := strings.TrimSpace(strings.TrimPrefix(text, "#"))
	switch {
	case strings.HasPrefix(body, "nThread"):
		if *sawParams || len(l.Rows) > 0 {
			return fmt.Errorf("line %d: a second nccl-tests parameter line: the log holds more than one run; capture one all_reduce_perf run per file", n)
		}
		m := paramLine.FindStringSubmatch(body)
		if m == nil {
			return fmt.Errorf("line %d: nccl-tests parameter line %q lacks 'minBytes N maxBytes N'", n, text)
		}
		var err error
		if l.MinBytes, err = strconv.ParseInt(m[1], 10, 64); err != nil {
			return fmt.Errorf("line %d: minBytes %q: %w", n, m[1], err)
		}
		if l.MaxBytes, err = strconv.ParseInt(m[2], 10, 64); err != nil {
			return fmt.Errorf("line %d: maxBytes %q: %w", n, m[2], err)
		}
		if s := stepPattern.FindStringSubmatch(body); s != nil {
			step, err := strconv.ParseInt(s[1], 10, 64)
			if err != nil {
				return fmt.Errorf("line %d: step %q: %w", n, s[1], err)
			}
			if s[2] == "factor" {
				l.StepFactor = step
			} else {
				l.StepBytes = step
			}
		}
		*sawParams = true
	case strings.HasPrefix(body, "size") && strings.Contains(body, "busbw"):
		*sawColumns = true
	case strings.HasPrefix(body, "Out of bounds values"):
		_, v, _ := strings.Cut(body, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			return fmt.Errorf("line %d: %q lacks the count", n, text)
		}
		c, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: out-of-bounds count %q: %w", n, f[0], err)
		}
		l.OutOfBounds = c
	case strings.HasPrefix(body, "Avg bus bandwidth"):
		_, v, _ := strings.Cut(body, ":")
		// nccl-tests divides by the number of sizes, so a sweep without rows
		// prints nan; the trailer still proves the run ended, so keep Complete
		// and record no average rather than a value JSON cannot carry.
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			l.AvgBusBW = f
		}
		l.Complete = true
	}
	return nil
}

// noise scans a non-table line for the few NCCL facts we report.
func (l *Log) noise(text string) {
	if m := usingNetwork.FindStringSubmatch(text); m != nil {
		l.Networks = appendDistinct(l.Networks, m[1])
		l.Network = l.Networks[0]
	}
	if m := pluginInit.FindStringSubmatch(text); m != nil {
		l.PluginVersions = appendDistinct(l.PluginVersions, strings.TrimRight(m[1], ",;."))
		l.PluginVersion = l.PluginVersions[0]
	}
	if m := ncclVersion.FindStringSubmatch(text); m != nil && l.NCCLVersion == "" {
		l.NCCLVersion = m[1]
	}
	if l.FirstError == "" && (strings.Contains(text, "NCCL WARN") || strings.Contains(text, "Test NCCL failure") || strings.Contains(text, "Test CUDA failure")) {
		const keep = 300
		if len(text) > keep {
			text = text[:keep] + "..."
		}
		l.FirstError = text
	}
}

func appendDistinct(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// isRowCandidate reports whether text starts like a table row: two integers
// (size, count). Requiring both keeps MPI chatter such as "1 more process has
// sent help message" out, while any line shaped like a row is held to the
// full format.
func isRowCandidate(text string) bool {
	f := strings.Fields(text)
	if len(f) < 2 {
		return false
	}
	_, e1 := strconv.ParseInt(f[0], 10, 64)
	_, e2 := strconv.ParseInt(f[1], 10, 64)
	return e1 == nil && e2 == nil
}

func parseRow(text string) (Row, error) {
	f := strings.Fields(text)
	if len(f) != 13 {
		return Row{}, fmt.Errorf("%d columns", len(f))
	}
	var r Row
	var err error
	if r.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.Size <= 0 {
		return Row{}, fmt.Errorf("size %q is not a positive integer", f[0])
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil || r.Count < 0 {
		return Row{}, fmt.Errorf("count %q is not a non-negative integer", f[1])
	}
	r.Type, r.RedOp = f[2], f[3]
	if r.Root, err = strconv.Atoi(f[4]); err != nil {
		return Row{}, fmt.Errorf("root %q is not an integer", f[4])
	}
	if r.OOP, err = parseResult(f[5:9]); err != nil {
		return Row{}, fmt.Errorf("out-of-place %w", err)
	}
	if r.IP, err = parseResult(f[9:13]); err != nil {
		return Row{}, fmt.Errorf("in-place %w", err)
	}
	return r, nil
}

func parseResult(f []string) (Result, error) {
	var res Result
	for i, dst := range []*float64{&res.TimeUS, &res.AlgBW, &res.BusBW} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Result{}, fmt.Errorf("%s %q is not a finite non-negative number", [...]string{"time", "algbw", "busbw"}[i], f[i])
		}
		*dst = v
	}
	if f[3] == "N/A" {
		res.Wrong = -1
		return res, nil
	}
	w, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || w < 0 {
		return Result{}, fmt.Errorf("#wrong %q is neither a non-negative integer nor N/A", f[3])
	}
	res.Wrong = w
	return res, nil
}
