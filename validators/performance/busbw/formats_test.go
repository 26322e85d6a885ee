package busbw

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Format facts below are read from NVIDIA/nccl-tests; the tags name the
// release whose source shows them:
//   - v2.13.0 (bc5f7cfb0aad52af4388f5b4cc6214baf1e1a8ed), src/common.cu:
//     rows "%12li  %12li  %8s  %6s  %6s" (size count type redop root), then
//     per half "  %7s  %6.2f  %6.2f  %5g" (#wrong as %g).
//   - v2.11.0 (863fcc8de9ca28e48337bc2bee64f54adf737ff6), src/all_reduce.cu
//     and src/common.cu: per-collective leading columns (all_reduce: size
//     count type redop) and "%5.0le" of the largest deviation ("error").
//   - v2.19.6 (a0b82b2260cf5152b9f8c061bbf7eaf0ba096432), src/util.cu:
//     "%6g" #wrong, the -S timestamp column ("%Y-%m-%d %H:%M:%S"), the -I
//     per-iteration columns, "# nccl-tests version X nccl-headers=N
//     nccl-library=N" and "# Collective test starting: NAME"; src/common.cu:
//     -N repeats the sweep in one table.

// wrongRow prints a 2.17+ row whose out-of-place #wrong is the %6g of n.
func wrongRow(size int64, busbw string, n int64) string {
	g := func(n int64) string { return strconv.FormatFloat(float64(n), 'g', 6, 64) } // C's %g: six significant digits
	return fmt.Sprintf("%12d  %12d  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s",
		size, size/4, "float", "sum", "-1", "10.00", "1.00", busbw, g(n), "10.00", "1.00", busbw, g(0))
}

func mustParse(t *testing.T, in string) *Log {
	t.Helper()
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return l
}

const twoNodes = "#  Rank  0 Group  0 Pid    211 on node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n" +
	"#  Rank  1 Group  0 Pid    311 on node-b device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"

// Rows of size 0 are what -b 0 and -b 1 print: with fewer bytes than one
// element the count, and so the printed size, is 0. Several rows can share a
// size after that rounding.
func TestRowsOfSizeZero(t *testing.T) {
	in := "# nThread 1 nGpus 1 minBytes 1 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		header + twoNodes +
		row(0, "0.00") + "\n" + row(0, "0.00") + "\n" + row(4, "0.00") + "\n" + row(1024, "1") + "\n" + row(2048, "400") + "\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 80 \n"
	l := mustParse(t, in)
	if len(l.Rows) != 5 || l.Rows[0].Size != 0 || l.Rows[1].Size != 0 {
		t.Fatalf("rows %+v", l.Rows)
	}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); !v.Pass {
		t.Fatalf("problems %q", v.Problems)
	}
}

// #wrong is printed with %g, so a million wrong elements read 1.04858e+06:
// that is a failed run (exit 1), not bad input.
func TestWrongInScientificNotation(t *testing.T) {
	in := params + header + twoNodes + row(1024, "1") + "\n" + wrongRow(2048, "400", 1048576) + "\n" +
		"# Out of bounds values : 1048576 FAILED\n# Avg bus bandwidth    : 200 \n"
	if !strings.Contains(in, "1.04858e+06") {
		t.Fatal("the fixture lost its scientific-notation count")
	}
	l := mustParse(t, in)
	if got := l.Rows[1].OOP.Wrong; got != 1048580 {
		t.Fatalf("wrong = %d, want 1048580 (the %%g value)", got)
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || problemsContaining(v, "wrong results", "2K (1.04858e+06 out-of-place)") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
}

// A run whose ranks all sat on one node measured NVLink; it cannot pass an
// inter-node floor however high its number.
func TestSingleNodeCannotPassInterNodeFloor(t *testing.T) {
	in := params + header +
		"#  Rank  0 Group  0 Pid    211 on node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n" +
		"#  Rank  1 Group  0 Pid    212 on node-a device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n" +
		row(1024, "1") + "\n" + row(2048, "480") + "\n# Avg bus bandwidth : 240\n"
	l := mustParse(t, in)
	if l.Nodes != 1 || l.Ranks != 2 {
		t.Fatalf("nodes %d ranks %d", l.Nodes, l.Ranks)
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Pass || check(t, v, CheckFloor).Status != Passed || problemsContaining(v, "one node", "node-a", "inter-node fabric") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
	// NCCL's own "nNodes" line counts too, when the device list is missing.
	l = mustParse(t, params+"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"+row(1024, "1")+"\n"+row(2048, "480")+"\n# Avg bus bandwidth : 240\n")
	if l.Nodes != 1 || l.Ranks != 8 || Evaluate(l, mustFloor(t, "300"), pinned).Pass {
		t.Fatalf("nodes %d ranks %d", l.Nodes, l.Ranks)
	}
	// Without either, the node count is unknown: skipped, not failed.
	l = mustParse(t, params+row(1024, "1")+"\n"+row(2048, "480")+"\n# Avg bus bandwidth : 240\n")
	if c := check(t, Evaluate(l, mustFloor(t, "300"), pinned), CheckNodes); c.Status != Skipped {
		t.Fatalf("check %+v", c)
	}
}

// "Using network Socket" on one node is the network NCCL would have used,
// not traffic: it is not a TCP fallback there.
func TestSocketOnOneNodeIsNotTCPFallback(t *testing.T) {
	in := params + header +
		"#  Rank  0 Group  0 Pid    211 on node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n" +
		"#  Rank  1 Group  0 Pid    212 on node-a device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n" +
		"node-a:211:211 [0] NCCL INFO Using network Socket\n" +
		row(1024, "1") + "\n" + row(2048, "480") + "\n# Avg bus bandwidth : 240\n"
	v := Evaluate(mustParse(t, in), mustFloor(t, "300"), pinned)
	if c := check(t, v, CheckNetwork); c.Status != Skipped || strings.Contains(c.Message, "went over TCP") {
		t.Fatalf("network check %+v", c)
	}
	if problemsContaining(v, "TCP") != 0 || len(v.Problems) != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
	// With two nodes it is the fallback.
	in = strings.Replace(in, "212 on node-a", "212 on node-b", 1)
	if v := Evaluate(mustParse(t, in), mustFloor(t, "300"), pinned); problemsContaining(v, "between the 2 nodes went over TCP") != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
}

// A training log that mentions size and busbw is not nccl-tests output.
func TestTrainingLogIsNotNCCLTests(t *testing.T) {
	for name, in := range map[string]string{
		"torchrun table": "W0602 09:12:01.118000 1 torch/distributed/run.py:793] Setting OMP_NUM_THREADS\n# size   algbw   busbw\n   4GiB  144.87GBps  271.63GBps\n",
		"bench printout": "0 data size: 4.0 GB\n duration: 1.5289 sec\n busbw: 40.5511  Gbps\n",
		"trailer only":   "Avg bus bandwidth:      40.6901GB/s\n",
	} {
		_, err := Parse(strings.NewReader(in))
		if !errors.Is(err, ErrNoOutput) {
			t.Errorf("%s: err = %v, want ErrNoOutput", name, err)
		}
		if name == "torchrun table" && (err == nil || !strings.Contains(err.Error(), "PyTorch")) {
			t.Errorf("%s: %v does not say what the log is", name, err)
		}
	}
}

// Launchers and collectors prefix lines; each known prefix is stripped, also
// nested and indented, and the table is found through it.
func TestParseStripsLauncherPrefixes(t *testing.T) {
	body := []string{
		strings.TrimSuffix(params, "\n"),
		strings.TrimSuffix(twoNodes, "\n")[:strings.Index(twoNodes, "\n")],
		strings.SplitN(twoNodes, "\n", 3)[1],
		"node-a:211:211 [0] NCCL INFO NCCL version 2.28.7+cuda12.8",
		"node-a:211:211 [0] NCCL INFO Using network FasTrak",
		strings.TrimSuffix(header, "\n"),
		row(1024, "1"),
		row(2048, "400"),
		"# Out of bounds values : 0 OK",
		"# Avg bus bandwidth    : 200 ",
	}
	for name, prefix := range map[string]func(i int) string{
		"SkyPilot":           func(int) string { return "(head, rank=0, pid=21170) " },
		"SkyPilot worker":    func(int) string { return "(worker1, rank=1, pid=20075, ip=10.164.15.193) " },
		"OpenMPI tag":        func(int) string { return "[1,0]<stdout>:" },
		"indented OpenMPI":   func(int) string { return "        [1,0]<stdout>:" },
		"kubectl prefix":     func(int) string { return "[pod/nccl-launcher-x7k2p/launcher] " },
		"kubectl timestamps": func(i int) string { return fmt.Sprintf("2025-06-02T09:14:%02d.123456789Z ", i) },
		"kubectl both":       func(i int) string { return fmt.Sprintf("[pod/l/launcher] 2025-06-02T09:14:%02d.1Z [1,0]<stdout>:", i) },
		"srun --label":       func(int) string { return " 0: " },
		"pdsh":               func(int) string { return "node-a: " },
	} {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			for i, line := range body {
				b.WriteString(prefix(i) + line + "\n")
			}
			l := mustParse(t, b.String())
			if len(l.Rows) != 2 || !l.Complete || l.MaxBytes != 2048 || l.Nodes != 2 || l.Network != "FasTrak" || l.NCCLVersion != "2.28.7+cuda12.8" {
				t.Fatalf("rows %d complete %v max %d nodes %d network %q nccl %q", len(l.Rows), l.Complete, l.MaxBytes, l.Nodes, l.Network, l.NCCLVersion)
			}
		})
	}
}

// A collector that strips the leading '#' of comment lines must not make
// the run look truncated: the trailer is still the trailer.
func TestCommentsWithoutHash(t *testing.T) {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(params+header+twoNodes, "\n"), "\n") {
		b.WriteString(" " + strings.TrimPrefix(line, "#") + "\n")
	}
	b.WriteString(row(1024, "1") + "\n" + row(2048, "400") + "\n Out of bounds values : 0 OK\n Avg bus bandwidth    : 200 \n")
	l := mustParse(t, b.String())
	if !l.Complete || l.MaxBytes != 2048 || l.Nodes != 2 || l.OutOfBounds != 0 {
		t.Fatalf("complete %v max %d nodes %d oob %d", l.Complete, l.MaxBytes, l.Nodes, l.OutOfBounds)
	}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); !v.Pass {
		t.Fatalf("problems %q", v.Problems)
	}
}

// The collective is identified and a log of another one is refused, naming
// it; a log that names none but whose table fits all_reduce is accepted.
func TestCollectiveIdentified(t *testing.T) {
	gather := func(size int64) string { // all_gather: redop none, per-rank count (2 ranks)
		return strings.Join([]string{itoa(size), itoa(size / 8), "float", "none", "-1", "10.00", "1.00", "1.00", "0", "10.00", "1.00", "1.00", "0"}, "  ")
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"announced", "# Collective test starting: all_gather_perf\n" + params + header + row(1024, "1") + "\n", "it is all_gather_perf (identified from the '# Collective test starting' line)"},
		{"binary name", "mpirun -np 16 /opt/nccl-tests/build/all_gather_perf -b 1K -e 2K\n" + params + header + row(1024, "1") + "\n", "it is all_gather_perf (identified from the benchmark name on line 1)"},
		{"NGC _mpi binary", "benchmark: alltoall_perf_mpi\n" + params + header + row(1024, "1") + "\n", "it is alltoall_perf"},
		{"shape: no reduction", params + header + gather(1024) + "\n", `redop "none"`},
		{"shape: rooted", params + header + strings.Replace(row(1024, "1"), "-1", "0", 1) + "\n", "root 0"},
		{"shape: per-rank count", params + header + strings.Replace(row(1024, "1"), "1024  256", "1024  32", 1) + "\n", "counts 32 elements of float (128 bytes)"},
		{"named all_reduce, shaped otherwise", "./all_reduce_perf -b 1K\n" + params + header + gather(1024) + "\n", "but its table is not all_reduce's"},
		{"pre-2.13 broadcast", "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n" +
			"        1024           256   float       0    45.82    0.02    0.02    N/A    38.17    0.03    0.03    N/A\n", "root 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mustParse(t, tc.in).CheckCollective(AllReduce)
			if !errors.Is(err, ErrOtherCollective) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrOtherCollective with %q", err, tc.want)
			}
		})
	}
	for name, in := range map[string]string{
		"announced":   "# Collective test starting: all_reduce_perf\n" + params + row(1024, "1") + "\n",
		"binary name": "./build/all_reduce_perf -b 1K -e 2K\n" + params + row(1024, "1") + "\n",
		"shape only":  params + row(1024, "1") + "\n",
		"two names":   "for b in all_gather_perf all_reduce_perf; do ...\n" + params + row(1024, "1") + "\n",
		"no rows yet": params,
	} {
		if err := mustParse(t, in).CheckCollective(AllReduce); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Network names are taken to the end of the line: aws-ofi-nccl registers
// "AWS Libfabric".
func TestNetworkNameWithSpaces(t *testing.T) {
	l := mustParse(t, params+"[1,1]<stdout>:w-1:22:22 [0] NCCL INFO Using network AWS Libfabric\n"+row(1024, "1")+"\n")
	if l.Network != "AWS Libfabric" {
		t.Fatalf("network %q", l.Network)
	}
	if v := Evaluate(l, mustFloor(t, "300"), pinned); problemsContaining(v, "NCCL used AWS Libfabric, not FasTrak") != 1 {
		t.Fatalf("problems %q", v.Problems)
	}
}

// The NCCL version comes from NCCL's INFO line, the plain "NCCL version"
// line NCCL prints at WARN, or nccl-tests' header code.
func TestNCCLVersionSources(t *testing.T) {
	for _, tc := range []struct{ in, want, from string }{
		{"h:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n", "2.18.5+cuda12.2", "the 'NCCL INFO NCCL version' line"},
		{"[1,0]<stdout>:NCCL version 2.12.7+cuda11.4\n", "2.12.7+cuda11.4", "the 'NCCL version' line"},
		{"NCCL version 2.23.4-BCCL-2+cuda12.1\n", "2.23.4-BCCL-2+cuda12.1", "the 'NCCL version' line"},
		{"# nccl-tests version 2.17.6 nccl-headers=22105 nccl-library=22304\n", "2.23.4", "nccl-library=22304 in the nccl-tests header"},
		{"# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102\n", "2.31.2", "nccl-library=23102 in the nccl-tests header"},
	} {
		l := mustParse(t, tc.in+params+row(1024, "1")+"\n")
		if l.NCCLVersion != tc.want || l.NCCLVersionFrom != tc.from {
			t.Errorf("%q: version %q from %q, want %q from %q", tc.in, l.NCCLVersion, l.NCCLVersionFrom, tc.want, tc.from)
		}
	}
	if got := versionFromCode(2708); got != "2.7.8" {
		t.Errorf("pre-2.9 code: %s", got)
	}
}

// Before 2.13 nccl-tests printed each collective's own leading columns and
// the largest deviation ("error") where 2.13 prints a wrong-element count:
// correctness then rests on the "Out of bounds values" trailer.
func TestLegacyTable(t *testing.T) {
	const legacyHeader = "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
	legacyRow := func(size int64, busbw, errCol string) string {
		return fmt.Sprintf("%12d  %12d  %8s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s", size, size/4, "float", "sum", "93.73", "0.04", busbw, errCol, "93.15", "0.04", busbw, errCol)
	}
	ok := params + legacyHeader + twoNodes + legacyRow(1024, "1.00", "1e-06") + "\n" + legacyRow(2048, "400.00", "2e-06") + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 200\n"
	l := mustParse(t, ok)
	if !l.Legacy || len(l.Rows) != 2 || l.Rows[1].OOP.BusBW != 400 || l.Rows[1].OOP.MaxError != 2e-06 || l.Rows[1].OOP.Wrong != -1 {
		t.Fatalf("legacy %v rows %+v", l.Legacy, l.Rows)
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if !v.Pass || !strings.Contains(check(t, v, CheckCorrect).Message, "0 out-of-bounds values") {
		t.Fatalf("pass %v checks %+v", v.Pass, v.Checks)
	}
	bad := strings.Replace(ok, "values : 0 OK", "values : 248 FAILED", 1)
	if v := Evaluate(mustParse(t, bad), mustFloor(t, "300"), pinned); v.Pass || problemsContaining(v, "248 out-of-bounds") != 1 {
		t.Fatalf("pass %v problems %q", v.Pass, v.Problems)
	}
	// Without the header, 12 columns are read as the pre-2.13 all_reduce table.
	noHeader := params + legacyRow(1024, "1.00", "0e+00") + "\n"
	if l := mustParse(t, noHeader); !l.Legacy || len(l.Rows) != 1 {
		t.Fatalf("legacy %v rows %d", l.Legacy, len(l.Rows))
	}
}

// nccl-tests 2.18 added a timestamp column (-S 1) and 2.19 per-iteration
// columns (-I 1); the table is read through both.
func TestLaterLayouts(t *testing.T) {
	per := func(size int64, busbw string) string {
		half := fmt.Sprintf("  %7s  %6s  %6s  %6g  %7s  %7s  %7s  %7s", "10.00", "1.00", busbw, 0.0, "9.80", "10.60", "10.50", "1.80")
		return fmt.Sprintf("%12d  %12d  %8s  %6s  %6s", size, size/4, "float", "sum", "-1") + half + half + "  2025-06-03 17:40:49"
	}
	hdr := "#       size         count      type   redop    root     time   algbw   busbw #wrong   i_min   i_max   i_p99   i_cv%     time   algbw   busbw #wrong   i_min   i_max   i_p99   i_cv%           timestamp\n"
	l := mustParse(t, params+hdr+twoNodes+per(1024, "1")+"\n"+per(2048, "400")+"\n# Avg bus bandwidth : 200\n")
	if len(l.Rows) != 2 || l.Rows[1].OOP.BusBW != 400 || !strings.Contains(l.Table, "23 columns") {
		t.Fatalf("rows %+v table %q", l.Rows, l.Table)
	}
	// The same rows without the header are recognised by their width.
	if l := mustParse(t, params+per(1024, "1")+"\n"); len(l.Rows) != 1 {
		t.Fatalf("rows %d", len(l.Rows))
	}
	ts := params + strings.Replace(header, "#wrong\n", "#wrong           timestamp\n", 1) + row(1024, "1") + "  2025-06-03 17:40:49\n"
	if l := mustParse(t, ts); len(l.Rows) != 1 || !strings.Contains(l.Table, "timestamp") {
		t.Fatalf("rows %d table %q", len(l.Rows), l.Table)
	}
	cputime := params + strings.ReplaceAll(header, " time", " cputime") + row(1024, "1") + "\n"
	if l := mustParse(t, cputime); len(l.Rows) != 1 {
		t.Fatalf("cputime rows %d", len(l.Rows))
	}
}

// -N repeats the sweep in one table: the last cycle is measured and every
// cycle is checked for wrong results.
func TestRunCycles(t *testing.T) {
	in := params + header + twoNodes + row(1024, "1") + "\n" + wrongRow(2048, "390", 3) + "\n" + row(1024, "1") + "\n" + row(2048, "400") + "\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth : 200\n"
	l := mustParse(t, in)
	if l.Cycles != 2 || l.CycleStart != 2 || len(l.Rows) != 4 {
		t.Fatalf("cycles %d start %d rows %d", l.Cycles, l.CycleStart, len(l.Rows))
	}
	v := Evaluate(l, mustFloor(t, "300"), pinned)
	if v.Measured != 400 || problemsContaining(v, "2K (3 out-of-place)") != 1 {
		t.Fatalf("measured %v problems %q", v.Measured, v.Problems)
	}
}

// -d all / -o all print sweeps of several types or reductions in one table;
// which one a floor is for is not the parser's to guess.
func TestSeveralTypesRefused(t *testing.T) {
	in := params + header + row(1024, "1") + "\n" + row(2048, "400") + "\n" + strings.Replace(row(1024, "1"), "float", "half", 1) + "\n"
	if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "-d all, -o all") {
		t.Fatalf("err = %v", err)
	}
}

// Every rank listed once per host: a rank listed twice means each process
// ran alone (nccl-tests built without MPI=1).
func TestDuplicateRankRefused(t *testing.T) {
	in := params + "#  Rank  0 Group  0 Pid 1 on a device 0 [0x00] X\n#  Rank  0 Group  0 Pid 2 on b device 0 [0x00] X\n" + row(1024, "1") + "\n"
	if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "MPI=1") {
		t.Fatalf("err = %v", err)
	}
}

// Errors quote at most about 80 characters of a bad line.
func TestErrorsAreBounded(t *testing.T) {
	long := row(1024, "1") + "  " + strings.Repeat("9", 4000)
	_, err := Parse(strings.NewReader(params + header + long + "\n"))
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("err (%d bytes) = %.200v", len(fmt.Sprint(err)), err)
	}
}
