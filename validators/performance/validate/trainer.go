package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/validators/performance/trainerinstall"
)

// maxTrainerManifests bounds what --trainer-manifests reads. Trainer v2.2.0
// with its JobSet is about 1.5 MiB of YAML, almost all CRD schema.
const maxTrainerManifests = inputfile.MaxManifests

// requiredCRDs are the CRDs an install must create for Observe to find a
// complete trainer afterwards (lifecycle's trainer parts).
var requiredCRDs = []string{
	"trainjobs.trainer.kubeflow.org",
	"trainingruntimes.trainer.kubeflow.org",
	"clustertrainingruntimes.trainer.kubeflow.org",
	"jobsets.jobset.x-k8s.io",
}

// kustomizeHint says how to produce the file --trainer-manifests wants: the
// trainer's own "manager" overlay at the pinned tag, which bundles the JobSet
// release the trainer was tested with. It is rendered by the user rather than
// fetched here because the overlay pulls JobSet from GitHub, and the
// validator does not download what it installs.
func kustomizeHint(b *bom.BOM) string {
	return fmt.Sprintf("kubectl kustomize 'https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=%s' > kubeflow-trainer-%s.yaml",
		b.Trainer.Version, b.Trainer.Version)
}

// loadTrainerManifests reads the pinned trainer's install manifests and
// checks that they are the pinned release, complete enough to become a
// trainer Observe calls complete: the three trainer CRDs and the JobSet CRD,
// the controller Deployment running the BOM's controller image, and the
// JobSet controller at the BOM's JobSet version. A file of another release
// would be installed and then torn down with the run's result claiming the
// pinned trainer, so any doubt is an error. The objects come back in apply
// order: Namespaces, then CRDs, then the rest in file order.
func loadTrainerManifests(path string, b *bom.BOM) ([]*unstructured.Unstructured, error) {
	data, err := inputfile.Read(path, inputfile.Spec{What: "--trainer-manifests", Max: maxTrainerManifests})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w; render them with: %s", err, kustomizeHint(b))
	case err != nil:
		return nil, err
	}
	objs, err := decodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("--trainer-manifests %s: %w", path, err)
	}
	if err := checkPinned(objs, b); err != nil {
		return nil, fmt.Errorf("--trainer-manifests %s is not the pinned Kubeflow Trainer %s: %w; render the pinned release with: %s", path, b.Trainer.Version, err, kustomizeHint(b))
	}
	return applyOrder(objs), nil
}

// renderedTrainer is where the install comes from without
// --trainer-manifests, for the plan.
const renderedTrainer = "the trainer's and JobSet's Go modules (manifests/overlays/manager, rendered offline with kustomize)"

// renderPinnedTrainer renders the pinned trainer's install from the Go
// modules this binary links (trainerinstall), checked like a
// --trainer-manifests file, plus: the linked trainer module must be the
// BOM's release, which the overlay's public ConfigMap names.
func renderPinnedTrainer(b *bom.BOM) ([]*unstructured.Unstructured, error) {
	src, err := trainerinstall.LinkedSources()
	if err != nil {
		return nil, err
	}
	data, err := trainerinstall.Render(src, trainerinstall.Images{Trainer: b.Trainer.ControllerImage, JobSetTag: b.JobSet.ControllerVersion})
	if err != nil {
		return nil, err
	}
	objs, err := decodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("the rendered install: %w", err)
	}
	if err := checkPinned(objs, b); err != nil {
		return nil, fmt.Errorf("the rendered install is not the pinned Kubeflow Trainer %s: %w", b.Trainer.Version, err)
	}
	version := ""
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "kubeflow-trainer-public" {
			version, _, _ = unstructured.NestedString(o.Object, "data", "kubeflow_trainer_version")
		}
	}
	if version != b.Trainer.Version {
		return nil, fmt.Errorf("the linked trainer module's manifests are release %q, the BOM pins %s", version, b.Trainer.Version)
	}
	return applyOrder(objs), nil
}

// applyOrder sorts Namespaces first, then CRDs, then the rest in order.
func applyOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	rank := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return objs
}

// decodeManifests splits multi-document YAML (or JSON) into objects, each
// required to name its apiVersion, kind and name, as an install must.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(m) == 0 {
			continue // an empty document between separators
		}
		o := &unstructured.Unstructured{Object: m}
		switch {
		case o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "":
			return nil, fmt.Errorf("document %d has no apiVersion, kind or metadata.name: every object to install must name itself", doc)
		case strings.HasSuffix(o.GetKind(), "List"):
			return nil, fmt.Errorf("document %d is a %s: give the objects as separate YAML documents, as kubectl kustomize prints them", doc, o.GetKind())
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, errors.New("no objects in the file")
	}
	return objs, nil
}

func checkPinned(objs []*unstructured.Unstructured, b *bom.BOM) error {
	crds := map[string]bool{}
	var images []string
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds[o.GetName()] = true
		case "Deployment":
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				return fmt.Errorf("Deployment %s/%s does not decode: %w", o.GetNamespace(), o.GetName(), err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
	}
	var probs []string
	for _, name := range requiredCRDs {
		if !crds[name] {
			probs = append(probs, "it has no CustomResourceDefinition "+name)
		}
	}
	if !slices.Contains(images, b.Trainer.ControllerImage) {
		probs = append(probs, fmt.Sprintf("no Deployment runs the pinned controller image %s (images: %s)", b.Trainer.ControllerImage, orNone(images)))
	}
	if !slices.ContainsFunc(images, func(img string) bool { return isJobSet(img, b.JobSet.ControllerVersion) }) {
		probs = append(probs, fmt.Sprintf("no Deployment runs the JobSet controller %s the trainer is pinned with (images: %s)", b.JobSet.ControllerVersion, orNone(images)))
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// isJobSet reports whether img is a JobSet controller image (a repository
// named jobset, such as registry.k8s.io/jobset/jobset) tagged version.
func isJobSet(img, version string) bool {
	base, _, _ := strings.Cut(img, "@")
	i := strings.LastIndexByte(base, ':')
	if i < 0 || strings.Contains(base[i+1:], "/") {
		return false
	}
	repo, tag := base[:i], base[i+1:]
	return tag == version && (repo == "jobset" || strings.HasSuffix(repo, "/jobset"))
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
