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
		"The chart's version and appVersion are this tcpxogen's version (tcpxogen version). Files of the chart are replaced all or nothing; other files in DIR are left alone.", s)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	fabric := fs.String("fabric", "", fabricHelp()+" (required)")
	if err := cli.ParseArgs(fs, args, 1, "the chart's directory, DIR"); err != nil {
		return err
	}
	f, err := lookupFabric(*fabric)
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
	fs := cli.NewFlags("render kustomize", "render kustomize --fabric "+strings.Join(deploy.Names(), "|")+" (--interfaces eth1=NET,...,eth8=NET | --values FILE) [--node-selector k=v[,k=v]]... [--toleration key[=value]:Effect]... [--worker-image REF] DIR\n\n"+
		"Writes the fabric's kustomize base into DIR: the runtime and the node components, exactly as render runtime and render components print them for the same flags, and a kustomization.yaml listing them that documents the one field an overlay patches to change the GPU-NIC networks. "+
		"Files of the base are replaced all or nothing; other files in DIR are left alone.", s)
	root := fs.String("root", "", "repository root whose bom/ to read (default: the checkout around the working directory, else the inputs built into tcpxogen)")
	fabric := fs.String("fabric", "", fabricHelp()+" (required)")
	ifaces := fs.String("interfaces", "", "GPU-NIC to GKE Network mapping: eth1=<network>,...,eth8=<network> (required unless --values)")
	values := fs.String("values", "", "YAML file with tcpxoInterfaces: [{interfaceName, network}, ...] (tcpxogen discover -o values)")
	selectors := fs.StringArray("node-selector", nil, nodeSelectorHelp)
	tolerations := fs.StringArray("toleration", nil, "toleration key[=value]:Effect (repeatable)")
	worker := fs.String("worker-image", "", "worker image, pinned by digest (default: the BOM's worker image)")
	if err := cli.ParseArgs(fs, args, 1, "the base's directory, DIR"); err != nil {
		return err
	}
	f, err := lookupFabric(*fabric)
	if err != nil {
		return err
	}
	opts, err := runtimeOptions(*ifaces, *values, *selectors, *tolerations, false)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	in, err := inputs(*root)
	if err != nil {
		return err
	}
	c := deploy.Cluster{Interfaces: opts.Interfaces.Bindings(), NodeSelector: opts.NodeSelector, Tolerations: opts.Tolerations, WorkerImage: *worker}
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
