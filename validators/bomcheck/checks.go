package bomcheck

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

const regenerate = "run `go generate ./...` and commit the result"

// Checks is the ordered table of invariants.
func Checks() []Check {
	return []Check{
		{"generated-matches-bom", "generated provenance pins the BOM's installer", checkGeneratedMatchesBOM},
		{"daemon-is-published-pair", "the BOM daemon is the published pair of the BOM installer", checkPublishedPair},
		{"images-pinned-from-bom", "every manifest image is digest-pinned and is the BOM's entry for its role", checkImages},
		{"shipped-env-is-profile-plus-overrides", "the shipped env is the extracted profile with the reviewed overrides", checkShippedEnv},
		{"profile-files-shipped", "every file the profile points into the library directory is shipped", checkProfileFiles},
		{"published-differences-decided", "every difference from the published NCCL list has a recorded decision", checkPublishedDifferences},
		{"benchmark-wiring-matches", "the benchmark runtime's wiring equals the shipped runtime's", checkBenchmarkWiring},
		{"runtimes-keep-webhook-validation", "no shipped runtime opts out of the trainer's validating webhook", checkWebhookValidation},
		requirementsCheck,
		{"generated-output-reproducible", "re-extracting from the recorded source reproduces the generated code and goldens", checkReproducible},
		{"no-retired-daemon-flags", "no tcpxo-daemon argument is a flag the pinned daemon retired or rejects", checkRetiredFlags},
		{"trainer-version-matches-gomod", "the BOM's trainer version is the one go.mod links", checkTrainerVersion},
		{"daemon-invocation-runs-image-script", "the shipped tcpxo-daemon command runs the entry script the daemon image carries", checkDaemonInvocation},
		{"shipped-env-keeps-the-fabric", "the shipped env of every profile, overrides applied, keeps the guest config's rules and the fabric settings, and no shipped capability carries the CAP_ prefix", checkKeepsFabric},
		{"worker-cuda-matches-installer", "the worker image's CUDA major is the one the plugin libraries' needed libcudart names, if any", checkWorkerCUDA},
		{"admission-policy-is-the-rule-set", "the committed admission policies are what the current fabric rule set generates", checkAdmissionPolicy},
	}
}

// need returns a failing result when an input the check reads did not load.
func need(files []string, errs ...error) *Result {
	if err := errors.Join(errs...); err != nil {
		r := fail(files, "fix the file named in the error", "cannot run: %v", err)
		return &r
	}
	return nil
}

// walkContainers calls fn with every container and init container under v,
// and where it is (containers/NAME or initContainers/NAME).
func walkContainers(v any, fn func(map[string]any, string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, key := range []string{"containers", "initContainers"} {
			if list, ok := x[key].([]any); ok {
				for _, c := range list {
					if cm, ok := c.(map[string]any); ok {
						name, _ := cm["name"].(string)
						fn(cm, key+"/"+name)
					}
				}
			}
		}
		for _, child := range x {
			walkContainers(child, fn)
		}
	case []any:
		for _, child := range x {
			walkContainers(child, fn)
		}
	}
}

// repository strips the tag and digest from a reference.
func repository(ref string) string {
	repo, _, _ := bom.SplitReference(ref)
	return repo
}

// shippedPod decodes the runtime golden's node pod.
func shippedPod(t *Tree) (*corev1.PodTemplateSpec, error) {
	m := t.manifest(runtimes.GoldenRuntime)
	if m == nil {
		return nil, fmt.Errorf("%s did not load: %v", runtimes.GoldenRuntime, t.ManifestErrs[runtimes.GoldenRuntime])
	}
	for _, o := range m.Objects {
		if o.GetKind() == "ClusterTrainingRuntime" {
			return nodePod(o)
		}
	}
	return nil, fmt.Errorf("%s holds no ClusterTrainingRuntime", runtimes.GoldenRuntime)
}

func nodePod(o *unstructured.Unstructured) (*corev1.PodTemplateSpec, error) {
	jobs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "replicatedJobs")
	for _, j := range jobs {
		jm, _ := j.(map[string]any)
		if jm["name"] != runtimes.NodeContainer {
			continue
		}
		raw, found, _ := unstructured.NestedMap(jm, "template", "spec", "template")
		if !found {
			break
		}
		var pod corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &pod); err != nil {
			return nil, err
		}
		return &pod, nil
	}
	return nil, fmt.Errorf("%s/%s has no %q replicated job with a pod template", o.GetKind(), o.GetName(), runtimes.NodeContainer)
}
