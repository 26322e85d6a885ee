package busbw

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
	excerptpkg "github.com/tcpxogen/tcpxogen/internal/excerpt"
)

// Row is one message size of the results table.
type Row struct {
	Size, Count int64
	// Type and RedOp as printed; RedOp is "" in a pre-2.13 table whose
	// collective has no reduction column.
	Type, RedOp string
	// Root is -1 for unrooted collectives and in pre-2.13 tables without a
	// root column.
	Root    int
	OOP, IP Result // out-of-place, in-place
}

// Result is one half (out-of-place or in-place) of a table row.
type Result struct {
	TimeUS, AlgBW, BusBW float64
	// Wrong is the count of wrong elements, -1 when the row does not carry
	// one: N/A (validation disabled with -c 0), or a pre-2.13 table, which
	// prints the largest deviation (MaxError) instead.
	Wrong    int64
	MaxError float64
	// Checked is false when the column read N/A: nccl-tests did not validate.
	Checked bool
}

// layout is the column structure of a results table. nccl-tests 2.13 made it
// common to every collective (src/common.cu, writeBenchmarkLinePreamble:
// "%12li  %12li  %8s  %6s  %6s" size count type redop root); before 2.13 each
// collective printed its own leading columns (src/all_reduce.cu print_header:
// size count type redop) and a "%5.0le" largest-error column where 2.13 has a
// "%5g" wrong-element count.
type layout struct {
	lead      []string // leading column names: size count [type] [redop] [root]
	perIter   bool     // i_min i_max i_p99 i_cv% after each half (-I 1, nccl-tests 2.19)
	legacy    bool     // the fourth column of a half is "error", not "#wrong"
	timestamp bool     // a trailing "YYYY-MM-DD HH:MM:SS" column (-S 1, nccl-tests 2.18)
}

func (ly layout) half() int {
	if ly.perIter {
		return 8
	}
	return 4
}

func (ly layout) width() int {
	w := len(ly.lead) + 2*ly.half()
	if ly.timestamp {
		w += 2 // date and time are two fields
	}
	return w
}

func (ly layout) String() string {
	var b strings.Builder
	if ly.legacy {
		b.WriteString("pre-2.13 nccl-tests table")
	} else {
		b.WriteString("nccl-tests 2.13+ table")
	}
	fmt.Fprintf(&b, ", %d columns (%s", ly.width(), strings.Join(ly.lead, " "))
	wrong := "#wrong"
	if ly.legacy {
		wrong = "error"
	}
	fmt.Fprintf(&b, "; time algbw busbw %s", wrong)
	if ly.perIter {
		b.WriteString(" i_min i_max i_p99 i_cv%")
	}
	b.WriteString(" out-of-place and in-place")
	if ly.timestamp {
		b.WriteString("; timestamp")
	}
	b.WriteString(")")
	return b.String()
}

var leadNames = []string{"size", "count", "type", "redop", "root"}

// headerLayout reads a column header ("size count type redop root time algbw
// busbw #wrong ..."). ok is false when the fields do not spell an nccl-tests
// header, so another tool's "size ... busbw" table is not taken for one.
func headerLayout(f []string) (layout, bool) {
	i := slices.IndexFunc(f, func(s string) bool { return s == "time" || s == "cputime" })
	if i < 2 || f[0] != "size" || f[1] != "count" {
		return layout{}, false
	}
	ly := layout{lead: slices.Clone(f[:i])}
	for _, c := range ly.lead {
		if !slices.Contains(leadNames, c) {
			return layout{}, false
		}
	}
	rest := f[i:]
	if len(rest) < 8 || rest[1] != "algbw" || rest[2] != "busbw" {
		return layout{}, false
	}
	switch rest[3] {
	case "#wrong":
	case "error":
		ly.legacy = true
	default:
		return layout{}, false
	}
	ly.perIter = len(rest) > 4 && rest[4] == "i_min"
	h := ly.half()
	switch {
	case len(rest) == 2*h:
	case len(rest) == 2*h+1 && rest[2*h] == "timestamp":
		ly.timestamp = true
	default:
		return layout{}, false
	}
	return ly, true
}

// inferLayout guesses the layout of a table whose header is missing (dropped
// by a collector, or cut from an excerpt) from the field count of its first
// row, the one count in which the layouts differ.
func inferLayout(f []string) (layout, bool) {
	current := []string{"size", "count", "type", "redop", "root"}
	switch len(f) {
	case 13:
		return layout{lead: current}, true
	case 15:
		return layout{lead: current, timestamp: true}, true
	case 21:
		return layout{lead: current, perIter: true}, true
	case 23:
		return layout{lead: current, perIter: true, timestamp: true}, true
	case 12: // pre-2.13 all_reduce/reduce_scatter (redop) or broadcast (root)
		if _, err := strconv.Atoi(f[3]); err == nil {
			return layout{lead: []string{"size", "count", "type", "root"}, legacy: true}, true
		}
		return layout{lead: []string{"size", "count", "type", "redop"}, legacy: true}, true
	case 11: // pre-2.13 all_gather, alltoall
		return layout{lead: []string{"size", "count", "type"}, legacy: true}, true
	}
	return layout{}, false
}

var (
	dateField = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	timeField = regexp.MustCompile(`^\d{2}:\d{2}:\d{2}$`)
)

// parseRow reads one data row under ly.
func (ly layout) parseRow(f []string) (Row, error) {
	if len(f) != ly.width() {
		return Row{}, fmt.Errorf("it has %d columns where this table has %d: %s", len(f), ly.width(), ly)
	}
	r := Row{Root: -1}
	for i, name := range ly.lead {
		v := f[i]
		var err error
		switch name {
		case "size":
			if r.Size, err = strconv.ParseInt(v, 10, 64); err != nil || r.Size < 0 {
				return Row{}, fmt.Errorf("size %s is not a byte count (or overflows one)", excerpt(v))
			}
		case "count":
			if r.Count, err = strconv.ParseInt(v, 10, 64); err != nil || r.Count < 0 {
				return Row{}, fmt.Errorf("count %s is not an element count (or overflows one)", excerpt(v))
			}
		case "type":
			r.Type = v
		case "redop":
			r.RedOp = v
		case "root":
			if r.Root, err = strconv.Atoi(v); err != nil {
				return Row{}, fmt.Errorf("root %s is not an integer", excerpt(v))
			}
		}
	}
	h := ly.half()
	at := len(ly.lead)
	var err error
	if r.OOP, err = ly.parseResult(f[at : at+h]); err != nil {
		return Row{}, fmt.Errorf("out-of-place %w", err)
	}
	if r.IP, err = ly.parseResult(f[at+h : at+2*h]); err != nil {
		return Row{}, fmt.Errorf("in-place %w", err)
	}
	if ly.timestamp {
		d, t := f[at+2*h], f[at+2*h+1]
		if !dateField.MatchString(d) || !timeField.MatchString(t) {
			return Row{}, fmt.Errorf("timestamp %s is not YYYY-MM-DD HH:MM:SS", excerpt(d+" "+t))
		}
	}
	return r, nil
}

func (ly layout) parseResult(f []string) (Result, error) {
	var res Result
	for i, dst := range []*float64{&res.TimeUS, &res.AlgBW, &res.BusBW} {
		read := number
		if i > 0 {
			read = bandwidth.GBps
		}
		v, err := read(f[i])
		if err != nil {
			return Result{}, fmt.Errorf("%s %s is %w", [...]string{"time", "algbw", "busbw"}[i], excerpt(f[i]), err)
		}
		*dst = v
	}
	res.Wrong = -1
	if f[3] != "N/A" {
		res.Checked = true
		// nccl-tests prints the count with %g (src/util.cu,
		// writeBenchmarkLineBody: "%6g" of (double)wrongElts), so a million
		// wrong elements read "1.04858e+06"; before 2.13 the column was the
		// largest deviation, "%5.0le".
		v, err := number(f[3])
		switch {
		case err != nil && ly.legacy:
			return Result{}, fmt.Errorf("error %s is neither a number nor N/A", excerpt(f[3]))
		case err != nil:
			return Result{}, fmt.Errorf("#wrong %s is neither a count nor N/A", excerpt(f[3]))
		case ly.legacy:
			res.MaxError = v
		case v > math.MaxInt64/2:
			res.Wrong = math.MaxInt64 / 2
		default:
			res.Wrong = int64(math.Round(v))
		}
	}
	if ly.perIter {
		for _, s := range f[4:8] {
			if _, err := number(s); err != nil && s != "N/A" {
				return Result{}, fmt.Errorf("per-iteration column %s is not a number", excerpt(s))
			}
		}
	}
	return res, nil
}

// number reads a finite, non-negative decimal as nccl-tests prints it
// (%.2f, %.1f, %.0f, and %.1e once the field overflows); hex floats,
// infinities and NaN are not numbers nccl-tests prints.
func number(s string) (float64, error) { return bandwidth.Decimal(s) }

// integer matches the digits nccl-tests prints for a size or a count, and a
// sign, so that a negative one is a malformed row rather than noise.
var integer = regexp.MustCompile(`^[+-]?[0-9]+$`)

// isRowCandidate reports whether text starts like a table row: two integers
// (size, count). Requiring both keeps MPI chatter such as "1 more
// process has sent help message" out. Digits, not a parse: a size that
// overflows int64 is a row parseRow refuses, never a line dropped as noise.
func isRowCandidate(f []string) bool {
	return len(f) >= 2 && integer.MatchString(f[0]) && integer.MatchString(f[1])
}

// excerpt quotes s for a message, bounded, with look-alike runes named.
func excerpt(s string) string { return excerptpkg.Quote(s) }
