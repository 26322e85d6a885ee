package fabric

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

func TestClassify(t *testing.T) {
	rules := []guestconfig.Rule{
		{Name: "NCCL_PROTO", Value: "Simple", Policy: guestconfig.Enforced},
		{Name: "NCCL_FASTRAK_NUM_FLOWS", Value: "2", Policy: guestconfig.Enforced},
		{Name: "NCCL_TUNER_PLUGIN", Value: "libnccl-tuner.so", Policy: guestconfig.Recommended},
		{Name: "NCCL_FASTRAK_USE_SNAP", Value: "1", Policy: guestconfig.Recommended},
		{Name: "NCCL_DEBUG", Value: "WARN", Policy: guestconfig.Recommended},
	}
	for name, want := range map[string]Class{
		"NCCL_PROTO":             ClassEnforced,
		"NCCL_FASTRAK_NUM_FLOWS": ClassEnforced, // the rule wins over the prefix
		"NCCL_FASTRAK_USE_SNAP":  ClassFabric,   // the prefix wins over a recommendation
		"NCCL_FASTRAK_ANYTHING":  ClassFabric,
		"NCCL_NET":               ClassFabric,
		"NCCL_NET_PLUGIN":        ClassFabric,
		"NCCL_SOCKET_IFNAME":     ClassFabric,
		"LD_LIBRARY_PATH":        ClassFabric,
		"NCCL_LIB_DIR":           ClassFabric,
		"NCCL_TUNER_CONFIG_PATH": ClassFabric,
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": ClassFabric,
		"NCCL_NET_GDR_LEVEL":                            ClassFabric,
		"NCCL_TUNER_PLUGIN":                             ClassRecommended,
		"NCCL_DEBUG":                                    ClassRecommended, // the checker's word wins over logging
		"NCCL_DEBUG_SUBSYS":                             ClassLogging,
		"NCCL_DEBUG_FILE":                               ClassLogging,
		"NCCL_ALGO":                                     ClassTuning,
		"NCCL_IB_DISABLE":                               ClassTuning,
		"CUDA_VISIBLE_DEVICES":                          ClassTuning,
		"PATH":                                          ClassOther,
		"nccl_net":                                      ClassOther, // environment names are case-sensitive
	} {
		if got := Classify(name, rules); got != want {
			t.Errorf("Classify(%s) = %v, want %v", name, got, want)
		}
	}
	for _, c := range Classes {
		if c.String() == "unknown" || c.Doc() == "" {
			t.Errorf("class %d has no name or doc", c)
		}
		if c.MustNotTouch() != (c == ClassEnforced || c == ClassFabric) {
			t.Errorf("%v.MustNotTouch() = %v", c, c.MustNotTouch())
		}
	}
}

func TestTable(t *testing.T) {
	rules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto")
	shipped := runtimeEnv()
	rows := Table(shipped, rules)
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
		if r.Why == "" || r.Class.Doc() == "" {
			t.Errorf("row %+v lacks a reason", r)
		}
	}
	// Shipped variables first, in order, with their values.
	for i, v := range shipped {
		if rows[i].Name != v.Name || rows[i].Value != v.Value || rows[i].Class != Classify(v.Name, rules) {
			t.Errorf("row %d = %+v, want shipped %s=%s", i, rows[i], v.Name, v.Value)
		}
	}
	// Then the unshipped variables the rules fix, then the patterns.
	wantTail := []string{"NCCL_LIB_DIR", "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_DEBUG_FILE", "NCCL_DEBUG_TIMESTAMP_FORMAT",
		"NCCL_DEBUG_TIMESTAMP_LEVELS", PatternFasTrak, PatternNCCL, PatternOther}
	if d := cmp.Diff(wantTail, names[len(shipped):]); d != "" {
		t.Errorf("rows after the shipped ones (-want +got):\n%s", d)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("a variable has two rows: %v", names)
	}
	// A rule naming a variable nobody ships still gets its row.
	rows = Table(nil, []guestconfig.Rule{{Name: "NCCL_ALGO", Value: "Ring,Tree", Policy: guestconfig.Enforced}})
	if rows[0].Name != "NCCL_ALGO" || rows[0].Class != ClassEnforced || rows[0].Value != "" {
		t.Errorf("first row %+v", rows[0])
	}
	// A shipped value from elsewhere says so.
	rows = Table([]corev1.EnvVar{{Name: "NCCL_DEBUG", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "x"}}}}, nil)
	if rows[0].Value != `(from pod field "x")` {
		t.Errorf("first row %+v", rows[0])
	}
}
