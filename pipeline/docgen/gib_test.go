package docgen

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// One table serves every gIB machine type: a value that differs between
// them (the tuner config) is shown per machine type, one that does not
// once; machine types whose env differs in what it ships are refused,
// naming both and the page, never merged into a table that is wrong for
// one of them.
func TestGIBRuleRows(t *testing.T) {
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := GIBRuleRows(in)
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) RuleRow {
		i := slices.IndexFunc(rows, func(r RuleRow) bool { return r.Name == name })
		if i < 0 {
			t.Fatalf("no row for %s", name)
		}
		return rows[i]
	}
	tuner := row("NCCL_TUNER_CONFIG_PATH")
	if len(tuner.PerMachine) != len(fabric.GIB.MachineTypes) {
		t.Fatalf("NCCL_TUNER_CONFIG_PATH: per machine %+v, want one value per gIB machine type", tuner.PerMachine)
	}
	for i, mt := range fabric.GIB.MachineTypes {
		env, err := in.RDMAEnv(mt.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := env[slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "NCCL_TUNER_CONFIG_PATH" })].Value
		if got := tuner.PerMachine[i]; got.MachineType != mt.Name || got.Value != want {
			t.Errorf("NCCL_TUNER_CONFIG_PATH on %s: %+v, want %s", mt.Name, got, want)
		}
	}
	if net := row("NCCL_NET"); net.PerMachine != nil || net.Value != fabric.GIB.Rules().Net() || net.Class != fabric.ClassEnforced {
		t.Errorf("NCCL_NET: %+v, want one value, %s, enforced", net, fabric.GIB.Rules().Net())
	}
	table := FabricRules(fabric.GIBRules, rows)
	for _, mt := range fabric.GIB.MachineTypes {
		if !strings.Contains(table, mt.Name+": `") {
			t.Errorf("the table names no value of %s:\n%s", mt.Name, table)
		}
	}

	// A machine type whose env ships a variable the other does not.
	last := &in.GIB.MachineProfiles[len(in.GIB.MachineProfiles)-1]
	last.Env = last.Env[:len(last.Env)-1]
	_, err = GIBRuleRows(in)
	if err == nil || !strings.Contains(err.Error(), last.MachineType) || !strings.Contains(err.Error(), GIBGuideDoc) {
		t.Fatalf("error %v; want one naming %s and %s", err, last.MachineType, GIBGuideDoc)
	}
}
