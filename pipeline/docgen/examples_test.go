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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

func TestExamples(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	shippedRTs := shippedRuntimes(t)
	upstream := upstreamRuntimes(t)
	total := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := markdown.YAMLBlocks(data)
		known, err := pageRuntimes(v, blocks, shippedRTs, upstream)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(page), err)
		}
		for _, b := range blocks {
			total++
			t.Run(fmt.Sprintf("%s:%d", filepath.Base(page), b.Line), func(t *testing.T) {
				checkBlock(t, v, known, b)
			})
		}
	}
	if total < 8 {
		t.Fatalf("only %d YAML examples found; the guide has lost its examples", total)
	}
}

// runtimeKey names a runtime as a TrainJob's runtimeRef does.
type runtimeKey struct{ kind, name string }

// knownRuntime is a runtime a TrainJob may reference, with its fabric's
// rule set and the guest config rules its installer enforces: TCPXO's for
// the shipped TCPXO runtime and the page's own, gIB's for each shipped gIB
// runtime (as check trainjob picks them), none for upstream's, which carry
// no GPUDirect wiring (the guide shows them with other clouds' fabrics).
type knownRuntime struct {
	obj   client.Object
	rs    *fabric.RuleSet
	rules []guestconfig.Rule
}

// pageRuntimes is every runtime a TrainJob of the page may reference: the
// shipped ones, the ones the page itself defines, and the upstream runtimes
// of the linked trainer release (which a trainer install creates).
func pageRuntimes(v *schema.Validator, blocks []markdown.Block, shipped map[runtimeKey]knownRuntime, upstream map[runtimeKey]knownRuntime) (map[runtimeKey]knownRuntime, error) {
	known := maps.Clone(upstream)
	maps.Copy(known, shipped)
	for _, b := range blocks {
		reports, err := v.Validate(b.Content)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", b.Line, err)
		}
		for _, r := range reports {
			if r.Defaulted == nil {
				continue
			}
			var rt client.Object
			switch r.Defaulted.GetKind() {
			case trainer.TrainingRuntimeKind:
				rt = &trainer.TrainingRuntime{}
			case trainer.ClusterTrainingRuntimeKind:
				rt = &trainer.ClusterTrainingRuntime{}
			default:
				continue
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.Defaulted.Object, rt); err != nil {
				return nil, fmt.Errorf("line %d: %w", b.Line, err)
			}
			known[runtimeKey{r.Defaulted.GetKind(), rt.GetName()}] = knownRuntime{rt, fabric.TCPXORules, rulesOf(rt)}
		}
	}
	return known, nil
}

// shippedRuntimes are the runtimes tcpxogen ships, as check trainjob
// judges TrainJobs of them: the TCPXO runtime with TCPXO's rule set and its
// profile's checker rules, and the gIB runtime of each machine type with
// gIB's rule set and the gIB installer's checker rules for that type.
func shippedRuntimes(t *testing.T) map[runtimeKey]knownRuntime {
	t.Helper()
	shippedRT, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	out := map[runtimeKey]knownRuntime{{trainer.ClusterTrainingRuntimeKind, shippedRT.Name}: {shippedRT, fabric.TCPXORules, rulesOf(shippedRT)}}
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range fabric.GIB.MachineTypes {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt.Name})
		if err != nil {
			t.Fatal(err)
		}
		out[runtimeKey{trainer.ClusterTrainingRuntimeKind, rt.Name}] = knownRuntime{rt, fabric.GIB.Rules(), in.GIB.GuestRules(mt.Name)}
	}
	return out
}

// upstreamRuntimes reads the runtimes the linked trainer release ships
// (manifests/base/runtimes/*.yaml of its module).
func upstreamRuntimes(t *testing.T) map[runtimeKey]knownRuntime {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	// The module path is all lower case, so its escaped form is itself.
	dir := filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(linkedtrainer.Module)+"@"+linkedtrainer.Version(), "manifests", "base", "runtimes")
	files, err := filepath.Glob(filepath.Join(dir, "*_distributed.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no upstream runtimes in %s (%v)", dir, err)
	}
	known := map[runtimeKey]knownRuntime{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rt trainer.ClusterTrainingRuntime
		if err := yaml.UnmarshalStrict(data, &rt); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if rt.Kind != trainer.ClusterTrainingRuntimeKind {
			t.Fatalf("%s: kind %q, want %s", f, rt.Kind, trainer.ClusterTrainingRuntimeKind)
		}
		known[runtimeKey{rt.Kind, rt.Name}] = knownRuntime{obj: &rt, rs: fabric.TCPXORules}
	}
	return known
}

func checkBlock(t *testing.T, v *schema.Validator, known map[runtimeKey]knownRuntime, b markdown.Block) {
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
		v, _, err := realizeExample(r.Defaulted.Object, known)
		if err != nil {
			t.Fatalf("realize: %v", err)
		}
		if v == nil {
			continue
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

// realizeExample realizes a TrainJob against the runtime it references,
// which must be known (shipped, defined on the same page, or upstream's), and
// a TrainingRuntime with a TrainJob whose spec.trainer is empty (the smallest
// TrainJob that launches: the example is the runtime, not the job). It
// returns the TrainJob, whose shape other trainer versions recorded. Other
// kinds have nothing to realize.
func realizeExample(obj map[string]any, known map[runtimeKey]knownRuntime) (*realize.Verdict, *trainer.TrainJob, error) {
	switch obj["kind"] {
	case trainer.TrainJobKind:
		var job trainer.TrainJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &job); err != nil {
			return nil, nil, err
		}
		ref := job.Spec.RuntimeRef
		rt, ok := known[runtimeKey{ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind), ref.Name}]
		if !ok {
			names := slices.Sorted(func(yield func(string) bool) {
				for k := range known {
					if !yield(k.kind + "/" + k.name) {
						return
					}
				}
			})
			return nil, nil, fmt.Errorf("TrainJob %s references %s %q, which is neither shipped, defined on this page nor upstream's (known: %s)",
				job.Name, ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind), ref.Name, strings.Join(names, ", "))
		}
		v, err := realize.LintWith(context.Background(), rt.obj, &job, rt.rs, rt.rules)
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
		return shipped.Facts().DefaultGuestRules
	}
	return runtimes.RulesFor(shipped.Facts(), wiring.Of(tpl, runtimes.NodeContainer).NodeEnv)
}

// A TrainJob whose runtimeRef names no runtime the page can know (a typo of
// the shipped one) is an error, not an example with nothing to check.
func TestExampleOfUnknownRuntimeFails(t *testing.T) {
	shippedRT, err := shipped.Runtime()
	if err != nil {
		t.Fatal(err)
	}
	known := map[runtimeKey]knownRuntime{{trainer.ClusterTrainingRuntimeKind, shippedRT.Name}: {shippedRT, fabric.TCPXORules, rulesOf(shippedRT)}}
	job := map[string]any{
		"apiVersion": trainer.GroupVersion.String(), "kind": trainer.TrainJobKind,
		"metadata": map[string]any{"name": "typo", "namespace": "default"},
		"spec":     map[string]any{"runtimeRef": map[string]any{"name": shippedRT.Name + "x"}},
	}
	v, _, err := realizeExample(job, known)
	if err == nil || !strings.Contains(err.Error(), `"`+shippedRT.Name+`x"`) {
		t.Fatalf("verdict %v, error %v; want an error naming the unknown runtime", v, err)
	}
}
