package busbw

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The nccl-tests benchmarks a floor here is for: AllReduce for every
// fabric, AllGather for gIB (Google's NCCL test for A3 Ultra and A4 runs
// it, and its published busbw is all_gather's). Fabric.Collectives says
// which a fabric's runs are judged by.
const (
	AllReduce = "all_reduce_perf"
	AllGather = "all_gather_perf"
)

// ErrOtherCollective means the log is nccl-tests output, but of a collective
// other than the one the floor is for: its busbw is not comparable.
var ErrOtherCollective = errors.New("the log is from another collective")

// perfName matches the nccl-tests benchmarks by binary name (the _mpi suffix
// is the NGC containers' MPI build).
var perfName = regexp.MustCompile(`\b(all_reduce|all_gather|alltoall|alltoallv|broadcast|reduce|reduce_scatter|sendrecv|scatter|gather|hypercube)_perf(?:_mpi)?\b`)

// elementSize is the byte width of nccl-tests' data types (src/common.cu,
// test_typenames), for checking a row's count against its size.
var elementSize = map[string]int64{
	"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1,
	"half": 2, "bfloat16": 2, "float16": 2,
	"int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
	"int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

// identifyCollective settles which benchmark wrote the log: the "# Collective
// test starting:" line (nccl-tests 2.17 and later) if present, else the one
// benchmark binary the log names, else the shape of the table.
func (p *parser) identifyCollective() {
	l := p.l
	switch {
	case p.announced != "":
		l.Collective, l.CollectiveFrom = p.announced, "the '# Collective test starting' line"
	case len(p.names) == 1:
		l.Collective, l.CollectiveFrom = p.names[0], fmt.Sprintf("the benchmark name on line %d", p.nameLine)
	}
	if why := notAllReduce(l); why != "" {
		l.shapeMismatch = why
		if l.Collective == "" {
			l.Collective, l.CollectiveFrom = "a collective other than all_reduce", "the table's shape: "+why
		}
		return
	}
	if l.Collective == "" && len(l.Rows) > 0 {
		l.Collective, l.CollectiveFrom = AllReduce, "the table's shape (a sum-type reduction over the whole buffer, unrooted)"
		if len(p.names) > 1 {
			l.CollectiveFrom += "; the log names " + strings.Join(p.names, ", ")
		}
	}
}

// notAllReduce says why the table cannot be all_reduce_perf's, "" when it can.
// all_reduce prints each row's size as count × element size (its send and
// receive buffers are the whole count), a real reduction and root -1;
// reduce_scatter and all_gather print count per rank, so size is count ×
// element size × ranks (src/reduce_scatter.cu, src/all_gather.cu,
// GetCollByteCount).
func notAllReduce(l *Log) string {
	for _, r := range l.Rows {
		if r.Root != -1 {
			return fmt.Sprintf("its rows have root %d, so it is a rooted collective (broadcast, reduce, scatter or gather)", r.Root)
		}
		if r.RedOp == "none" || !slices.Contains(l.layout.lead, "redop") {
			return fmt.Sprintf("its rows carry no reduction (redop %q), so it is not a reduction", r.RedOp)
		}
		if w, ok := elementSize[r.Type]; ok && r.Count > 0 && r.Size != r.Count*w {
			return fmt.Sprintf("its row of %d bytes counts %d elements of %s (%d bytes), a per-rank count as reduce_scatter and all_gather print it", r.Size, r.Count, r.Type, r.Count*w)
		}
	}
	return ""
}

// notAllGather says why the table cannot be all_gather_perf's, "" when it
// can: all_gather is unrooted and reduces nothing (src/all_gather.cu:
// redop "none" from nccl-tests 2.13 on, no redop column before).
func notAllGather(l *Log) string {
	for _, r := range l.Rows {
		if r.Root != -1 {
			return fmt.Sprintf("its rows have root %d, so it is a rooted collective (broadcast, reduce, scatter or gather)", r.Root)
		}
		if r.RedOp != "" && r.RedOp != "none" {
			return fmt.Sprintf("its rows carry the reduction %q, which all_gather never applies", r.RedOp)
		}
	}
	return ""
}

// CheckFabricCollective returns nil when the log is from one of the
// collectives fab's runs are judged by, and an error wrapping
// ErrOtherCollective naming what the log is from otherwise. A fabric with
// one collective is CheckCollective of it. A log that names no benchmark
// and whose table fits all_reduce is all_reduce's; one whose table does not
// must name its benchmark.
func (l *Log) CheckFabricCollective(fab Fabric) error {
	if len(fab.Collectives) == 1 {
		return l.CheckCollective(fab.Collectives[0])
	}
	if l == nil {
		return fmt.Errorf("%w: there is no log", ErrOtherCollective)
	}
	want := strings.Join(fab.Collectives, " or ")
	switch {
	case l.Collective == "":
		return nil
	case !slices.Contains(fab.Collectives, l.Collective):
		return fmt.Errorf("%w: it is %s (identified from %s), not %s; a %s floor is for the bus bandwidth of %s, which another collective's busbw does not measure: pass the output of one %s run",
			ErrOtherCollective, l.Collective, l.CollectiveFrom, want, fab.Short, want, want)
	case l.Collective == AllReduce:
		return l.CheckCollective(AllReduce)
	case l.Collective == AllGather:
		if why := notAllGather(l); why != "" {
			return fmt.Errorf("%w: the log names %s (%s) but its table is not all_gather's: %s; pass the output of one %s run", ErrOtherCollective, l.Collective, l.CollectiveFrom, why, AllGather)
		}
	}
	return nil
}

// CheckCollective returns nil when the log is from want (e.g. AllReduce), and
// an error wrapping ErrOtherCollective that names what the log is from
// otherwise. A log that names no benchmark and whose table fits want passes.
func (l *Log) CheckCollective(want string) error {
	if l == nil {
		return fmt.Errorf("%w: there is no log", ErrOtherCollective)
	}
	switch {
	case l.Collective != "" && l.Collective != want:
		return fmt.Errorf("%w: it is %s (identified from %s), not %s; the floor is for %s's bus bandwidth, which another collective's busbw does not measure: pass the %s output", ErrOtherCollective, l.Collective, l.CollectiveFrom, want, want, want)
	case l.shapeMismatch != "" && want == AllReduce:
		return fmt.Errorf("%w: the log names %s (%s) but its table is not all_reduce's: %s; pass the output of one %s run", ErrOtherCollective, l.Collective, l.CollectiveFrom, l.shapeMismatch, want)
	}
	return nil
}
