package busbw

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds the parser arbitrary logs, seeded with every sample and
// published log: it must never panic, and a log it cannot read must never
// pass. A verdict of pass has to rest on what the log showed: a complete
// all_reduce sweep, not from one node, at or above the threshold.
//
//	go test ./validators/performance/busbw -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	for _, dir := range []string{logsDir, publishedDir} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, s := range []string{
		"",
		params,
		params + row(1024, "1") + "\n" + row(2048, "400"),
		params + header + row(0, "0") + "\n" + row(2048, "1e+06") + "\n# Avg bus bandwidth : nan\n",
		"(head, rank=0, pid=1) [1,0]<stdout>: 0: # nThread 1 nGpus 1 minBytes 9223372036854775807 maxBytes 1 step: 0(bytes)\n",
		"#  Rank 99999999999999999999 Group 0 Pid 1 on h device 0 [0] X\n" + params,
		"# nccl-tests version 2.19.6 nccl-headers=1 nccl-library=99999999999999999999999\n",
	} {
		f.Add([]byte(s))
	}
	floor, err := ParseFloor("300")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			if l != nil {
				t.Fatalf("Parse returned a log with error %v", err)
			}
			if len(err.Error()) > 2000 {
				t.Fatalf("error of %d bytes: a line was echoed whole", len(err.Error()))
			}
			return
		}
		collective := l.CheckCollective(AllReduce)
		v := Evaluate(l, floor, "1.0.15")
		if !v.Pass {
			return
		}
		switch {
		case collective != nil:
			t.Fatalf("passed a log of another collective: %v", collective)
		case len(l.Rows) == 0 || !l.Complete || l.MaxBytes <= 0:
			t.Fatalf("passed without a complete sweep: rows %d complete %v maxBytes %d", len(l.Rows), l.Complete, l.MaxBytes)
		case l.Nodes == 1:
			t.Fatal("passed a single-node run")
		case v.Measured < v.Threshold-tolerance:
			t.Fatalf("passed %v below the threshold %v", v.Measured, v.Threshold)
		}
		for _, c := range v.Checks {
			if c.Status == Failed || c.Message == "" {
				t.Fatalf("passed with check %+v", c)
			}
		}
	})
}
