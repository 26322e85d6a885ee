package docgen

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// GIBGuideDoc is the workload guide of the GPUDirect-RDMA (NCCL/gIB)
// fabric; its generated sections are kept current here.
const GIBGuideDoc = "docs/gib-workloads.md"

// gibGuidePage refreshes the gIB guide's generated sections from the
// fabric registry, the builders and the gIB facts: the runtime of each
// machine type, and the table of what a workload may tune.
func gibGuidePage(root string, in *runtimes.Inputs) ([]byte, error) {
	doc, err := inputfile.Read(filepath.Join(root, filepath.FromSlash(GIBGuideDoc)), inputfile.Spec{Max: inputfile.MaxSource})
	if err != nil {
		return nil, err
	}
	machines, err := GIBRuntimes(in)
	if err != nil {
		return nil, err
	}
	if doc, err = Splice(doc, "gib-runtimes", machines); err != nil {
		return nil, fmt.Errorf("%s: %w", GIBGuideDoc, err)
	}
	rows, err := GIBRuleRows(in)
	if err != nil {
		return nil, err
	}
	if doc, err = Splice(doc, "gib-fabric-rules", FabricRules(fabric.GIBRules, rows)); err != nil {
		return nil, fmt.Errorf("%s: %w", GIBGuideDoc, err)
	}
	return doc, nil
}

// GIBRuntimes is the guide's table of the gIB runtimes: one per machine
// type the fabric serves, with the node labels its affinity requires, the
// tuner config its env names (read off the built env) and the GKE floor
// (bom/releases.yaml), then what the pinned release asks of the worker
// image and the nodes.
func GIBRuntimes(in *runtimes.Inputs) (string, error) {
	var b strings.Builder
	b.WriteString("| machine type (`" + fabric.InstanceTypeLabel + "`) | accelerator (`" + fabric.AcceleratorLabel + "`) | runtime | `NCCL_TUNER_CONFIG_PATH` | GKE at least |\n|---|---|---|---|---|\n")
	for _, mt := range fabric.GIB.MachineTypes {
		env, err := in.RDMAEnv(mt.Name)
		if err != nil {
			return "", err
		}
		tuner := ""
		if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "NCCL_TUNER_CONFIG_PATH" }); i >= 0 {
			tuner = env[i].Value
		}
		floor, ok := in.Releases.GKEFloor(mt.Name)
		if !ok {
			return "", fmt.Errorf("%s has no gibMachineTypes row for %s: add its GKE floor with its source", in.Releases.Path, mt.Name)
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %s | `%s` |\n", mt.Name, mt.Accelerator, fabric.GIB.RuntimeFor(mt.Name), cell(tuner), floor.GKE)
	}
	rel, ok := in.Releases.GIBReleaseFor(in.GIB.PluginVersion)
	if !ok || rel.CUDA == "" || rel.Driver == "" {
		return "", fmt.Errorf("%s has no gibReleases row with cuda and driver for the pinned gIB installer %s: add what its release notes state", in.Releases.Path, in.GIB.PluginVersion)
	}
	fmt.Fprintf(&b, "\nThe pinned installer is `%s` (NCCL `%s`). Its release notes name CUDA `%s` as the minimum CUDA runtime, so "+
		"every worker image must be built for CUDA `%s` or later, and driver `%s` as the minimum on the nodes "+
		"(`bom/releases.yaml`, from Google's NCCL/gIB release notes).\n", in.GIB.PluginVersion, in.GIB.NCCLVersion, rel.CUDA, rel.CUDA, rel.Driver)
	return b.String(), nil
}

// GIBRuleRows are the rows of the gIB table of variables: the gIB rule set
// applied to each machine type's shipped env and the installer's checker
// rules for it. One table serves every machine type: a value that differs
// between them is shown per machine type. Machine types whose tables
// differ in anything but values (a variable one ships and another does
// not, or another class) are an error: the page would need a table each.
func GIBRuleRows(in *runtimes.Inputs) ([]RuleRow, error) {
	var rows []RuleRow
	for i, mt := range fabric.GIB.MachineTypes {
		env, err := in.RDMAEnv(mt.Name)
		if err != nil {
			return nil, err
		}
		entries := fabric.GIBRules.Table(env, in.GIB.GuestRules(mt.Name))
		if i == 0 {
			rows = Rows(entries)
			for j := range rows {
				rows[j].PerMachine = []MachineValue{{mt.Name, rows[j].Value}}
			}
			continue
		}
		if len(entries) != len(rows) {
			return nil, fmt.Errorf("the gIB table of %s has %d rows, %s's %d: the machine types differ in the variables they ship, and %s has one table for all; give each machine type its own",
				mt.Name, len(entries), fabric.GIB.MachineTypes[0].Name, len(rows), GIBGuideDoc)
		}
		for j, e := range entries {
			r := &rows[j]
			if e.Name != r.Name || e.Class != r.Class || e.Why != r.Why {
				return nil, fmt.Errorf("the gIB table's row %d is %s (%s) on %s but %s (%s) on %s: %s has one table for all machine types; give each its own",
					j+1, e.Name, e.Class, mt.Name, r.Name, r.Class, fabric.GIB.MachineTypes[0].Name, GIBGuideDoc)
			}
			r.PerMachine = append(r.PerMachine, MachineValue{mt.Name, e.Value})
		}
	}
	for j := range rows {
		r := &rows[j]
		if !slices.ContainsFunc(r.PerMachine, func(m MachineValue) bool { return m.Value != r.Value }) {
			r.PerMachine = nil
		}
	}
	return rows, nil
}
