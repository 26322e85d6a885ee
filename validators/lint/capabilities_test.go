package lint

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// daemonCapsJob is a TrainJob whose runtime patch sets the tcpxo-daemon's
// capabilities to add (both trainer versions' webhooks admit it).
func daemonCapsJob(add string) []byte {
	return []byte(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: patch-daemon-caps
  namespace: team-a
spec:
  runtimeRef:
    name: torch-distributed-tcpxo
  trainer:
    command: ["torchrun", "train.py"]
  runtimePatches:
  - manager: team-a.example.com/hardening
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
                    initContainers:
                    - name: tcpxo-daemon
                      securityContext:
                        capabilities:
                          add: ` + add + "\n")
}

// Issue 38, item 1, as check trainjob prints it on the linked trainer: a
// patch writing CAP_NET_ADMIN fails (check trainjob exits 1) naming the
// prefix as the cause, that containerd drops it, and the name to write; one
// writing both spellings passes with a warning naming the prefixed entry.
func TestFileCapabilityPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, add string
		fails     bool
		want      []string
	}{
		{"prefixed", `["CAP_NET_ADMIN", "NET_BIND_SERVICE"]`, true, []string{
			"FAIL  capability added: initContainer tcpxo-daemon capability CAP_NET_ADMIN: CAP_NET_ADMIN carries the CAP_ prefix, and containerd drops a capability name written with the CAP_ prefix",
			"NVIDIA cluster-readiness-engine issue #438", "tcpxo-daemon lacks NET_ADMIN", "fix: write NET_ADMIN",
			"FAIL  capability lost: initContainer tcpxo-daemon capability NET_ADMIN: tcpxo-daemon loses a capability", "it is written CAP_NET_ADMIN instead, and the CAP_ prefix is the cause",
			"2 lose the fabric",
		}},
		{"both spellings", `["NET_ADMIN", "CAP_NET_ADMIN", "NET_BIND_SERVICE"]`, false, []string{
			"warn  capability added: initContainer tcpxo-daemon capability CAP_NET_ADMIN: CAP_NET_ADMIN carries the CAP_ prefix",
			"an edit that drops NET_ADMIN and keeps CAP_NET_ADMIN loses it with no error; remove CAP_NET_ADMIN", "0 lose the fabric",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := File(context.Background(), &out, tc.name+".yaml", daemonCapsJob(tc.add))
			var bad *InputError
			if errors.As(err, &bad) || (err != nil) != tc.fails {
				t.Fatalf("err %v, want failing %v:\n%s", err, tc.fails, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
