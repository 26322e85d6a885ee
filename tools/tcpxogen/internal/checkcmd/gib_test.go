package checkcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// gibJob is a TrainJob of the shipped gIB runtime for A4 that only brings
// its image and replaces the command, as the workload guide's gIB example
// does; ENV is replaced by each case's env entries, PATCH by its runtime
// patch.
const gibJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llama-gib
  namespace: team-a
spec:
  runtimeRef:
    name: torch-distributed-rdma-a4-highgpu-8g
  trainer:
    image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    command: ["torchrun", "train.py"]
ENV
PATCH`

// check trainjob picks the fabric from the runtime each TrainJob
// references: a gIB TrainJob is judged by gIB's rule set and the gIB
// installer's checker rules. Replacing the command keeps the fabric (the
// env is direct env, not a sourced script); steering NCCL off gIB,
// overriding an enforced value or moving the payload's host mount loses it.
func TestCheckTrainJobGIB(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		env, patch string
		code       int
		want       []string
	}{
		"command replaced only": {"", "", cli.ExitOK, []string{"0 lose the fabric"}},
		"logging added":         {"NCCL_DEBUG", "", cli.ExitOK, []string{"env added: env NCCL_DEBUG"}},
		"socket transport":      {"NCCL_NET=Socket", "", cli.ExitFailure, []string{"FAIL  env overridden: env NCCL_NET", "gIB", "GPUDirect-RDMA (NCCL/gIB) fabric"}},
		"IB transport":          {"NCCL_NET=IB", "", cli.ExitFailure, []string{"FAIL  env overridden: env NCCL_NET"}},
		"enforced overridden":   {"NCCL_IB_TC=41", "", cli.ExitFailure, []string{"FAIL  env overridden: env NCCL_IB_TC"}},
		"payload mount moved": {"", `  runtimePatches:
  - manager: team-a.example.com/storage
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
                    volumes:
                    - name: gib
                      hostPath:
                        path: /opt/elsewhere`, cli.ExitFailure, []string{"FAIL", "volume gib"}},
	} {
		t.Run(name, func(t *testing.T) {
			env := ""
			if tc.env != "" {
				k, v, _ := strings.Cut(tc.env, "=")
				if v == "" {
					v = "INFO"
				}
				env = "    env:\n      - name: " + k + "\n        value: \"" + v + "\""
			}
			doc := strings.Replace(strings.Replace(gibJob, "ENV", env, 1), "PATCH", tc.patch, 1)
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCheck(t, "trainjob", "-v", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// A TrainJob of a runtime tcpxogen does not ship is refused, naming the
	// shipped ones, gIB's among them.
	path := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(path, []byte(strings.NewReplacer("torch-distributed-rdma-a4-highgpu-8g", "torch-distributed-rdma", "ENV", "", "PATCH", "").Replace(gibJob)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCheck(t, "trainjob", path); code != cli.ExitUsage || !strings.Contains(out, "torch-distributed-rdma-a3-ultragpu-8g, torch-distributed-rdma-a4-highgpu-8g, torch-distributed-tcpxo") {
		t.Errorf("unshipped runtime: exit %d:\n%s", code, out)
	}
}
