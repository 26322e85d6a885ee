package bomcheck

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// A hand-edited (stale) policy golden fails the rule by name.
func TestAdmissionPolicyStaleFails(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, admission.GoldenEnforcePath, "- Deny", "- Warn")
	assertFails(t, check(t, root), "admission-policy-is-the-rule-set", admission.GoldenEnforcePath, "go generate")
}

// A changed guest config changes the policy: with the old policies the rule
// fails; with the policies the changed facts generate it passes, and they
// carry the new enforced value.
func TestAdmissionPolicyFollowsTheGuestConfig(t *testing.T) {
	root := copyRepo(t)
	old := "Name:   \"NCCL_PROTO\",\n\t\t\tPolicy: \"POLICY_ENFORCED\",\n\t\t\tValue:  \"Simple,LL128\","
	edit(t, root, generated.FactsFile, old, strings.Replace(old, "Simple,LL128", "Simple", 1))
	assertFails(t, check(t, root), "admission-policy-is-the-rule-set", admission.GoldenPath, admission.GoldenEnforcePath)
	f, err := emit.Parse(generated.FactsFile, []byte(read(t, root, generated.FactsFile)))
	if err != nil {
		t.Fatal(err)
	}
	in, err := shipped.LoadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	in.Facts = *f
	fresh, err := admission.Goldens(in)
	if err != nil {
		t.Fatal(err)
	}
	before := read(t, root, admission.GoldenPath)
	for rel, data := range fresh {
		write(t, root, rel, string(data))
	}
	if r := result(check(t, root), "admission-policy-is-the-rule-set"); r.Status != Pass {
		t.Fatalf("fresh policies fail: %+v", r)
	}
	after := read(t, root, admission.GoldenPath)
	if before == after || !strings.Contains(after, `enforces NCCL_PROTO=\"Simple\"`) {
		t.Errorf("the policy does not carry the changed enforced value")
	}
}
