package runtimes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// checkAim refuses a node selector that aims runtime, fabric f's for the
// machine types serves, at machines it does not serve: an instance-type or
// accelerator term naming another machine type's value. The runtime's pods
// would schedule there and find none of the fabric's NICs (the TCPXO
// runtime on A3 Ultra, the gIB one on A3 Mega, either on A3 High): NCCL
// falls back to TCP with no error, the hazard AICR issue #2290 records. A
// term on any other label narrows the pool and is not judged.
func checkAim(runtime string, f fabric.Fabric, serves []fabric.MachineType, sel map[string]string) error {
	terms := []struct {
		label string
		of    func(fabric.MachineType) string
	}{
		{fabric.InstanceTypeLabel, func(m fabric.MachineType) string { return m.Name }},
		{fabric.AcceleratorLabel, func(m fabric.MachineType) string { return m.Accelerator }},
	}
	var want []string
	for _, m := range serves {
		want = append(want, m.Name+" ("+m.Accelerator+")")
	}
	for _, t := range terms {
		v, ok := sel[t.label]
		if !ok || slices.ContainsFunc(serves, func(m fabric.MachineType) bool { return t.of(m) == v }) {
			continue
		}
		return fmt.Errorf("the node selector %s=%s aims %s at %s, but it is the %s runtime of %s only: its pods would run there without the fabric's NICs and NCCL would fall back to TCP; drop the term, or select %s nodes",
			t.label, v, runtime, aimedAt(t.label, v), f.Title, strings.Join(want, " and "), strings.Join(machineNames(serves), " or "))
	}
	return nil
}

// aimedAt names what a selector term's value is: a machine type and the
// fabric serving it, or why none does.
func aimedAt(label, v string) string {
	if label == fabric.InstanceTypeLabel {
		if g, err := fabric.ForMachineType(v); err == nil {
			return v + ", which --fabric " + g.Name + " serves"
		} else if why, ok := fabric.Unserved[v]; ok {
			return v + " (" + why + ")"
		}
		return v + ", a machine type no fabric here serves"
	}
	for _, g := range fabric.Fabrics() {
		for _, m := range g.MachineTypes {
			if m.Accelerator == v {
				return "the " + v + " nodes (" + m.Name + ", which --fabric " + g.Name + " serves)"
			}
		}
	}
	if why, ok := fabric.UnservedAccelerators[v]; ok {
		return "the " + v + " nodes (" + why + ")"
	}
	return "the " + v + " nodes, which no fabric here serves"
}

func machineNames(ms []fabric.MachineType) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}
