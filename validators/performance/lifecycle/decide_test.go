package lifecycle

import (
	"errors"
	"strings"
	"testing"
)

// TestDecide is docs/design.md's table, all six (declared, state) pairs.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		declared          bool
		state             TrainerState
		action            Action
		install, teardown bool
		// explains is a fragment the explanation must contain, so a row
		// cannot silently take another row's words.
		explains string
	}{
		{true, Complete, UseDeclared, false, false, "never tears down"},
		{true, Missing, FailDeclaredNotDeployed, false, false, "broken deployment"},
		{true, Partial, FailDeclaredNotDeployed, false, false, "broken deployment"},
		{false, Missing, InstallAndTearDown, true, true, "deletes exactly what it installed"},
		{false, Complete, ReuseStray, false, false, "deliberately reuses"},
		{false, Partial, FailPartial, false, false, "will not install over"},
	} {
		d := Decide(tc.declared, tc.state)
		name := func() string {
			return "Decide(" + map[bool]string{true: "declared", false: "undeclared"}[tc.declared] + ", " + string(tc.state) + ")"
		}
		if d.Action != tc.action || d.Install != tc.install || d.TearDown != tc.teardown {
			t.Errorf("%s = %s install=%v teardown=%v; want %s install=%v teardown=%v",
				name(), d.Action, d.Install, d.TearDown, tc.action, tc.install, tc.teardown)
		}
		if !strings.Contains(d.Explanation, tc.explains) {
			t.Errorf("%s explanation %q does not say %q", name(), d.Explanation, tc.explains)
		}
		checkDecision(t, d)
	}
}

// checkDecision asserts what holds for every decision: failures carry a
// remedy and an ErrPolicy error and never install; the rest have neither; the
// explanation is one sentence.
func checkDecision(t *testing.T, d Decision) {
	t.Helper()
	if d.Failed() != (d.Remedy != "") {
		t.Errorf("%s: Failed()=%v but remedy %q", d.Action, d.Failed(), d.Remedy)
	}
	if err := d.Err(); d.Failed() != errors.Is(err, ErrPolicy) || (err != nil && !strings.Contains(err.Error(), d.Remedy)) {
		t.Errorf("%s: Err() = %v", d.Action, err)
	}
	if d.Failed() && (d.Install || d.TearDown) {
		t.Errorf("%s: a failing decision installs or tears down", d.Action)
	}
	if d.TearDown && !d.Install {
		t.Errorf("%s: tears down what it did not install", d.Action)
	}
	if e := d.Explanation; !strings.HasSuffix(e, ".") || strings.Count(e, ". ") > 0 || strings.Contains(e, "\n") {
		t.Errorf("%s: explanation is not one sentence: %q", d.Action, e)
	}
}

// Every row of the table is reachable, every action appears once, and no
// (declared, state) pair is claimed by two rows.
func TestPolicyTableIsExact(t *testing.T) {
	seen := map[Action]bool{}
	claimed := map[string]int{}
	for _, row := range policy {
		if seen[row.decision.Action] {
			t.Errorf("action %s appears in two rows", row.decision.Action)
		}
		seen[row.decision.Action] = true
		for _, s := range row.states {
			key := string(s)
			if row.declared {
				key += "/declared"
			}
			claimed[key]++
		}
	}
	if len(policy) != 5 || len(seen) != 5 {
		t.Errorf("%d rows with %d actions; docs/design.md has 5", len(policy), len(seen))
	}
	for k, n := range claimed {
		if n != 1 {
			t.Errorf("%s is claimed by %d rows", k, n)
		}
	}
	if len(claimed) != 6 {
		t.Errorf("%d (declared, state) pairs covered, want 6", len(claimed))
	}
}

// An unrecognised state can fail the run but never install.
func TestDecideUnknownStateFailsClosed(t *testing.T) {
	for _, declared := range []bool{true, false} {
		for _, s := range []TrainerState{"", "Complete", "unknown"} {
			d := Decide(declared, s)
			if !d.Failed() || d.Install {
				t.Errorf("Decide(%v, %q) = %s install=%v; want a failure that installs nothing", declared, s, d.Action, d.Install)
			}
		}
	}
}
