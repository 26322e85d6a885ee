package realize

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/validators/wiring"
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
