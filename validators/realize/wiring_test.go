package realize

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func TestSurvivalCategories(t *testing.T) {
	o := &Outcome{Changes: []wiring.Change{
		{What: wiring.CapabilityLost, Path: "initContainer tcpxo-daemon capability NET_ADMIN"},
		{What: wiring.EnvAdded, Path: "env X", To: "1"},
		{What: wiring.ResourceLost, Path: "limits nvidia.com/gpu", From: "8"},
		{What: wiring.EnvOverridden, Path: "env NCCL_DEBUG", From: "WARN", To: "INFO"},
	}}
	got := survival(o)
	for k, want := range map[string]bool{
		"sidecars": false, "node capabilities": true, "gpu limit": false, "gpu request": true,
		"node resources": false, "node env": false, "annotations": true, "volumes": true,
	} {
		if got[k] != want {
			t.Errorf("survives[%q] = %v, want %v", k, got[k], want)
		}
	}
	if len(got) != len(SurvivalCategories) {
		t.Errorf("survival has %d keys, want %d", len(got), len(SurvivalCategories))
	}
}

// Env order is wiring: the same variables in another order are one change,
// which Judge does not let pass as harmless.
func TestDiffEnvOrder(t *testing.T) {
	from := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)"}, {Name: "C", Value: "3"}}
	to := []corev1.EnvVar{{Name: "B", Value: "$(A)"}, {Name: "A", Value: "1"}, {Name: "C", Value: "3"}}
	got := wiring.DiffEnv(from, to)
	want := []wiring.Change{{What: wiring.EnvReordered, Path: "env order from A", From: "A,B,C", To: "B,A,C"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffEnv = %+v, want %+v", got, want)
	}
	j := Judge(wiring.Wiring{HasNode: true, NodeEnv: from}, wiring.Wiring{HasNode: true, NodeEnv: to}, nil)
	if len(j) != 1 || !j[0].LosesFabric() {
		t.Errorf("Judge of a reordered env = %+v, want one change that loses the fabric", j)
	}
}

// A TrainJob whose node env drops the shipped NCCL_LIB_DIR keeps the fabric:
// NCCL does not read it, and only a command that sources the installer's
// profile (Google's README, "NCCL configs": set NCCL_LIB_DIR, then
// `source ${NCCL_LIB_DIR}/nccl-env-profile.sh`) breaks, visibly. The
// wiring reports the loss; the fabric rule set calls it a warning. Pointing
// it at another directory sources another profile: fatal.
func TestJudgeNCCLLibDir(t *testing.T) {
	rt, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	pod, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	from := wiring.Of(pod, runtimes.NodeContainer)
	if i := slices.IndexFunc(from.NodeEnv, func(e corev1.EnvVar) bool { return e.Name == runtimes.EnvLibDir }); i < 0 || from.NodeEnv[i].Value != tcpxo.LibDir {
		t.Fatalf("the shipped node env has no NCCL_LIB_DIR=%s: %v", tcpxo.LibDir, from.NodeEnv)
	}
	gen := shipped.Facts()
	rules := gen.GuestRules(runtimes.ProfileDefault)
	for _, tc := range []struct {
		name  string
		edit  func([]corev1.EnvVar) []corev1.EnvVar
		what  string
		fatal bool
	}{
		{"dropped", func(env []corev1.EnvVar) []corev1.EnvVar {
			return slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return e.Name == runtimes.EnvLibDir })
		}, wiring.EnvLost, false},
		{"elsewhere", func(env []corev1.EnvVar) []corev1.EnvVar {
			for i := range env {
				if env[i].Name == runtimes.EnvLibDir {
					env[i].Value = "/opt/nccl/lib"
				}
			}
			return env
		}, wiring.EnvOverridden, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := from
			to.NodeEnv = tc.edit(slices.Clone(from.NodeEnv))
			j := Judge(from, to, rules)
			if len(j) != 1 || j[0].What != tc.what || j[0].Path != "env NCCL_LIB_DIR" || j[0].LosesFabric() != tc.fatal || j[0].Fix == "" {
				t.Fatalf("Judge = %+v, want one %q of env NCCL_LIB_DIR, losing the fabric %v, with a fix", j, tc.what, tc.fatal)
			}
			if !tc.fatal && (j[0].Severity != fabric.Warning || !strings.Contains(j[0].Reason, "nccl-env-profile.sh")) {
				t.Errorf("dropped NCCL_LIB_DIR: %+v, want a warning naming the profile command it breaks", j[0])
			}
		})
	}
}
