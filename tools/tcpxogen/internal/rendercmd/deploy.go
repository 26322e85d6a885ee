package rendercmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/buildinfo"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/runtimes/deploy"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// fabricHelp documents --fabric from the fabric table.
func fabricHelp() string {
	return "fabric: " + strings.Join(deploy.Names(), " or ")
}

// renderChart writes a fabric's Helm chart into DIR.
func renderChart(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render chart", "render chart --fabric "+strings.Join(deploy.Names(), "|")+" DIR\n\n"+
		"Writes the fabric's Helm chart into DIR: the runtime, the node components and the NCCL benchmark (off unless benchmark.enabled) as render runtime, render components and render benchmark print them, with the GPU-NIC mapping, node selector, tolerations and worker image taken from the values. "+
		"values.yaml takes the mapping in the form render runtime --values reads, so `tcpxogen discover -o values > values.yaml` is a values file for `helm install -f values.yaml`; values.schema.json refuses a bad mapping at helm install and helm template. "+
		"The gib chart holds a runtime per machine type, "+fabric.GIB.RuntimeFor("<machine type>")+", each rendered when the machineTypes value lists it (default: every one), the mapping under rdmaInterfaces (eth2..eth9, and eth1 for the gVNIC network if the cluster has one), the installer DaemonSet, no benchmark, and no worker image unless workerImage sets one. "+
		"The chart's version and appVersion are this tcpxogen's version (tcpxogen version). Files of the chart are replaced all or nothing; other files in DIR are left alone.", s)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	fabricName := fs.String("fabric", "", fabricHelp()+" (required)")
	if err := cli.ParseArgs(fs, args, 1, "the chart's directory, DIR"); err != nil {
		return err
	}
	f, err := lookupFabric(*fabricName)
	if err != nil {
		return err
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	files, err := deploy.Chart(in, f, buildinfo.Version())
	if err != nil {
		return err
	}
	return writeDir(s, "render chart", fs.Arg(0), files)
}

// renderKustomize writes a fabric's kustomize base for a cluster into DIR.
func renderKustomize(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("render kustomize", "render kustomize --fabric tcpxo (--interfaces eth1=NET,...,eth8=NET | --values FILE) [--node-selector k=v[,k=v]]... [--toleration key[=value]:Effect]... [--worker-image REF] DIR\n"+
		"       render kustomize --fabric gib [--machine-type "+strings.Join(fabric.GIB.MachineTypeNames(), "|")+"]... (--interfaces eth2=NET,...,eth9=NET[,eth1=NET] | --values FILE) [--node-selector k=v[,k=v]]... [--toleration key[=value]:Effect]... [--worker-image REF] DIR\n\n"+
		"Writes the fabric's kustomize base into DIR: the runtime and the node components, exactly as render runtime and render components print them for the same flags, and a kustomization.yaml listing them that documents the one field an overlay patches to change the GPU-NIC networks. "+
		"gIB ships a runtime per machine type, "+fabric.GIB.RuntimeFor("<machine type>")+": the base holds one for each --machine-type, every machine type without one. "+
		"Files of the base are replaced all or nothing; other files in DIR are left alone.", s)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	fabricName := fs.String("fabric", "", fabricHelp()+" (required)")
	machineTypes := fs.StringArray("machine-type", nil, "with --fabric gib: a machine type to ship a runtime for, "+strings.Join(fabric.GIB.MachineTypeNames(), " or ")+" (repeatable; default: every one)")
	ifaces := fs.String("interfaces", "", "the NIC to GKE Network mapping, required unless --values: tcpxo eth1=<network>,...,eth8=<network>; gib eth2=<network>,...,eth9=<network>, and eth1=<network> for the gVNIC network if the cluster has one")
	values := fs.String("values", "", "YAML file with the mapping: tcpxoInterfaces: [{interfaceName, network}, ...] (tcpxogen discover -o values), or for gib rdmaInterfaces: [...]")
	selectors := fs.StringArray("node-selector", nil, nodeSelectorHelp+"; with --fabric gib none by default: each runtime selects its machine type's nodes by node affinity")
	tolerations := fs.StringArray("toleration", nil, "toleration key[=value]:Effect (repeatable)")
	worker := fs.String("worker-image", "", "worker image, pinned by digest (tcpxo's default: the BOM's worker image; gib's runtimes have none unless given, and each TrainJob sets spec.trainer.image)")
	if err := cli.ParseArgs(fs, args, 1, "the base's directory, DIR"); err != nil {
		return err
	}
	f, err := lookupFabric(*fabricName)
	if err != nil {
		return err
	}
	if len(*machineTypes) > 0 {
		if !f.PerMachineType() {
			return cli.BadInput("--machine-type is for a fabric with a runtime per machine type (--fabric %s); the %s runtime serves %s only", fabric.GIB.Name, f.Name(), strings.Join(f.Registry.MachineTypeNames(), ", "))
		}
		if _, err := f.MachineTypes(*machineTypes); err != nil {
			return cli.BadInput("--machine-type: %w", err)
		}
	}
	c := deploy.Cluster{MachineTypes: *machineTypes, WorkerImage: *worker}
	switch {
	case *ifaces != "" && *values != "":
		return cli.BadInput("give the mapping once: --interfaces or --values, not both")
	case *values != "":
		data, err := inputfile.Read(*values, inputfile.Spec{What: "--values", Max: inputfile.MaxData})
		if err != nil {
			return cli.BadInput("%w", err)
		}
		m, err := f.Layout.ParseYAML(data)
		if err != nil {
			return cli.BadInput("%s: %w", *values, err)
		}
		c.Interfaces = m.Bindings()
	default:
		m, err := f.Layout.Parse(*ifaces)
		if err != nil {
			return cli.BadInput("--interfaces: %w", err)
		}
		c.Interfaces = m.Bindings()
	}
	if c.NodeSelector, err = parseSelectors(*selectors); err != nil {
		return cli.BadInput("%w", err)
	}
	if c.Tolerations, err = parseTolerations(*tolerations); err != nil {
		return cli.BadInput("%w", err)
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	files, err := deploy.Kustomize(in, f, c, false)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	return writeDir(s, "render kustomize", fs.Arg(0), files)
}

func lookupFabric(name string) (deploy.Fabric, error) {
	if name == "" {
		return deploy.Fabric{}, cli.BadInput("--fabric is required: want one of %s", strings.Join(deploy.Names(), ", "))
	}
	f, err := deploy.Lookup(name)
	if err != nil {
		return deploy.Fabric{}, cli.BadInput("--fabric: %w", err)
	}
	return f, nil
}

// writeDir writes files under dir all or nothing and says what it wrote.
func writeDir(s cli.Streams, cmd, dir string, files map[string][]byte) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return cli.BadInput("%s: %s is not a directory", cmd, dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	set := atomicfile.Set{}
	for rel, data := range files {
		set[filepath.Join(dir, filepath.FromSlash(rel))] = data
	}
	changed, err := set.Commit(0o644)
	if err != nil {
		if errors.Is(err, atomicfile.ErrRefused) {
			return cli.BadInput("%s: %w", cmd, err)
		}
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(s.Err, "%s: %d files in %s, %d changed\n", cmd, len(files), dir, len(changed))
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		fmt.Fprintln(s.Out, filepath.Join(dir, filepath.FromSlash(p)))
	}
	return nil
}
