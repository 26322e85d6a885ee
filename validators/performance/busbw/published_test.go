package busbw

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var publishedDir = filepath.Join(logsDir, "published")

// publishedCase is the verdict on one log in testdata/nccl-logs/published
// (their sources are in the README there) against the H100 GKE floor,
// ">= 300", as a careful engineer would give it, and why.
type publishedCase struct {
	log string
	// Exactly one of: a Parse error, a CheckCollective error, or a verdict.
	parseErr, collectiveErr string
	pass                    bool
	checks                  map[string]Status
	facts                   facts
	why                     string
}

type facts struct {
	nodes, ranks int
	network      string
	nccl         string
}

var publishedCases = []publishedCase{
	{log: "gke-a3mega-2node-mpirun.log", pass: true,
		checks: map[string]Status{CheckComplete: Passed, CheckCorrect: Passed, CheckNodes: Passed, CheckNetwork: Skipped, CheckPlugin: Skipped, CheckFloor: Passed},
		facts:  facts{nodes: 2, ranks: 16},
		why:    "two A3 Mega nodes, a complete 8B..8G sweep, no wrong results, busbw above 270 at 8G; NCCL_DEBUG was off, so network and plugin are unknown, not wrong"},
	{log: "dstack-2604-nebius-ib-2node.log", pass: true,
		checks: map[string]Status{CheckNodes: Passed, CheckFloor: Passed, CheckNetwork: Skipped},
		facts:  facts{nodes: 2, ranks: 16},
		why:    "two nodes over InfiniBand clear the number; the log does not name the network"},
	{log: "synthetic-kubectl-prefix-timestamps.log", pass: true,
		checks: map[string]Status{CheckNetwork: Passed, CheckPlugin: Passed, CheckFloor: Passed},
		facts:  facts{nodes: 2, ranks: 16, network: "FasTrak", nccl: "2.28.7+cuda12.8"},
		why:    "the kubectl and mpirun prefixes are stripped; a healthy TCPXO run"},
	{log: "synthetic-per-iteration-timestamps.log", pass: true,
		checks: map[string]Status{CheckComplete: Passed, CheckFloor: Passed},
		facts:  facts{nodes: 2, ranks: 16, network: "FasTrak", nccl: "2.28.7+cuda12.8"},
		why:    "nccl-tests 2.19's per-iteration and timestamp columns are read"},
	{log: "skypilot-gcp-a100-2node.log",
		checks: map[string]Status{CheckComplete: Passed, CheckNodes: Passed, CheckFloor: Failed},
		facts:  facts{nodes: 2, ranks: 16},
		why:    "SkyPilot prefixes stripped: a real 2-node run, far below an H100 TCPXO floor"},
	{log: "eks-efa-t4-2node-tagged-size0.log",
		checks: map[string]Status{CheckComplete: Passed, CheckCorrect: Passed, CheckNodes: Passed, CheckNetwork: Failed, CheckFloor: Failed},
		facts:  facts{nodes: 2, ranks: 2, network: "AWS Libfabric", nccl: "2.12.7+cuda11.4"},
		why:    "size-0 rows from -b 1 read; EFA, not FasTrak, and 3 GB/s"},
	{log: "eks-karpenter-socket-excerpt.log",
		checks: map[string]Status{CheckComplete: Failed, CheckNodes: Skipped, CheckNetwork: Failed, CheckFloor: Failed},
		facts:  facts{network: "Socket"},
		why:    "a README excerpt: no parameter line or device list, Socket, 2 GB/s"},
	{log: "aws-k8s-tester-464-socket-indented.log",
		checks: map[string]Status{CheckNodes: Passed, CheckNetwork: Failed, CheckFloor: Failed},
		facts:  facts{nodes: 2, ranks: 2, network: "Socket"},
		why:    "indented, tagged lines; two workers talked over TCP"},
	{log: "ibm-pcb-1-single-node-h100.log",
		checks: map[string]Status{CheckNodes: Failed, CheckNetwork: Skipped, CheckFloor: Passed},
		facts:  facts{nodes: 1, ranks: 8},
		why:    "360 GB/s over NVLink on one node says nothing about the fabric"},
	{log: "nccl-1530-single-node-rtx4090-g8.log",
		checks: map[string]Status{CheckNodes: Failed, CheckFloor: Failed},
		facts:  facts{nodes: 1, ranks: 8},
		why:    "one process driving eight PCIe GPUs on one host"},
	{log: "synthetic-single-node-socket.log",
		checks: map[string]Status{CheckNodes: Failed, CheckNetwork: Skipped, CheckFloor: Passed},
		facts:  facts{nodes: 1, ranks: 8, network: "Socket", nccl: "2.26.2+cuda12.8"},
		why:    "Socket on one node carried nothing: the failure is the single node, not a TCP fallback"},
	{log: "nccl-tests-249-hash-stripped-single-gpu.log",
		checks: map[string]Status{CheckComplete: Passed, CheckNodes: Failed},
		facts:  facts{nodes: 1, ranks: 1},
		why:    "the '#' was lost on the way: the trailer is still found, so not truncated; one GPU measures nothing"},
	{log: "nccl-tests-176-legacy-error-column.log",
		checks: map[string]Status{CheckComplete: Failed, CheckCorrect: Passed, CheckFloor: Failed},
		why:    "pre-2.13 table read; its error column is a deviation, the trailer counts 0 out of bounds; the excerpt lacks the parameter line"},
	{log: "awsome-slurm-srun-label-p4de.log",
		checks: map[string]Status{CheckComplete: Failed, CheckFloor: Failed},
		why:    "srun --label prefixes stripped; one 25M size, no parameter line"},
	{log: "gke-a3mega-benchmark-wrapper-no-validation.log",
		checks: map[string]Status{CheckComplete: Passed, CheckCorrect: Skipped, CheckNodes: Skipped, CheckFloor: Failed},
		why:    "validation off (-c 0) and 90 GB/s at 8G"},
	{log: "synthetic-wrong-scientific.log",
		checks: map[string]Status{CheckCorrect: Failed, CheckFloor: Passed},
		facts:  facts{nodes: 2, ranks: 16, network: "FasTrak", nccl: "2.28.7+cuda12.8"},
		why:    "1.04858e+06 wrong elements at 4G: corrupted, whatever the bandwidth"},
	{log: "triton-distributed-137-all-gather.log", collectiveErr: "it is all_gather_perf",
		why: "an all_gather_perf log: its busbw is not all_reduce's"},
	{log: "bottlerocket-304-eks-all-gather-indented.log", collectiveErr: `redop "none"`,
		why: "all_gather, known from its table (redop none) alone"},
	{log: "nccl-tests-128-reduce-scatter-size0.log", collectiveErr: "a per-rank count",
		why: "reduce_scatter: sum, root -1, but per-rank counts"},
	{log: "synthetic-torchrun-size-busbw.log", parseErr: "PyTorch",
		why: "a torchrun log with a table of its own is not nccl-tests output"},
}

func TestPublishedLogs(t *testing.T) {
	for _, tc := range publishedCases {
		t.Run(tc.log, func(t *testing.T) {
			f, err := os.Open(filepath.Join(publishedDir, tc.log))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			l, err := Parse(f)
			if tc.parseErr != "" {
				if !errors.Is(err, ErrNoOutput) || !strings.Contains(err.Error(), tc.parseErr) {
					t.Fatalf("err = %v, want ErrNoOutput with %q (%s)", err, tc.parseErr, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v (%s)", err, tc.why)
			}
			err = l.CheckCollective(AllReduce)
			if tc.collectiveErr != "" {
				if !errors.Is(err, ErrOtherCollective) || !strings.Contains(err.Error(), tc.collectiveErr) {
					t.Fatalf("err = %v, want ErrOtherCollective with %q (%s)", err, tc.collectiveErr, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckCollective: %v (%s)", err, tc.why)
			}
			if l.Nodes != tc.facts.nodes || l.Ranks != tc.facts.ranks || l.Network != tc.facts.network || l.NCCLVersion != tc.facts.nccl {
				t.Errorf("nodes %d ranks %d network %q nccl %q, want %+v", l.Nodes, l.Ranks, l.Network, l.NCCLVersion, tc.facts)
			}
			v := Evaluate(l, mustFloor(t, ">= 300"), pinned)
			if v.Pass != tc.pass {
				t.Errorf("pass %v, want %v (%s); problems %q", v.Pass, tc.pass, tc.why, v.Problems)
			}
			for name, want := range tc.checks {
				if c := check(t, v, name); c.Status != want {
					t.Errorf("%s = %s, want %s (%s): %s", name, c.Status, want, tc.why, c.Message)
				}
			}
			// Every verdict line says what was measured and why.
			if c := check(t, v, CheckFloor); !strings.Contains(c.Message, "GB/s") || !strings.Contains(c.Message, FormatSize(v.Size)) {
				t.Errorf("floor message %q does not say what was measured", c.Message)
			}
		})
	}
}

// Every published log is covered above, and each has a README entry.
func TestPublishedLogsAreCitedAndCovered(t *testing.T) {
	entries, err := os.ReadDir(publishedDir)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(publishedDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".log") {
			logs = append(logs, name)
			if !strings.Contains(string(readme), "`"+name+"`") {
				t.Errorf("%s is not described in README.md", name)
			}
			if !slices.ContainsFunc(publishedCases, func(c publishedCase) bool { return c.log == name }) {
				t.Errorf("%s has no case in TestPublishedLogs", name)
			}
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(logs), func(s string) bool { return strings.HasPrefix(s, "synthetic-") })); n < 8 {
		t.Errorf("%d logs modeled on published ones, want at least 8", n)
	}
}
