package admission

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/lint"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

const checkcmdTestdata = "../../tools/tcpxogen/internal/checkcmd/testdata"

// equivalenceCase is one TrainJob document, from where it was found.
type equivalenceCase struct {
	name string
	doc  []byte
}

// lintCases are the TrainJobs of check trainjob's suite: its testdata files,
// and the env variants its tests build from trainjob-env-debug.yaml (issue
// 10's reproductions), with the guide's other pitfall variables.
func lintCases(t *testing.T) []equivalenceCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(checkcmdTestdata, "trainjob-*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no check trainjob testdata under %s: %v", checkcmdTestdata, err)
	}
	var out []equivalenceCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, equivalenceCase{"testdata/" + filepath.Base(f), data})
	}
	base, err := os.ReadFile(filepath.Join(checkcmdTestdata, "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]string{
		"transport added":                 "NCCL_NET\n        value: Socket",
		"FasTrak forced":                  "NCCL_NET\n        value: fastrak",
		"plugin disabled":                 "NCCL_NET_PLUGIN\n        value: none",
		"enforced overridden":             "NCCL_PROTO\n        value: Simple",
		"enforced removed by a ConfigMap": "NCCL_MIN_NCHANNELS\n        valueFrom: {configMapKeyRef: {name: tuning, key: channels}}",
		"logging tuned":                   "NCCL_DEBUG_SUBSYS\n        value: INIT,NET",
		"unrelated added":                 "WANDB_PROJECT\n        value: llama",
		"interface changed":               "NCCL_SOCKET_IFNAME\n        value: eth1",
		"unknown NCCL variable":           "NCCL_ALGO\n        value: Ring",
		"FasTrak setting added":           "NCCL_FASTRAK_NEW_KNOB\n        value: \"1\"",
		"library path extended":           "LD_LIBRARY_PATH\n        value: /usr/local/nvidia/lib64:/opt/lib",
		"library path shadowed":           "LD_LIBRARY_PATH\n        value: /opt/lib:/usr/local/nvidia/lib64",
		"library path lost":               "LD_LIBRARY_PATH\n        value: /opt/lib",
		"LLCM directory known":            "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY\n        value: /dev/aperture_devices",
	} {
		doc := strings.Replace(string(base), "NCCL_DEBUG\n        value: INFO", env, 1)
		if doc == string(base) {
			t.Fatalf("%s: the base TrainJob changed shape", name)
		}
		out = append(out, equivalenceCase{"env: " + name, []byte(doc)})
	}
	// Issue 38, item 1: the daemon's capabilities written with the CAP_
	// prefix, which containerd drops, by a runtime patch.
	patch, err := os.ReadFile(filepath.Join(checkcmdTestdata, "trainjob-patch-daemon-caps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, add := range map[string]string{
		"prefixed":                         `["CAP_NET_ADMIN", "NET_BIND_SERVICE"]`,
		"prefixed in lower case":           `["cap_net_admin", "NET_BIND_SERVICE"]`,
		"all prefixed":                     `["CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE"]`,
		"both spellings":                   `["NET_ADMIN", "CAP_NET_ADMIN", "NET_BIND_SERVICE"]`,
		"a prefixed capability not needed": `["NET_ADMIN", "NET_BIND_SERVICE", "CAP_SYS_PTRACE"]`,
		"as shipped":                       `["NET_ADMIN", "NET_BIND_SERVICE"]`,
	} {
		doc := strings.Replace(string(patch), `add: ["NET_BIND_SERVICE"]`, "add: "+add, 1)
		if doc == string(patch) {
			t.Fatalf("%s: the daemon patch TrainJob changed shape", name)
		}
		out = append(out, equivalenceCase{"daemon capabilities: " + name, []byte(doc)})
	}
	for name, trainerFields := range map[string]string{
		"numProcPerNode 16":   "    numProcPerNode: 16\n",
		"numProcPerNode 8":    "    numProcPerNode: 8\n",
		"two nodes":           "    numNodes: 2\n",
		"GPUs in limits only": "    resourcesPerNode:\n      limits: {nvidia.com/gpu: \"8\", cpu: \"16\"}\n",
		"four GPUs":           "    resourcesPerNode:\n      limits: {nvidia.com/gpu: \"4\"}\n      requests: {nvidia.com/gpu: \"4\"}\n",
		"empty trainer":       "",
	} {
		doc := strings.Replace(string(base), "  trainer:\n", "  trainer:\n"+trainerFields, 1)
		out = append(out, equivalenceCase{"trainer: " + name, []byte(doc)})
	}
	return out
}

// guideCases are the guide's YAML examples that are TrainJobs.
func guideCases(t *testing.T) []equivalenceCase {
	t.Helper()
	page, err := os.ReadFile("../../docs/tcpxo-workloads.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []equivalenceCase
	for _, b := range markdown.YAMLBlocks(page) {
		if strings.Contains(string(b.Content), "\nkind: TrainJob\n") {
			out = append(out, equivalenceCase{"docs/tcpxo-workloads.md:" + itoa(b.Line) + " " + b.Info, b.Content})
		}
	}
	if len(out) < 10 {
		t.Fatalf("the guide has %d TrainJob examples; the test expects its pitfalls and fixes", len(out))
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

var envNameRE = regexp.MustCompile(`spec\.trainer\.env (\S+) `)

// capNameRE finds the daemon capabilities a policy's messages name.
var capNameRE = regexp.MustCompile(`spec\.runtimePatches ` + names.DaemonContainer + ` capability (\S+) `)

// policyCaps is the daemon capabilities a policy's messages name.
func policyCaps(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		for _, s := range capNameRE.FindAllStringSubmatch(m, -1) {
			out = append(out, s[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// policyEnv is the variables a policy's messages name, by the rule that
// names them.
func policyEnv(msgs []string) (env []string, other []string) {
	for _, m := range msgs {
		ms := envNameRE.FindAllStringSubmatch(m, -1)
		if len(ms) == 0 {
			other = append(other, m)
		}
		for _, s := range ms {
			env = append(env, s[1])
		}
	}
	slices.Sort(env)
	return slices.Compact(env), other
}

// TestPolicyAgreesWithLint is one rule set, two enforcers: every TrainJob of
// the lint's suite and of the guide through check trainjob (lint.File, and
// realize.Lint for the per-variable verdicts) and through the generated
// policies evaluated by the API server's own CEL validator, on the object
// the API server would admit (pruned and defaulted by the trainer CRD).
// Wherever the rule is expressible in CEL the verdicts agree: the contract
// denies exactly what the lint fails, naming the same fatal variables, and
// the advisory warns of the variables the lint warns of; the daemon
// capabilities written with the CAP_ prefix that the lint calls fatal are
// the ones the contract names, those it warns of the advisory's. One rule is
// the contract's alone: it refuses every runtime patch of the daemon (CEL
// sees the patch, not the merged container), where the lint passes a patch
// that keeps the daemon's wiring. The lint's own cases (listed in the
// guide) are counted and named.
func TestPolicyAgreesWithLint(t *testing.T) {
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	set, err := Generate(rt, shipped.Facts(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	contract, advisory := compile(t, set.Policies[0]), compile(t, set.Policies[1])
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	rules := runtimes.RulesFor(shipped.Facts(), wiring.Of(tpl, runtimes.NodeContainer).NodeEnv)
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	lintOnly, contractOnly := 0, 0
	cases := append(lintCases(t), guideCases(t)...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reports, err := v.Validate(tc.doc)
			if err != nil || len(reports) != 1 || reports[0].Defaulted == nil {
				t.Fatalf("schema: %v %v", err, reports)
			}
			obj := reports[0].Defaulted
			denied, warned := contract.decide(t, obj), advisory.decide(t, obj)
			var job trainer.TrainJob
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &job); err != nil {
				t.Fatal(err)
			}
			if job.Spec.RuntimeRef.Name != names.Runtime {
				// Not the lint's: the capability advisory alone.
				if len(denied) != 0 {
					t.Errorf("the contract judges a TrainJob of %s: %q", job.Spec.RuntimeRef.Name, denied)
				}
				multi := ptr.Deref(ptr.Deref(job.Spec.Trainer, trainer.Trainer{}).NumNodes, 1) > 1
				if got := len(warned) == 1 && strings.Contains(warned[0], AdvisoryMessage); got != multi {
					t.Errorf("%d nodes on %s: advisory %q", ptr.Deref(ptr.Deref(job.Spec.Trainer, trainer.Trainer{}).NumNodes, 1), job.Spec.RuntimeRef.Name, warned)
				}
				return
			}
			lintErr := lint.File(context.Background(), io.Discard, tc.name, tc.doc)
			var bad *lint.InputError
			if errors.As(lintErr, &bad) {
				t.Fatalf("the lint refuses the case: %v", lintErr)
			}
			if len(reports[0].Findings) > 0 {
				// Pruned before admission: only the lint sees the field.
				lintOnly++
				if lintErr == nil {
					t.Errorf("the lint passes a TrainJob with schema findings %v", reports[0].Findings)
				}
				t.Logf("lint only: %v", reports[0].Findings)
				return
			}
			verdict, err := realize.Lint(context.Background(), rt, &job, rules)
			if err != nil {
				t.Fatal(err)
			}
			var fatalEnv, warnEnv, fatalCaps, warnCaps []string
			otherFatal := !verdict.Launch.OK()
			daemonCap := "initContainer " + names.DaemonContainer + " " + fabric.CapabilityPath("")
			for _, c := range verdict.Changes {
				name, isEnv := strings.CutPrefix(c.Path, "env ")
				if entry, isCap := strings.CutPrefix(c.Path, daemonCap); isCap {
					if _, prefixed := fabric.Unprefixed(entry); prefixed && c.Severity == fabric.Fatal {
						fatalCaps = append(fatalCaps, entry)
					} else if prefixed && c.Severity == fabric.Warning {
						warnCaps = append(warnCaps, entry)
					}
				}
				switch {
				case c.Severity == fabric.Fatal && isEnv:
					fatalEnv = append(fatalEnv, name)
				case c.Severity == fabric.Fatal:
					otherFatal = true
				case c.Severity == fabric.Warning && isEnv:
					warnEnv = append(warnEnv, name)
				}
			}
			slices.Sort(fatalEnv)
			slices.Sort(warnEnv)
			slices.Sort(fatalCaps)
			slices.Sort(warnCaps)
			deniedEnv, deniedOther := policyEnv(denied)
			warnedEnv, _ := policyEnv(warned)
			if lintErr == nil && len(deniedEnv) == 0 && slices.Equal(deniedOther, []string{patchedDaemonMessage}) {
				// The contract's own rule: a daemon patch the lint passes.
				contractOnly++
				t.Logf("contract only: %q", deniedOther)
			} else {
				if (lintErr != nil) != (len(denied) > 0) {
					t.Errorf("lint fails: %v; contract denies: %q", lintErr, denied)
				}
				if otherFatal != (len(deniedOther) > 0) {
					t.Errorf("fatal wiring or launch: lint %v (launch %s), contract %q", otherFatal, verdict.Launch.Summary, deniedOther)
				}
			}
			if !slices.Equal(fatalEnv, deniedEnv) {
				t.Errorf("fatal variables: lint %q, contract %q", fatalEnv, deniedEnv)
			}
			if !slices.Equal(warnEnv, warnedEnv) {
				t.Errorf("warned variables: lint %q, advisory %q", warnEnv, warnedEnv)
			}
			if got := policyCaps(denied); !slices.Equal(fatalCaps, got) {
				t.Errorf("fatal prefixed capabilities: lint %q, contract %q", fatalCaps, got)
			}
			if got := policyCaps(warned); !slices.Equal(warnCaps, got) {
				t.Errorf("warned prefixed capabilities: lint %q, advisory %q", warnCaps, got)
			}
		})
	}
	t.Logf("%d cases, %d the lint's alone (pruned fields), %d the contract's alone (daemon patches that keep its wiring)", len(cases), lintOnly, contractOnly)
}
