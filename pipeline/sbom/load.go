package sbom

import (
	"fmt"
	"path/filepath"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// LoadInputs reads the tree at root: bom.yaml (with releases.yaml and
// overrides.yaml, which the builders need), the committed generated file,
// and the shipped manifests built from them by the same typed builders that
// render the goldens.
//
// The facts come from parsing the committed generated file, not from the
// constants compiled into this binary, for the reason the coupling check
// does the same: with --root pointing at another checkout, the SBOM must
// describe that tree, not the one tcpxogen was built from.
func LoadInputs(root string) (Inputs, error) {
	genPath := filepath.Join(root, filepath.FromSlash(generated.FactsFile))
	src, err := inputfile.Read(genPath, inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if err != nil {
		return Inputs{}, fmt.Errorf("read the generated facts: %w (run go generate ./...)", err)
	}
	f, err := emit.Parse(generated.FactsFile, src)
	if err != nil {
		return Inputs{}, fmt.Errorf("read the generated facts: %w", err)
	}
	rin, err := runtimes.LoadInputs(root, *f)
	if err != nil {
		return Inputs{}, err
	}
	// Which images a runtime pulls does not depend on the cluster's network
	// names, so the example mapping the goldens use stands in for them.
	rt, err := runtimes.TorchRuntime(rin, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return Inputs{}, fmt.Errorf("build the shipped runtime: %w", err)
	}
	in := Inputs{BOM: rin.BOM, Runtime: RuntimeManifest(rt), Facts: f}
	for _, ds := range runtimes.Components(rin) {
		in.Components = append(in.Components, DaemonSetManifest(ds))
	}
	// The gIB fabric's components pull its installer; its runtimes ship no
	// image (each TrainJob brings one), so they add none.
	gibPath := filepath.Join(root, filepath.FromSlash(generated.GIBFactsFile))
	gsrc, err := inputfile.Read(gibPath, inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if err != nil {
		return Inputs{}, fmt.Errorf("read the generated gIB facts: %w (run go generate ./...)", err)
	}
	if rin.GIB, err = parseGIB(gsrc); err != nil {
		return Inputs{}, err
	}
	for _, ds := range runtimes.RDMAComponents(rin) {
		in.Components = append(in.Components, DaemonSetManifest(ds))
	}
	return in, nil
}

func parseGIB(src []byte) (facts.Facts, error) {
	f, err := emit.ParseLiteral(generated.GIBFactsFile, src)
	if err != nil {
		return facts.Facts{}, fmt.Errorf("read the generated gIB facts: %w", err)
	}
	return *f, nil
}

// RuntimeManifest describes a ClusterTrainingRuntime with the images of
// every replicated job's pod template.
func RuntimeManifest(rt *trainer.ClusterTrainingRuntime) Manifest {
	m := Manifest{APIVersion: rt.APIVersion, Kind: rt.Kind, Name: rt.Name}
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		m.Images = append(m.Images, PodImages(&rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec)...)
	}
	return m
}

// DaemonSetManifest describes a DaemonSet with the images of its pod template.
func DaemonSetManifest(ds *appsv1.DaemonSet) Manifest {
	return Manifest{
		APIVersion: ds.APIVersion, Kind: ds.Kind, Namespace: ds.Namespace, Name: ds.Name,
		Images: PodImages(&ds.Spec.Template.Spec),
	}
}

// PodImages lists the image of every container a pod starts: init
// containers (native sidecars such as the tcpxo-daemon are init containers),
// containers, and ephemeral containers, in that order, repeats included.
func PodImages(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.InitContainers {
		out = append(out, c.Image)
	}
	for _, c := range spec.Containers {
		out = append(out, c.Image)
	}
	for _, c := range spec.EphemeralContainers {
		out = append(out, c.Image)
	}
	return out
}
