package admission

import (
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

func shippedSet(t *testing.T, opts Options) *Set {
	t.Helper()
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	set, err := Generate(rt, shipped.Facts(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The default bindings are advisory; --enforce denies the contract and
// keeps the advisory a warning.
func TestBindings(t *testing.T) {
	warn := []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}
	for enforce, want := range map[bool][]admissionv1.ValidationAction{false: warn, true: {admissionv1.Deny}} {
		set := shippedSet(t, Options{Enforce: enforce})
		if len(set.Policies) != 2 || len(set.Bindings) != 2 {
			t.Fatalf("%d policies, %d bindings", len(set.Policies), len(set.Bindings))
		}
		for i, b := range set.Bindings {
			if b.Spec.PolicyName != set.Policies[i].Name {
				t.Errorf("binding %s binds %s", b.Name, b.Spec.PolicyName)
			}
		}
		if got := set.Bindings[0].Spec.ValidationActions; !slices.Equal(got, want) {
			t.Errorf("enforce %v: contract actions %v, want %v", enforce, got, want)
		}
		if got := set.Bindings[1].Spec.ValidationActions; !slices.Equal(got, warn) {
			t.Errorf("enforce %v: advisory actions %v", enforce, got)
		}
	}
}

func decideYAML(t *testing.T, e evaluator, doc string) []string {
	t.Helper()
	v, err := trainerSchema()
	if err != nil {
		t.Fatal(err)
	}
	reports, err := v.Validate([]byte(doc))
	if err != nil || len(reports) != 1 || reports[0].Defaulted == nil || len(reports[0].Findings) > 0 {
		t.Fatalf("schema: %v %+v", err, reports)
	}
	return e.decide(t, reports[0].Defaulted)
}

// trainerSchema is built once: it compiles every trainer CRD.
var trainerSchema = sync.OnceValues(schema.NewTrainer)

const job = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: j, namespace: team-a}\nspec:\n"

// Rules the lint's suite has no TrainJob for (the daemon patch applies on
// trainer v2.3.0, which this binary does not link), the exemptions, and the
// messages' words: the field or variable, why, and the fix.
func TestRules(t *testing.T) {
	set := shippedSet(t, Options{Runtimes: []string{names.Runtime, "my-tcpxo"}, Exempt: []string{"cpu-only"}})
	contract, advisory := compile(t, set.Policies[0]), compile(t, set.Policies[1])
	daemonPatch := job + "  runtimeRef: {name: torch-distributed-tcpxo}\n  trainer: {}\n  runtimePatches:\n  - manager: x.example/y\n    trainingRuntimeSpec:\n      template:\n        spec:\n          replicatedJobs:\n          - name: node\n            template:\n              spec:\n                template:\n                  spec:\n                    initContainers:\n                    - name: tcpxo-daemon\n                      env: [{name: A, value: b}]\n"
	for name, tc := range map[string]struct {
		doc            string
		denied, warned []string
	}{
		"daemon patched":           {daemonPatch, []string{"spec.runtimePatches patches the tcpxo-daemon container", "fix: patch only the node container"}, nil},
		"interface on own runtime": {job + "  runtimeRef: {name: my-tcpxo}\n  trainer: {env: [{name: NCCL_SOCKET_IFNAME, value: eth1}]}\n", []string{`spec.trainer.env NCCL_SOCKET_IFNAME changed: NCCL_SOCKET_IFNAME is "eth1" where tcpxogen ships "eth0"`, "; fix: restore NCCL_SOCKET_IFNAME="}, nil},
		"unknown NCCL":             {job + "  runtimeRef: {name: torch-distributed-tcpxo}\n  trainer: {env: [{name: NCCL_NVLS_ENABLE, value: \"0\"}]}\n", nil, []string{`spec.trainer.env NCCL_NVLS_ENABLE added: NCCL_NVLS_ENABLE is set to "0"`, "unexpected"}},
		"other runtime, 2 nodes":   {job + "  runtimeRef: {name: torch-distributed}\n  trainer: {numNodes: 2, env: [{name: NCCL_NET, value: Socket}]}\n", nil, []string{`spec.runtimeRef.name torch-distributed with spec.trainer.numNodes 2`, AdvisoryMessage}},
		"exempt runtime, 2 nodes":  {job + "  runtimeRef: {name: cpu-only}\n  trainer: {numNodes: 2}\n", nil, nil},
		"other runtime, 1 node":    {job + "  runtimeRef: {name: torch-distributed}\n  trainer: {}\n", nil, nil},
		"long value bounded":       {job + "  runtimeRef: {name: torch-distributed-tcpxo}\n  trainer: {env: [{name: NCCL_NET, value: " + strings.Repeat("x", 5000) + "}]}\n", []string{"… (cut)"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				e    evaluator
				want []string
			}{{contract, tc.denied}, {advisory, tc.warned}} {
				got := strings.Join(decideYAML(t, c.e, tc.doc), "\n")
				if (got == "") != (len(c.want) == 0) {
					t.Errorf("%s: %q, want %q", c.e.policy.Name, got, c.want)
				}
				for _, w := range c.want {
					if !strings.Contains(got, w) {
						t.Errorf("%s: %q lacks %q", c.e.policy.Name, got, w)
					}
				}
				if len(got) > 2000 {
					t.Errorf("%s: unbounded message (%d bytes)", c.e.policy.Name, len(got))
				}
			}
		})
	}
}

// Issue 38, item 1: a daemon capability a runtime patch writes with the
// CAP_ prefix is named, with the prefix as the cause, the name to write and
// the source; the contract says it first, since the API server denies with
// the first failed validation's message. Both spellings are the advisory's
// warning, the patch itself still the contract's.
func TestCapabilityPrefix(t *testing.T) {
	set := shippedSet(t, Options{})
	contract, advisory := compile(t, set.Policies[0]), compile(t, set.Policies[1])
	patch := func(add string) string {
		return job + "  runtimeRef: {name: torch-distributed-tcpxo}\n  trainer: {}\n  runtimePatches:\n  - manager: x.example/y\n    trainingRuntimeSpec:\n      template:\n        spec:\n          replicatedJobs:\n          - name: node\n            template:\n              spec:\n                template:\n                  spec:\n                    initContainers:\n                    - name: tcpxo-daemon\n                      securityContext: {capabilities: {add: " + add + "}}\n"
	}
	cause := []string{"carries the CAP_ prefix", "containerd drops a capability name written with the CAP_ prefix", "NVIDIA cluster-readiness-engine issue #438"}
	for name, tc := range map[string]struct {
		add            string
		denied, warned []string
	}{
		"prefixed": {`["CAP_NET_ADMIN", "NET_BIND_SERVICE"]`,
			append([]string{"spec.runtimePatches tcpxo-daemon capability CAP_NET_ADMIN capability-prefix: CAP_NET_ADMIN carries", "tcpxo-daemon lacks NET_ADMIN", "fix: write NET_ADMIN"}, cause...), nil},
		"lower case": {`["net_bind_service", "cap_net_admin"]`, []string{"capability cap_net_admin capability-prefix: cap_net_admin carries", "fix: write NET_ADMIN"}, nil},
		"both spellings": {`["NET_ADMIN", "CAP_NET_ADMIN", "NET_BIND_SERVICE"]`, []string{"spec.runtimePatches patches the tcpxo-daemon container"},
			append([]string{"spec.runtimePatches tcpxo-daemon capability CAP_NET_ADMIN capability-prefix", "an edit that drops NET_ADMIN and keeps CAP_NET_ADMIN loses it", "fix: remove CAP_NET_ADMIN and keep NET_ADMIN"}, cause...)},
		"not needed": {`["NET_ADMIN", "NET_BIND_SERVICE", "CAP_SYS_PTRACE"]`, []string{"spec.runtimePatches patches the tcpxo-daemon container"},
			[]string{"tcpxo-daemon lacks SYS_PTRACE", "fix: write SYS_PTRACE"}},
		"as shipped": {`["NET_ADMIN", "NET_BIND_SERVICE"]`, []string{"spec.runtimePatches patches the tcpxo-daemon container"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			denied, warned := decideYAML(t, contract, patch(tc.add)), decideYAML(t, advisory, patch(tc.add))
			if len(denied) == 0 || !strings.Contains(denied[0], tc.denied[0]) {
				t.Errorf("contract: %q, want first %q", denied, tc.denied[0])
			}
			for _, c := range []struct {
				got, want []string
			}{{denied, tc.denied}, {warned, tc.warned}} {
				got := strings.Join(c.got, "\n")
				if (got == "") != (len(c.want) == 0) {
					t.Errorf("%q, want %q", got, c.want)
				}
				for _, w := range c.want {
					if !strings.Contains(got, w) {
						t.Errorf("%q lacks %q", got, w)
					}
				}
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{Runtimes: []string{"Bad_Name"}}, {Exempt: []string{names.Runtime}}} {
		if _, err := Generate(rt, shipped.Facts(), opts); err == nil {
			t.Errorf("%+v: no error", opts)
		}
	}
}
