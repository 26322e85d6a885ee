// Package lifecycle is the performance validator's trainer lifecycle policy:
// whether the benchmark may use, install or must refuse Kubeflow Trainer on a
// cluster, and an executor that installs the pinned trainer only when the
// policy says so and tears down exactly what it installed, even when the
// benchmark fails, panics or is interrupted.
//
// The policy (docs/design.md, "Recipe-driven validation policy") is a pure
// function of two facts: whether the recipe declares the trainer, and what
// Observe finds on the cluster. A declared component belongs to the
// deployment, so the validator never installs or removes it; an undeclared
// one may be installed for the benchmark, but never over a partial
// installation it does not own.
//
// The package also classifies where a benchmarked runtime came from
// (RuntimeSource), which is independent of who installed the trainer.
package lifecycle

import (
	"errors"
	"fmt"
)

// TrainerState is what Observe found of Kubeflow Trainer on a cluster.
type TrainerState string

const (
	// Missing: none of the trainer's parts is present.
	Missing TrainerState = "missing"
	// Partial: some parts are present, or present but not ready.
	Partial TrainerState = "partial"
	// Complete: every part is present and ready.
	Complete TrainerState = "complete"
)

// Action is what the validator does about the trainer. The set is closed;
// its values are stable strings for reports.
type Action string

const (
	UseDeclared             Action = "use-declared"
	FailDeclaredNotDeployed Action = "fail-declared-not-deployed"
	InstallAndTearDown      Action = "install-and-tear-down"
	ReuseStray              Action = "reuse-stray"
	FailPartial             Action = "fail-partial"
)

// Decision is the policy's verdict for one run.
type Decision struct {
	Action Action
	// Install: the validator installs the pinned trainer before the benchmark.
	Install bool
	// TearDown: the validator deletes what it installed afterwards.
	TearDown bool
	// Explanation is one sentence a user reads in the result.
	Explanation string
	// Remedy says how to fix a failure; empty unless Failed.
	Remedy string
}

// failing are the actions that refuse to run the benchmark.
var failing = map[Action]bool{FailDeclaredNotDeployed: true, FailPartial: true}

// Failed reports whether the decision refuses to run the benchmark.
func (d Decision) Failed() bool { return failing[d.Action] }

// ErrPolicy is wrapped by Decision.Err, so callers can tell a policy refusal
// (exit as a failed validation) from an error talking to the cluster.
var ErrPolicy = errors.New("trainer lifecycle policy refuses to run the benchmark")

// Err returns nil for a decision that runs the benchmark, and for a failure an
// error carrying the explanation and the remedy.
func (d Decision) Err() error {
	if !d.Failed() {
		return nil
	}
	return fmt.Errorf("%w (%s): %s %s", ErrPolicy, d.Action, d.Explanation, d.Remedy)
}

// policy is the decision table of docs/design.md, row for row. Decide looks a
// (declared, state) pair up here; TestDecide checks that every pair has
// exactly one row.
var policy = []struct {
	declared bool
	states   []TrainerState
	decision Decision
}{
	{
		declared: true, states: []TrainerState{Complete},
		decision: Decision{
			Action:      UseDeclared,
			Explanation: "The recipe declares Kubeflow Trainer and the cluster runs all of it, so the benchmark uses the deployed trainer, which the validator never tears down.",
		},
	},
	{
		declared: true, states: []TrainerState{Missing, Partial},
		decision: Decision{
			Action:      FailDeclaredNotDeployed,
			Explanation: "The recipe declares Kubeflow Trainer but the cluster does not run all of it, and a declared component that is not deployed is a broken deployment.",
			Remedy:      "Deploy Kubeflow Trainer as the recipe declares it (its CRDs, its controller and the JobSet controller, all ready) and run again; the validator never installs a declared component.",
		},
	},
	{
		declared: false, states: []TrainerState{Missing},
		decision: Decision{
			Action:      InstallAndTearDown,
			Install:     true,
			TearDown:    true,
			Explanation: "The recipe does not declare Kubeflow Trainer and the cluster has none, so the validator installs the pinned trainer for the benchmark and afterwards deletes exactly what it installed.",
		},
	},
	{
		declared: false, states: []TrainerState{Complete},
		decision: Decision{
			Action:      ReuseStray,
			Explanation: "The recipe does not declare Kubeflow Trainer but the cluster runs a complete one, so the benchmark deliberately reuses that undeclared trainer and never tears it down; declare kubeflow-trainer in the recipe if it is part of the deployment.",
		},
	},
	{
		declared: false, states: []TrainerState{Partial},
		decision: Decision{
			Action:      FailPartial,
			Explanation: "The recipe does not declare Kubeflow Trainer and the cluster has only part of one, which the validator will not install over because it would change objects it does not own.",
			Remedy:      "Complete the installation (and declare kubeflow-trainer in the recipe) or remove what is left of it, then run again; if the JobSet controller is installed on its own, install Kubeflow Trainer without its bundled JobSet.",
		},
	},
}

// Decide returns the policy's decision. It is pure: the same inputs always
// give the same decision. A state other than Missing or Complete is decided as
// Partial, so an unrecognised observation can only fail, never install.
func Decide(declared bool, state TrainerState) Decision {
	if state != Missing && state != Complete {
		state = Partial
	}
	for _, row := range policy {
		if row.declared != declared {
			continue
		}
		for _, s := range row.states {
			if s == state {
				return row.decision
			}
		}
	}
	// Unreachable while the table covers every pair (TestDecide checks it);
	// failing closed keeps a gap from installing anything.
	return Decision{
		Action:      FailPartial,
		Explanation: fmt.Sprintf("The trainer lifecycle policy has no rule for declared=%v, state=%s.", declared, state),
		Remedy:      "This is a bug in the validator; please report it.",
	}
}
