package realize

import (
	"context"
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

// Lint realizes job against runtime and returns the node pod's wiring
// changes and the trainer version that produced them.
func Lint(ctx context.Context, runtime client.Object, job *trainer.TrainJob) ([]Change, string, error) {
	res, err := Realize(ctx, runtime, job)
	if err != nil {
		return nil, "", err
	}
	rtPod, err := RuntimePodTemplate(runtime, constants.Node)
	if err != nil {
		return nil, "", err
	}
	jsPod, err := JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		return nil, "", err
	}
	return Diff(WiringOf(rtPod, constants.Node), WiringOf(jsPod, constants.Node)), res.TrainerVersion, nil
}
