package validate

import (
	"fmt"
	"io"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
)

// collectiveOf is the collective a recipe's floor is on.
var collectiveOf = map[string]string{
	recipe.ConstraintAllGatherBW: benchmark.AllGather,
	recipe.ConstraintAllReduceBW: benchmark.AllReduce,
}

// printsObjects says whether a dry run prints the derived benchmark and its
// TrainJob after the plan: gIB's does (its benchmark was first offered as a
// dry run, for users who run it with kubectl apply); TCPXO's prints the plan
// only, as before (render benchmark prints its objects).
func (v *validation) printsObjects() bool {
	return v.opts.DryRun && v.fab.Name == fabric.GIB.Name && v.bench != nil && len(v.problems) == 0
}

// writeObjects prints the derived benchmark and its TrainJob, as render
// benchmark --fabric gib would, with how to judge the run's log.
func (v *validation) writeObjects(w io.Writer) error {
	perf := benchmark.Perf(v.params.Collective)
	op, gbps := v.rec.Floor()
	fmt.Fprintf(w, "judge a run of these objects with: tcpxogen nccl-report --fabric %s --floor '%s %s' --log FILE\n", v.fab.Name, op, busbw.FormatGBps(gbps))
	data, err := runtimes.Encode(runtimes.FormatYAML, []string{
		fmt.Sprintf("The NCCL %s benchmark validate --fabric %s derived for recipe %s, and the TrainJob that runs it.", perf, v.fab.Name, v.opts.Recipe),
	}, v.bench, v.trainJob)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// argAfter is the argument after flag in argv, "" when there is none.
func argAfter(argv []string, flag string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			return argv[i+1]
		}
	}
	return ""
}

// container is the container named name of bench's replicated job job;
// the zero container when there is none (Derive always makes both).
func container(bench *trainer.TrainingRuntime, job, name string) corev1.Container {
	for _, rj := range bench.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != job {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == name {
				return c
			}
		}
	}
	return corev1.Container{}
}
