// Package shipped is what this binary ships: the builders of package
// runtimes fed with the facts compiled into it (generated/tcpxo) and the
// reviewed inputs of the checkout, or the ones embedded in the binary when
// it runs outside any checkout. It is the only builder package that links
// the generated constants, so the pipeline that regenerates them (which
// imports runtimes, never shipped) still builds when they are missing or
// hand-broken.
package shipped

import (
	"os"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated/gib"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Facts are the TCPXO facts compiled into this binary (generated/tcpxo).
// bom-check instead builds from the facts it parses out of the committed
// generated file, so it judges the tree it is pointed at rather than the
// one it was compiled from.
func Facts() facts.Facts { return tcpxo.Facts() }

// GIBFacts are the gIB facts compiled into this binary (generated/gib).
func GIBFacts() facts.Facts { return gib.Facts() }

// LoadInputs reads the reviewed inputs under root, with the compiled-in
// facts.
func LoadInputs(root string) (*runtimes.Inputs, error) {
	in, err := runtimes.LoadInputs(root, Facts())
	if err != nil {
		return nil, err
	}
	in.GIB = GIBFacts()
	return in, nil
}

// Inputs loads the reviewed inputs of the checkout found upwards from the
// working directory, or, outside any checkout (a binary installed on its
// own), the ones built into the binary.
func Inputs() (*runtimes.Inputs, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if root, err := bom.FindRoot(wd); err == nil {
		return LoadInputs(root)
	}
	b, r, o, err := bom.LoadEmbedded()
	if err != nil {
		return nil, err
	}
	return &runtimes.Inputs{Facts: Facts(), GIB: GIBFacts(), BOM: b, Releases: r, Overrides: o}, nil
}

// InputsAt is a command's --root: the reviewed inputs of the checkout at
// root (its bom/ found upwards from it), else, for "", Inputs.
func InputsAt(root string) (*runtimes.Inputs, error) {
	if root == "" {
		return Inputs()
	}
	r, err := bom.ResolveRoot(root)
	if err != nil {
		return nil, err
	}
	return LoadInputs(r)
}

// Runtime builds torch-distributed-tcpxo as the goldens carry it (example
// network names), from Inputs: what proofs and reports realize when they
// mean "what ships".
func Runtime() (*trainer.ClusterTrainingRuntime, error) {
	in, err := Inputs()
	if err != nil {
		return nil, err
	}
	return runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
}
