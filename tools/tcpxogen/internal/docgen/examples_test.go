// TestExamples makes every YAML example of docs/*.md a tested artifact:
// each goes through the API server's validation against the trainer CRDs,
// and each TrainJob of the shipped runtime is realized through the trainer
// runtime framework. A block fenced as
// "```yaml pitfall" must lose the fabric or launch wrong, so the page
// cannot claim a pitfall that no longer exists; any other block must do
// neither.
package docgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
	"github.com/tcpxogen/tcpxogen/validators/wiring"
)

func TestExamples(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := runtimes.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range YAMLBlocks(data) {
			total++
			t.Run(fmt.Sprintf("%s:%d", filepath.Base(page), b.Line), func(t *testing.T) {
				checkBlock(t, v, shipped, b)
			})
		}
	}
	if total < 8 {
		t.Fatalf("only %d YAML examples found; the guide has lost its examples", total)
	}
}

func checkBlock(t *testing.T, v *schema.Validator, shipped *trainer.ClusterTrainingRuntime, b Block) {
	reports, err := v.Validate(b.Content)
	if err != nil {
		t.Fatalf("example does not parse: %v", err)
	}
	lost := []string{}
	for _, r := range reports {
		for _, f := range r.Findings {
			lost = append(lost, "schema: "+f.String())
		}
		if r.Defaulted == nil {
			continue
		}
		v, job, err := realizeExample(r.Defaulted.Object, shipped)
		if err != nil {
			t.Fatalf("realize: %v", err)
		}
		if v == nil {
			continue
		}
		if job != nil {
			// What the other trainer versions' matrices recorded for a
			// TrainJob of this shape holds the page's claims about them.
			key, err := realize.LaunchKey(job)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := realize.RecordedLaunches(key)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				if rec.Launch == nil {
					t.Logf("launch on trainer %s not recorded for this shape", rec.TrainerVersion)
					continue
				}
				for _, p := range rec.Launch.Problems {
					lost = append(lost, "launch on trainer "+rec.TrainerVersion+" (recorded, case "+rec.Case+"): "+p.Check+": "+p.Problem)
				}
			}
		}
		for _, c := range v.Changes {
			if c.LosesFabric() {
				lost = append(lost, c.Change.String()+": "+c.Reason)
			}
		}
		for _, p := range v.Launch.Problems {
			lost = append(lost, "launch on trainer "+v.TrainerVersion+": "+p.Check+": "+p.Problem)
		}
	}
	switch b.Info {
	case "pitfall":
		if len(lost) == 0 {
			t.Fatal("a pitfall example no longer loses the fabric or launches wrong: update the guide")
		}
		t.Logf("fails, as the guide says: %s", strings.Join(lost, "; "))
	case "":
		if len(lost) > 0 {
			t.Fatalf("example loses the fabric or launches wrong: %s", strings.Join(lost, "; "))
		}
	default:
		t.Fatalf("unknown fence info %q: use ```yaml or ```yaml pitfall", b.Info)
	}
}

// realizeExample realizes TrainJobs of the shipped runtime against it
// (and returns the TrainJob, whose shape other trainer versions recorded),
// and a TrainJob with an empty spec.trainer against any TrainingRuntime
// (the smallest TrainJob that launches: the example is the runtime, not
// the job); other kinds have nothing to realize.
func realizeExample(obj map[string]any, shipped *trainer.ClusterTrainingRuntime) (*realize.Verdict, *trainer.TrainJob, error) {
	switch obj["kind"] {
	case trainer.TrainJobKind:
		var job trainer.TrainJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &job); err != nil {
			return nil, nil, err
		}
		if job.Spec.RuntimeRef.Name != runtimes.RuntimeName {
			return nil, nil, nil // another runtime (EKS, AKS): the schema proof is the test
		}
		v, err := realize.Lint(context.Background(), shipped, &job, rulesOf(shipped))
		return v, &job, err
	case trainer.TrainingRuntimeKind:
		var rt trainer.TrainingRuntime
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &rt); err != nil {
			return nil, nil, err
		}
		job := realize.BareTrainJob(client.Object(&rt))
		job.Spec.Trainer = &trainer.Trainer{}
		v, err := realize.Lint(context.Background(), &rt, job, rulesOf(&rt))
		return v, nil, err
	}
	return nil, nil, nil
}

// rulesOf is the guest config rules for a runtime's node container, as
// check trainjob picks them.
func rulesOf(rt client.Object) []guestconfig.Rule {
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		return runtimes.GeneratedFacts().DefaultGuestRules
	}
	return runtimes.RulesFor(runtimes.GeneratedFacts(), wiring.Of(tpl, runtimes.NodeContainer).NodeEnv)
}
