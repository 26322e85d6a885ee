package checkcmd

import (
	"context"
	"fmt"
	"io"
	"os"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// lintTrainJob realizes a user's TrainJob against the shipped runtime and
// reports what of the wiring it removes or changes. Exit 1 when the fabric
// would be lost; exit 2 when the file is not a TrainJob for it.
func lintTrainJob(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("check trainjob", "check trainjob FILE", s)
	if err := cli.ParseArgs(fs, args, 1, "one TrainJob file: tcpxogen check trainjob FILE"); err != nil {
		return err
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return cli.BadInput("%w", err)
	}
	job, err := decodeTrainJob(fs.Arg(0), data)
	if err != nil {
		return err
	}
	fatalCount, err := lintReport(ctx, s.Out, fs.Arg(0), data, job)
	if err != nil {
		return err
	}
	if fatalCount > 0 {
		return fmt.Errorf("%s would lose the GPUDirect-TCPXO fabric (%d change(s) above): NCCL would fall back to TCP or fail", fs.Arg(0), fatalCount)
	}
	return nil
}

func decodeTrainJob(name string, data []byte) (*trainer.TrainJob, error) {
	var job trainer.TrainJob
	// Non-strict here on purpose: unknown fields are reported by the schema
	// proof below with their paths, which says more than a decode error.
	if err := yaml.Unmarshal(data, &job); err != nil {
		return nil, cli.BadInput("%s: %w", name, err)
	}
	if job.Kind != trainer.TrainJobKind {
		return nil, cli.BadInput("%s is a %q, not a TrainJob", name, job.Kind)
	}
	if job.Spec.RuntimeRef.Name != runtimes.RuntimeName {
		return nil, cli.BadInput("%s references runtime %q, not %s: this lint checks TrainJobs of the shipped runtime", name, job.Spec.RuntimeRef.Name, runtimes.RuntimeName)
	}
	return &job, nil
}

// lintReport prints the schema findings and the wiring changes and returns
// how many of them lose the fabric.
func lintReport(ctx context.Context, w io.Writer, name string, data []byte, job *trainer.TrainJob) (int, error) {
	v, err := schema.NewTrainer()
	if err != nil {
		return 0, err
	}
	reports, err := v.Validate(data)
	if err != nil {
		return 0, cli.BadInput("%s: %w", name, err)
	}
	fatalCount := 0
	for _, r := range reports {
		for _, f := range r.Findings {
			fmt.Fprintf(w, "FAIL  schema: %s (the API server would drop or reject this; on a cluster it vanishes silently)\n", f)
			fatalCount++
		}
	}
	rt, err := runtimes.Shipped()
	if err != nil {
		return 0, err
	}
	verdict, err := realize.Lint(ctx, rt, job)
	if err != nil {
		return 0, fmt.Errorf("realize %s against %s: %w", name, runtimes.RuntimeName, err)
	}
	changes, version := verdict.Changes, verdict.TrainerVersion
	for _, c := range changes {
		switch {
		case realize.LosesFabric(c):
			fmt.Fprintf(w, "FAIL  %s\n", c)
			fatalCount++
		case c.What == realize.EnvOverridden:
			fmt.Fprintf(w, "note  %s: your value wins over the runtime's\n", c)
		}
	}
	fmt.Fprintf(w, "%s on trainer %s: %d wiring change(s), %d lose the fabric\n", name, version, len(changes), fatalCount)
	return fatalCount, nil
}
