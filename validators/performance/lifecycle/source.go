package lifecycle

import (
	"errors"
	"fmt"
)

// RuntimeSource classifies what a benchmark result is evidence about, by
// where the benchmarked runtime came from. The set is closed; the values are
// the runtimeSource field of reports.
type RuntimeSource string

const (
	// SourceShipped: the benchmark runtime was derived from the deployed
	// shipped runtime (torch-distributed-tcpxo) after recipe → deployed →
	// rendered were checked to agree. The number is evidence about what
	// ships.
	SourceShipped RuntimeSource = "shipped"
	// SourceValidator: the validator's own runtime. The number is evidence
	// about a fixture.
	SourceValidator RuntimeSource = "validator"
	// SourceUser: a runtime the user supplied. The number is evidence about
	// that runtime.
	SourceUser RuntimeSource = "user"
)

// RuntimeSources lists the closed set, in report order.
func RuntimeSources() []RuntimeSource {
	return []RuntimeSource{SourceShipped, SourceValidator, SourceUser}
}

// ParseRuntimeSource accepts exactly one of the closed set, e.g. when a
// report is read back.
func ParseRuntimeSource(s string) (RuntimeSource, error) {
	for _, r := range RuntimeSources() {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("runtime source %q is not one of shipped, validator or user", s)
}

// RuntimeOrigin is where the benchmarked runtime came from.
type RuntimeOrigin string

const (
	// DerivedFromDeployed: derived from the deployed shipped runtime.
	DerivedFromDeployed RuntimeOrigin = "derived-from-deployed"
	// ValidatorRuntime: the validator built its own runtime.
	ValidatorRuntime RuntimeOrigin = "validator-runtime"
	// UserRuntime: the user supplied the runtime.
	UserRuntime RuntimeOrigin = "user-runtime"
)

// Origin is the provenance of one benchmarked runtime.
type Origin struct {
	Runtime RuntimeOrigin
	// AgreementVerified: the recipe → deployed → rendered agreement check
	// passed for the deployed runtime the benchmark was derived from.
	AgreementVerified bool
}

// ErrUnverifiedShipped is wrapped when a runtime derived from the deployed
// one is classified without the agreement check having passed.
var ErrUnverifiedShipped = errors.New("the benchmark was derived from the deployed runtime, but recipe → deployed → rendered agreement was not verified")

// classification maps each origin to its source. needsAgreement marks the
// origin whose classification is a claim about what ships, which the
// agreement check must back.
var classification = map[RuntimeOrigin]struct {
	source         RuntimeSource
	needsAgreement bool
}{
	DerivedFromDeployed: {SourceShipped, true},
	ValidatorRuntime:    {SourceValidator, false},
	UserRuntime:         {SourceUser, false},
}

// Classify returns the runtime source of a result. It depends only on where
// the runtime came from: who installed the trainer (the lifecycle Decision)
// does not enter into it, because a validator-installed trainer running the
// shipped runtime still measures what ships. A derivation from the deployed
// runtime is "shipped" only after the agreement check; without it the
// classification is refused rather than downgraded, because a deployed
// runtime that differs from the rendered one is a finding the user must see,
// not a quieter label.
func Classify(o Origin) (RuntimeSource, error) {
	c, ok := classification[o.Runtime]
	if !ok {
		return "", fmt.Errorf("runtime origin %q is not one of %s, %s or %s", o.Runtime, DerivedFromDeployed, ValidatorRuntime, UserRuntime)
	}
	if c.needsAgreement && !o.AgreementVerified {
		return "", fmt.Errorf("%w: run the agreement check first, and fix any difference it reports, before calling the result %q", ErrUnverifiedShipped, c.source)
	}
	return c.source, nil
}

// Provenance is what a result records about the runtime and the trainer it
// ran with. The two are independent facts, recorded side by side.
type Provenance struct {
	RuntimeSource RuntimeSource `json:"runtimeSource"`
	// TrainerAction and TrainerExplanation say what the validator did about
	// the trainer (a reused stray trainer, for instance, is said so here).
	TrainerAction      Action `json:"trainerLifecycle"`
	TrainerExplanation string `json:"trainerLifecycleExplanation"`
}

// Record builds a result's provenance from the lifecycle decision and the
// runtime's origin. A failed decision has no result to describe.
func Record(d Decision, o Origin) (Provenance, error) {
	if err := d.Err(); err != nil {
		return Provenance{}, err
	}
	src, err := Classify(o)
	if err != nil {
		return Provenance{}, err
	}
	return Provenance{RuntimeSource: src, TrainerAction: d.Action, TrainerExplanation: d.Explanation}, nil
}
