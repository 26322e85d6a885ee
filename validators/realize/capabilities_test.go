package realize

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// Issue 38, item 1, through the realization on the linked trainer (the
// v2.3.0 build: -modfile=validators/realize/trainer-v2.3.0.mod): a runtime
// patch that writes the tcpxo-daemon's NET_ADMIN as CAP_NET_ADMIN loses the
// fabric with the prefix named as the cause, and one that writes both
// spellings is warned of the inert prefixed entry.
func TestLintCapabilityPrefix(t *testing.T) {
	rt, err := ShippedRuntime()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	rules := runtimes.RulesFor(shipped.Facts(), wiring.Of(tpl, runtimes.NodeContainer).NodeEnv)
	daemon := sidecarPrefix + names.DaemonContainer + " capability "
	for _, tc := range []struct {
		name, caps string
		want       map[string]fabric.Severity // change -> severity
		words      map[string][]string        // change -> words of its reason and fix
	}{
		{
			name: "prefixed", caps: `["CAP_NET_ADMIN","NET_BIND_SERVICE"]`,
			want: map[string]fabric.Severity{
				wiring.CapabilityLost + ": " + daemon + "NET_ADMIN":      fabric.Fatal,
				wiring.CapabilityAdded + ": " + daemon + "CAP_NET_ADMIN": fabric.Fatal,
			},
			words: map[string][]string{
				wiring.CapabilityLost + ": " + daemon + "NET_ADMIN": {"loses a capability", "it is written CAP_NET_ADMIN instead, and the CAP_ prefix is the cause"},
				wiring.CapabilityAdded + ": " + daemon + "CAP_NET_ADMIN": {"CAP_NET_ADMIN carries the CAP_ prefix", "containerd drops a capability name written with the CAP_ prefix",
					"NVIDIA cluster-readiness-engine issue #438", "tcpxo-daemon lacks NET_ADMIN", "write NET_ADMIN"},
			},
		},
		{
			name: "both spellings", caps: `["NET_ADMIN","CAP_NET_ADMIN","NET_BIND_SERVICE"]`,
			want: map[string]fabric.Severity{wiring.CapabilityAdded + ": " + daemon + "CAP_NET_ADMIN": fabric.Warning},
			words: map[string][]string{wiring.CapabilityAdded + ": " + daemon + "CAP_NET_ADMIN": {"CAP_NET_ADMIN carries the CAP_ prefix", "containerd drops",
				"an edit that drops NET_ADMIN and keeps CAP_NET_ADMIN loses it", "remove CAP_NET_ADMIN"}},
		},
		{name: "plain", caps: `["NET_ADMIN","NET_BIND_SERVICE"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := BareTrainJob(rt)
			if err := daemonPatch(`"securityContext":{"capabilities":{"add":` + tc.caps + `}}`)(job); err != nil {
				t.Fatal(err)
			}
			v, err := Lint(context.Background(), rt, job, rules)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Judged{}
			for _, j := range v.Changes {
				if strings.HasPrefix(j.Path, daemon) {
					got[j.What+": "+j.Path] = j
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("trainer %s: capability changes %+v, want %v", v.TrainerVersion, got, tc.want)
			}
			for k, sev := range tc.want {
				j, ok := got[k]
				if !ok || j.Severity != sev || j.Fix == "" {
					t.Errorf("trainer %s: %s judged %+v, want %v with a fix", v.TrainerVersion, k, j, sev)
				}
				for _, w := range tc.words[k] {
					if !strings.Contains(j.Reason+"; fix: "+j.Fix, w) {
						t.Errorf("trainer %s: %s: %q lacks %q", v.TrainerVersion, k, j.Reason+"; fix: "+j.Fix, w)
					}
				}
			}
		})
	}
}

// The rule covers the node container's capabilities too, and a prefixed
// name the runtime itself writes, which no change carries.
func TestJudgeCapabilityPrefix(t *testing.T) {
	from := wiring.Wiring{HasNode: true, NodeCaps: []corev1.Capability{"IPC_LOCK"}}
	to := wiring.Wiring{HasNode: true, NodeCaps: []corev1.Capability{"CAP_IPC_LOCK"}}
	j := Judge(from, to, nil)
	if len(j) != 2 || j[0].What != wiring.CapabilityLost || !j[0].LosesFabric() || !strings.Contains(j[0].Reason, "written CAP_IPC_LOCK instead") ||
		j[1].What != wiring.CapabilityAdded || !j[1].LosesFabric() || !strings.Contains(j[1].Reason, "node lacks IPC_LOCK") || !strings.Contains(j[1].Fix, "write IPC_LOCK") {
		t.Errorf("node container's IPC_LOCK written CAP_IPC_LOCK: %+v", j)
	}
	j = Judge(to, to, nil)
	if len(j) != 1 || j[0].What != CapabilityRule || j[0].Path != "capability CAP_IPC_LOCK" || !j[0].LosesFabric() {
		t.Errorf("a runtime that writes CAP_IPC_LOCK: %+v, want the capability rule's finding", j)
	}
}
