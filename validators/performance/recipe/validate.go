package recipe

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/tcpxogen/tcpxogen/internal/bandwidth"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// choice is one allowed value of a closed field, with what it means for the
// messages that list them.
type choice struct{ value, meaning string }

func values(cs []choice) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.value
	}
	return out
}

// criteria are the recipe's criteria fields, each required and closed. The
// values are those the recipe format knows; whether the benchmark applies to
// a combination (it needs GKE and A3 Mega H100 nodes) is the validator's
// decision, not the reader's.
var criteria = []struct {
	key     string
	get     func(*Criteria) string
	choices []choice
}{
	{"service", func(c *Criteria) string { return c.Service }, []choice{
		{"gke", "Google Kubernetes Engine"},
		{"eks", "Amazon Elastic Kubernetes Service"},
		{"aks", "Azure Kubernetes Service"},
	}},
	{"accelerator", func(c *Criteria) string { return c.Accelerator }, []choice{
		{"h100", "NVIDIA H100 (GKE A3 Mega: a3-megagpu-8g)"},
		{"h200", "NVIDIA H200"},
		{"b200", "NVIDIA B200"},
		{"gb200", "NVIDIA GB200"},
		{"a100", "NVIDIA A100"},
	}},
	{"intent", func(c *Criteria) string { return c.Intent }, []choice{
		{"training", "distributed training"},
		{"inference", "inference serving"},
	}},
	{"platform", func(c *Criteria) string { return c.Platform }, []choice{
		{"kubeflow", "Kubeflow Trainer v2"},
	}},
}

// criterionValues returns the allowed values of a criteria field.
func criterionValues(key string) []string {
	for _, c := range criteria {
		if c.key == key {
			return values(c.choices)
		}
	}
	return nil
}

// components are the component names a recipe may declare.
var components = []choice{
	{ComponentTrainer, "Kubeflow Trainer v2: its CRDs and controller"},
	{"nccl-tcpxo-installer", "the DaemonSet that installs the GPUDirect-TCPXO NCCL plugin on the GPU nodes"},
	{"nccl-rdma-installer", "the DaemonSet that installs NCCL/gIB on A3 Ultra and A4 nodes (fabric: gib)"},
	{"nri-device-injector", "the NRI device injector that exposes the GPU NICs' devices to pods"},
	{"jobset", "the JobSet controller Kubeflow Trainer runs jobs through"},
}

// constraints are the constraint names a recipe may set. A required
// constraint must be present: without a floor there is no pass mark, and a
// benchmark without one would pass anything.
var constraints = []struct {
	choice
	required bool
	// parse checks the value and stores what it means in r.
	parse func(r *Recipe, v Threshold) (problem, fix string, ok bool)
}{
	{choice{ConstraintAllReduceBW, "floor on nccl-tests all_reduce_perf bus bandwidth at the largest message size, in GB/s"}, true, parseFloor},
	{choice{ConstraintAllGatherBW, "floor on nccl-tests all_gather_perf bus bandwidth at the largest message size, in GB/s (fabric: gib)"}, false, parseFloor},
}

// sections are the configuration sections: each belongs to one service, is
// required for it, and is refused for any other (a GKE section in an EKS
// recipe is a copy-paste mistake, not a setting).
var sections = []struct {
	key     string
	service string
	// example completes "add configuration.<key>." in the fix for a missing
	// section.
	example string
	present func(*Configuration) bool
	check   func(d *decoder, r *Recipe, path string)
}{
	{
		key: "gke", service: "gke",
		example: "tcpxoInterfaces with eight bindings, {interfaceName: eth1, network: <network>} through {interfaceName: eth8, network: <network>}, naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
		present: func(c *Configuration) bool { return c.GKE != nil },
		check:   checkGKE,
	},
}

// validate checks a structurally valid recipe's values and derives the
// mapping and floor from them.
func validate(d *decoder, r *Recipe) {
	checkConst(d, "apiVersion", r.APIVersion, APIVersion)
	checkConst(d, "kind", r.Kind, Kind)

	for _, c := range criteria {
		checkChoice(d, joinPath("criteria", c.key), c.get(&r.Criteria), c.choices, "criteria."+c.key)
	}
	checkFabric(d, r)

	seen := map[string]int{}
	for i, c := range r.Components {
		path := fmt.Sprintf("components[%d]", i)
		if !checkChoice(d, path+".name", c.Name, components, "a component name") {
			continue
		}
		if j, dup := seen[c.Name]; dup {
			d.add(path+".name", fmt.Sprintf("declares %s again (first as components[%d], line %d)", c.Name, j, d.lineOf(fmt.Sprintf("components[%d]", j))),
				"declare each component once")
			continue
		}
		seen[c.Name] = i
		if c.Version != "" {
			if _, err := version.ParseSemantic(c.Version); err != nil {
				d.add(path+".version", fmt.Sprintf("%s is not a semantic version", quoted(c.Version)),
					"write the released version, e.g. v2.2.0, or leave version out")
			}
		}
	}

	checkConstraints(d, r)

	// An unknown or missing service is reported above; the sections are then
	// still checked for what they hold, but not against the service, which
	// would only repeat that problem.
	knownService := slices.Contains(criterionValues("service"), r.Criteria.Service)
	for _, s := range sections {
		path := joinPath("configuration", s.key)
		switch present, wanted := s.present(&r.Configuration), r.Criteria.Service == s.service; {
		case present && !wanted && knownService:
			d.add(path, fmt.Sprintf("is set, but criteria.service is %s", quoted(r.Criteria.Service)),
				"remove configuration."+s.key+", or set criteria.service to "+s.service+" if this recipe is for "+s.service)
		case !present && wanted:
			d.add(path, "is missing; criteria.service "+s.service+" requires it",
				"add configuration."+s.key+"."+s.example)
		case present:
			s.check(d, r, path)
		}
	}
}

func checkConst(d *decoder, path, got, want string) {
	switch {
	case got == "":
		d.add(path, "is missing", "add "+path+": "+want+" at the top of the recipe")
	case got != want:
		d.add(path, fmt.Sprintf("is %s, not %s", quoted(got), want),
			"check that this is a tcpxogen recipe; its first lines are apiVersion: "+APIVersion+" and kind: "+Kind)
	}
}

// checkChoice reports a missing or unknown value of a closed field.
func checkChoice(d *decoder, path, got string, cs []choice, what string) bool {
	if got == "" {
		d.add(path, "is missing", "set it to "+orList(describe(cs)))
		return false
	}
	for _, c := range cs {
		if c.value == got {
			return true
		}
	}
	d.add(path, fmt.Sprintf("%s is not a known value", quoted(got)), suggest(got, values(cs), what))
	return false
}

// describe lists choices with their meanings: "gke (Google Kubernetes Engine)".
func describe(cs []choice) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.value + " (" + c.meaning + ")"
	}
	return out
}

// fabrics are the fabric values a recipe may name.
func fabrics() []choice {
	var out []choice
	for _, f := range fabric.Fabrics() {
		out = append(out, choice{f.Name, f.Title})
	}
	return out
}

// checkFabric checks fabric: and, for gIB, that criteria.accelerator names
// one of its machine types, the one the runtime and benchmark are for.
func checkFabric(d *decoder, r *Recipe) {
	if r.Fabric != "" && !checkChoice(d, "fabric", r.Fabric, fabrics(), "a fabric") {
		return
	}
	if r.FabricName() != fabric.GIB.Name {
		return
	}
	m, ok := fabric.GIB.MachineTypeForGPU(r.Criteria.Accelerator)
	if !ok {
		var served []string
		for _, mt := range fabric.GIB.MachineTypes {
			served = append(served, mt.GPU+" ("+mt.Name+")")
		}
		if r.Criteria.Accelerator != "" && slices.Contains(criterionValues("accelerator"), r.Criteria.Accelerator) {
			d.add("criteria.accelerator", fmt.Sprintf("is %s, which fabric: gib does not serve", r.Criteria.Accelerator),
				"set it to "+orList(served)+": the accelerator names the gIB machine type the runtime and benchmark are for")
		}
		return
	}
	r.machineType = m.Name
}

func checkConstraints(d *decoder, r *Recipe) {
	names := make([]string, len(constraints))
	for i, c := range constraints {
		names[i] = c.value
	}
	gib := r.FabricName() == fabric.GIB.Name
	seen := map[string]int{}
	for i, c := range r.Constraints {
		path := fmt.Sprintf("constraints[%d]", i)
		if c.Name == "" {
			d.add(path+".name", "is missing", "name the constraint: "+orList(names))
			continue
		}
		idx := -1
		for j, k := range constraints {
			if k.value == c.Name {
				idx = j
			}
		}
		if idx < 0 {
			d.add(path+".name", fmt.Sprintf("%s is not a known constraint", quoted(c.Name)), suggest(c.Name, names, "a constraint name"))
			continue
		}
		if j, dup := seen[c.Name]; dup {
			d.add(path+".name", fmt.Sprintf("sets %s again (first as constraints[%d], line %d)", c.Name, j, d.lineOf(fmt.Sprintf("constraints[%d]", j))),
				"keep one; two floors for one measurement leave the pass mark ambiguous")
			continue
		}
		seen[c.Name] = i
		switch {
		case c.Name == ConstraintAllGatherBW && !gib:
			d.add(path+".name", ConstraintAllGatherBW+" is for fabric: gib; the TCPXO benchmark runs all_reduce_perf",
				"use "+ConstraintAllReduceBW+", or set fabric: gib if this recipe is for A3 Ultra or A4")
			continue
		case gib && len(seen) > 1:
			d.add(path+".name", "sets a second bandwidth floor; the gIB benchmark runs one collective, named by its floor",
				"keep one: "+ConstraintAllGatherBW+" (Google's NCCL test) or "+ConstraintAllReduceBW)
			continue
		}
		if problem, fix, ok := constraints[idx].parse(r, c.Value); !ok {
			d.add(path+".value", problem, fix)
			continue
		}
		r.floorName = c.Name
	}
	if gib {
		if len(seen) == 0 {
			d.add("constraints", "has no bandwidth floor ("+ConstraintAllGatherBW+" or "+ConstraintAllReduceBW+"); without it the benchmark has no pass mark",
				`add - {name: `+ConstraintAllGatherBW+`, value: ">= <GB/s>"} (the collective of Google's NCCL test; its published 2-node busbw is about 330 GB/s on A3 Ultra and 344 GB/s on A4)`)
		}
		return
	}
	for _, k := range constraints {
		if _, ok := seen[k.value]; k.required && !ok {
			d.add("constraints", "has no "+k.value+" ("+k.meaning+"); without it the benchmark has no pass mark",
				`add - {name: `+k.value+`, value: ">= <GB/s>"}`)
		}
	}
}

// withUnit matches a floor written with a unit ("300 GB/s", ">= 300Gbps"),
// to say why it is rejected.
var withUnit = regexp.MustCompile(`^(>=|>)?\s*[0-9.]+\s*[A-Za-z/]+$`)

func parseFloor(r *Recipe, v Threshold) (problem, fix string, ok bool) {
	const example = `write ">= N" or "> N" with N in GB/s, e.g. value: ">= 300"`
	s := string(v)
	if strings.TrimSpace(s) == "" {
		return "is missing", example, false
	}
	// One grammar for the recipe and nccl-report --floor: bandwidth.Floor.
	op, gbps, err := bandwidth.Floor(s)
	switch {
	case errors.Is(err, bandwidth.ErrSyntax):
		why := "is not a floor"
		switch t := strings.TrimSpace(s); {
		case strings.HasPrefix(t, "<"), strings.HasPrefix(t, "="), strings.HasPrefix(t, "!"):
			why = "is not a lower bound; a bandwidth constraint is a floor the measurement must reach"
		case withUnit.MatchString(t):
			why = "has a unit; the value is always in GB/s"
		}
		return fmt.Sprintf("%s %s", quoted(s), why), example, false
	case errors.Is(err, bandwidth.ErrImplausible):
		return fmt.Sprintf("%s is %v", quoted(s), err), example, false
	case err != nil:
		return fmt.Sprintf("%s is not a positive bandwidth", quoted(s)), example, false
	}
	r.floorOp, r.floorGbps = op, gbps
	return "", "", true
}

// checkGKE validates the GPU-NIC mapping of the recipe's fabric through its
// layout's FromBindings (interfaces.TCPXO or interfaces.RDMA), the one owner
// of the mapping rules, and re-locates each of its problems at the recipe
// path and line of the field it concerns. The other fabric's list is
// refused.
func checkGKE(d *decoder, r *Recipe, path string) {
	layout, other := interfaces.TCPXO, interfaces.RDMA
	bs, otherBs := r.Configuration.GKE.TCPXOInterfaces, r.Configuration.GKE.RDMAInterfaces
	if r.FabricName() == fabric.GIB.Name {
		layout, other = other, layout
		bs, otherBs = otherBs, bs
	}
	if otherBs != nil {
		var fix string
		if layout == interfaces.RDMA {
			fix = "move the mapping to " + path + "." + interfaces.RDMA.YAMLKey() + ": gIB's RDMA NICs are eth2..eth9"
		} else {
			fix = "set fabric: gib if this recipe is for A3 Ultra or A4 (GPUDirect-RDMA), or map the GPU NICs under " + path + "." + interfaces.TCPXO.YAMLKey()
		}
		d.add(path+"."+other.YAMLKey(), "is the "+fabricOf(other)+" mapping, but this recipe is for fabric "+r.FabricName(), fix)
		if bs == nil {
			return
		}
	}
	listPath := path + "." + layout.YAMLKey()
	m, err := layout.FromBindings(bs)
	if err == nil {
		r.mapping = m
		return
	}
	var problems []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	} else {
		problems = []error{err}
	}
	claimed := map[string]bool{}
	for _, p := range problems {
		var ie *interfaces.Error
		if !errors.As(p, &ie) {
			e := d.add(listPath, p.Error(), "")
			e.Err = p
			continue
		}
		at := locateBinding(ie, bs, listPath, claimed)
		claimed[at] = true
		e := d.add(at, rebase(strings.TrimSpace(ie.Path+" "+ie.Problem), layout.YAMLKey(), listPath), rebase(ie.Fix, layout.YAMLKey(), listPath))
		e.Err = ie
	}
}

// fabricOf names the fabric whose mapping a layout is.
func fabricOf(l interfaces.Layout) string {
	if l == interfaces.RDMA {
		return "gIB (" + fabric.GIB.Name + ")"
	}
	return "TCPXO (" + fabric.TCPXO.Name + ")"
}

// bindingRef matches FromBindings' name for a list entry, "tcpxoInterfaces[3]"
// or "rdmaInterfaces[3]".
var bindingRef = regexp.MustCompile(`\b(?:tcpxoInterfaces|rdmaInterfaces)\[(\d+)\]`)

// rebase rewrites FromBindings' list-relative names (tcpxoInterfaces,
// tcpxoInterfaces[3]; rdmaInterfaces for gIB) to the recipe path, so a
// message names the field the way the user finds it in the file.
func rebase(s, key, listPath string) string {
	return strings.ReplaceAll(s, key, listPath)
}

// bindingField says which field of an entry an interfaces problem is about,
// by the problem's opening words; the first match wins. A problem not listed
// here is located at its entry (or the list), never at a wrong field — a
// coarser line, not a misleading one.
var bindingField = []struct{ prefix, field string }{
	{"has no interface name", "interfaceName"},
	{"is the pod's default interface", "interfaceName"},
	{"is not a GPU NIC", "interfaceName"},
	{"has no network", "network"},
	{"is mapped to ", "network"},
	{"is mapped ", "interfaceName"}, // "is mapped twice (...)": the repeat
	{"is not mapped", ""},           // a missing NIC: the list itself
}

// locateBinding returns the recipe path of the field an interfaces.Error is
// about. FromBindings names an entry either by position
// ("tcpxoInterfaces[2]", when it has no usable interface) or by its
// interface as written ("eth4"); a repeated NIC's message lists every
// position, and the second is the one to fix. Entries named by interface are
// matched in order, skipping fields already claimed, so two entries with the
// same bad interface get a problem each at their own line.
func locateBinding(ie *interfaces.Error, bs []interfaces.Binding, listPath string, claimed map[string]bool) string {
	field, known := "", false
	for _, f := range bindingField {
		if strings.HasPrefix(ie.Problem, f.prefix) {
			field, known = f.field, true
			break
		}
	}
	if known && field == "" {
		return listPath
	}
	at := func(idx int) string {
		p := fmt.Sprintf("%s[%d]", listPath, idx)
		if field != "" {
			p += "." + field
		}
		return p
	}
	switch m, refs := bindingRef.FindStringSubmatch(ie.Path), bindingRef.FindAllStringSubmatch(ie.Problem, -1); {
	case m != nil:
		if idx, err := strconv.Atoi(m[1]); err == nil && idx < len(bs) {
			return at(idx)
		}
	case len(refs) > 1:
		if idx, err := strconv.Atoi(refs[1][1]); err == nil && idx < len(bs) {
			return at(idx)
		}
	case ie.Path != "":
		first := -1
		for i, b := range bs {
			if ie.Path != b.Interface && ie.Path != strconv.Quote(b.Interface) {
				continue
			}
			if !claimed[at(i)] {
				return at(i)
			}
			if first < 0 {
				first = i
			}
		}
		if first >= 0 {
			return at(first)
		}
	}
	return listPath
}
