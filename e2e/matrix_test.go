package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// TestMatrixAgainstControllers runs every row of check trainjob's
// compatibility matrix (realize.Cases: the TrainJob shapes
// docs/trainer-compat.md records, the trainer v2.3.0 hazards among them:
// the process-count collapse of a memory-only resourcesPerNode, runtime
// patches of the tcpxo-daemon, mlPolicy.torch.envInjection) through the
// control plane of the linked trainer. The realization must agree with the
// real webhooks (rejected there exactly when check trainjob says admission
// rejects it) and with the real controller: the JobSet it creates carries
// exactly the realized node wiring (env such as PET_NPROC_PER_NODE,
// resources, mounts, capabilities), and every other object the realization
// writes (the MPI hostfile and SSH Secret, v2.3.0's runtime snapshot
// ConfigMap) exists. The matrix's own expectations (what each row does on
// each version, from the trainer's source) are checked offline by
// validators/realize; this proves the realization they judge is the
// controller's.
func TestMatrixAgainstControllers(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	version := realize.TrainerVersion()
	behavior, ok := realize.BehaviorOf(version)
	if !ok {
		t.Fatalf("no behaviour recorded for the linked trainer %s", version)
	}
	cases := realize.Cases()
	if len(cases) < 20 {
		t.Fatalf("only %d matrix cases: the matrix lost its rows", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if c.Supported != nil && !c.Supported(behavior) {
				t.Skipf("trainer %s cannot express this row (the matrix records it unsupported)", version)
			}
			ns := namespace(t, ctx, "matrix-"+c.Name)
			rt, job := matrixInputs(t, c, ns)
			if rt.GetName() != names.Runtime {
				if err := cp.Client.Create(ctx, rt.DeepCopyObject().(client.Object), strict); err != nil {
					t.Fatalf("applying the row's runtime %s: %v", rt.GetName(), err)
				}
			}
			realized, realizeErr := realize.Realize(ctx, rt, job)
			var admission *realize.AdmissionError
			if realizeErr != nil && !errors.As(realizeErr, &admission) {
				t.Fatalf("check trainjob's realization: %v", realizeErr)
			}

			err := createTrainJob(ctx, job)
			switch {
			case admission != nil && err == nil:
				t.Fatalf("check trainjob says admission rejects the TrainJob (%v); the control plane admitted it", admission)
			case admission != nil:
				t.Logf("rejected by both: check trainjob: %v; control plane: %v", admission, err)
				return
			case err != nil:
				t.Fatalf("check trainjob admits the TrainJob; the control plane rejects it: %v", err)
			}

			js := &jobsetv1alpha2.JobSet{}
			waitFor(t, ctx, 60*time.Second, "the JobSet of "+job.Name, func() (bool, error) {
				err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, js)
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				return err == nil, err
			})
			clusterPod, err := wiring.JobSetPodTemplate(js, constants.Node)
			if err != nil {
				t.Fatal(err)
			}
			offlinePod, err := wiring.JobSetPodTemplate(realized.JobSet, constants.Node)
			if err != nil {
				t.Fatal(err)
			}
			if d := wiring.Diff(wiring.Of(offlinePod, constants.Node), wiring.Of(clusterPod, constants.Node)); len(d) > 0 {
				t.Errorf("check trainjob's realization disagrees with the JobSet the trainer controller created:\n%s", joinChanges(d))
			}
			for _, want := range realized.Others {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(want.GroupVersionKind())
				waitFor(t, ctx, 30*time.Second, fmt.Sprintf("%s %s, which the realization writes", want.GetKind(), want.GetName()), func() (bool, error) {
					err := cp.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.GetName()}, got)
					if apierrors.IsNotFound(err) {
						return false, nil
					}
					return err == nil, err
				})
			}
		})
	}
}

// matrixInputs builds a row's runtime and TrainJob as the matrix does
// (realize.RunCase), placed for this cluster: the TrainJob in ns, a
// namespaced runtime there too, and a cluster-scoped runtime other than
// the shipped one under a name of its own, so rows do not collide.
func matrixInputs(t *testing.T, c realize.Case, ns string) (client.Object, *trainer.TrainJob) {
	t.Helper()
	build := c.Runtime
	if build == nil {
		build = realize.ShippedRuntime
	}
	rt, err := build()
	if err != nil {
		t.Fatalf("building the row's runtime: %v", err)
	}
	if c.Runtime != nil {
		if _, namespaced := rt.(*trainer.TrainingRuntime); namespaced {
			rt.SetNamespace(ns)
		} else {
			rt.SetName(ns)
		}
	}
	rt.SetResourceVersion("")
	job := realize.BareTrainJob(rt)
	job.Namespace = ns
	if c.TrainJob != nil {
		if err := c.TrainJob(job); errors.Is(err, realize.ErrUnsupported) {
			t.Fatalf("the matrix says trainer %s supports this row, its input says not: %v", realize.TrainerVersion(), err)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	return rt, job
}

// createTrainJob creates job strictly. The trainer's TrainJob webhook reads
// runtimes from its informer cache, so it can reject a TrainJob of a runtime
// created a moment before as not yet created; that rejection is retried
// for up to 30 s (as validate does), any other answer is final.
func createTrainJob(ctx context.Context, job *trainer.TrainJob) error {
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = cp.Client.Create(ctx, job.DeepCopy(), strict)
		if err == nil || !strings.Contains(err.Error(), "must be created before the TrainJob is created") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
