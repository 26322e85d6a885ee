package lifecycle

import (
	"errors"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		origin Origin
		want   RuntimeSource
		err    error
	}{
		{Origin{Runtime: DerivedFromDeployed, AgreementVerified: true}, SourceShipped, nil},
		{Origin{Runtime: DerivedFromDeployed}, "", ErrUnverifiedShipped},
		{Origin{Runtime: ValidatorRuntime}, SourceValidator, nil},
		{Origin{Runtime: ValidatorRuntime, AgreementVerified: true}, SourceValidator, nil},
		{Origin{Runtime: UserRuntime}, SourceUser, nil},
		{Origin{Runtime: UserRuntime, AgreementVerified: true}, SourceUser, nil},
	} {
		got, err := Classify(tc.origin)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Classify(%+v) = %q, %v; want %q, %v", tc.origin, got, err, tc.want, tc.err)
		}
	}
	if _, err := Classify(Origin{Runtime: "fixture"}); err == nil {
		t.Error("unknown origin classified")
	}
}

// Who installed the trainer does not change what a result is evidence about:
// for every runnable lifecycle decision (used as declared, installed by the
// validator, reused stray) each origin records the same runtime source.
func TestRuntimeSourceIgnoresWhoInstalledTheTrainer(t *testing.T) {
	origins := []Origin{
		{Runtime: DerivedFromDeployed, AgreementVerified: true},
		{Runtime: ValidatorRuntime},
		{Runtime: UserRuntime},
	}
	var runnable []Decision
	for _, declared := range []bool{true, false} {
		for _, s := range []TrainerState{Missing, Partial, Complete} {
			if d := Decide(declared, s); !d.Failed() {
				runnable = append(runnable, d)
			}
		}
	}
	if len(runnable) != 3 {
		t.Fatalf("%d runnable decisions, want use-declared, install-and-tear-down and reuse-stray", len(runnable))
	}
	for _, o := range origins {
		want, err := Classify(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range runnable {
			p, err := Record(d, o)
			if err != nil {
				t.Fatalf("Record(%s, %+v): %v", d.Action, o, err)
			}
			if p.RuntimeSource != want || p.TrainerAction != d.Action || p.TrainerExplanation != d.Explanation {
				t.Errorf("Record(%s, %+v) = %+v; want source %s next to the decision", d.Action, o, p, want)
			}
		}
	}
}

func TestRecordRefusesFailedDecisions(t *testing.T) {
	if _, err := Record(Decide(false, Partial), Origin{Runtime: ValidatorRuntime}); !errors.Is(err, ErrPolicy) {
		t.Errorf("Record of a refused run = %v", err)
	}
}

func TestParseRuntimeSource(t *testing.T) {
	for _, s := range RuntimeSources() {
		if got, err := ParseRuntimeSource(string(s)); got != s || err != nil {
			t.Errorf("ParseRuntimeSource(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Shipped", "fixture"} {
		if _, err := ParseRuntimeSource(s); err == nil {
			t.Errorf("ParseRuntimeSource(%q) accepted", s)
		}
	}
}
