package realize

import (
	"context"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// benignEnv are variables a TrainJob may override without touching the
// fabric: logging only. Overriding any other runtime variable changes how
// NCCL finds or drives the GPU NICs.
var benignEnv = map[string]bool{"NCCL_DEBUG": true, "NCCL_DEBUG_SUBSYS": true, "NCCL_DEBUG_FILE": true}

// LosesFabric reports whether a wiring change costs the GPUDirect-TCPXO
// fabric: anything lost or changed, and any env override but logging.
func LosesFabric(c Change) bool {
	switch {
	case c.IsAddition():
		return false
	case c.What == EnvOverridden:
		return !benignEnv[strings.TrimPrefix(c.Path, "env ")]
	}
	return true
}

// Verdict is what Lint finds for one TrainJob on the linked trainer.
type Verdict struct {
	// TrainerVersion is the trainer version that realized the TrainJob.
	TrainerVersion string
	// Changes are the node pod's wiring changes, in Diff order.
	Changes []Change
	// Launch is the launch verdict.
	Launch Launch
}

// Lint realizes job against runtime and returns the node pod's wiring
// changes and the launch verdict on the linked trainer version.
func Lint(ctx context.Context, runtime client.Object, job *trainer.TrainJob) (*Verdict, error) {
	res, err := Realize(ctx, runtime, job)
	if err != nil {
		return nil, err
	}
	rtPod, err := RuntimePodTemplate(runtime, constants.Node)
	if err != nil {
		return nil, err
	}
	jsPod, err := JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		return nil, err
	}
	launch, err := JudgeLaunch(runtime, job, res.JobSet)
	if err != nil {
		return nil, fmt.Errorf("judging the launch: %w", err)
	}
	return &Verdict{
		TrainerVersion: res.TrainerVersion,
		Changes:        Diff(WiringOf(rtPod, constants.Node), WiringOf(jsPod, constants.Node)),
		Launch:         launch,
	}, nil
}
