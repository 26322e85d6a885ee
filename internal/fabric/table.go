package fabric

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Entry is one row of the user guide's table of variables a workload may
// or must not change.
type Entry struct {
	// Name is a variable, or a pattern in words ("other NCCL_FASTRAK_*
	// variables").
	Name string
	// Value is the shipped value; "" when the variable is not shipped.
	Value string
	Class Class
	// Why names the rule that puts it in its class.
	Why string
}

// Patterns of the table's last rows.
const (
	PatternFasTrak = "other " + FasTrakPrefix + "* variables"
	PatternNCCL    = "other NCCL_* variables"
	PatternOther   = "other variables"
)

// Table returns the rows of the user guide's table for a profile: the
// shipped variables in order, the variables the guest config names that
// are not shipped, the fabric and logging variables that are neither
// (sorted), then the patterns that cover every other name.
func Table(shipped []corev1.EnvVar, rules []guestconfig.Rule) []Entry {
	ship, order := settings(shipped)
	var out []Entry
	add := func(name string) {
		if slices.ContainsFunc(out, func(e Entry) bool { return e.Name == name }) {
			return
		}
		s := ship[name]
		value := s.value
		if s.from != "" {
			value = "(from " + s.from + ")"
		}
		out = append(out, Entry{Name: name, Value: value, Class: Classify(name, rules), Why: why(name, s.set, rules)})
	}
	for _, name := range listedNames(order, rules) {
		add(name)
	}
	return append(out,
		Entry{Name: PatternFasTrak, Class: ClassFabric, Why: fastrakWhy},
		Entry{Name: PatternNCCL, Class: ClassTuning, Why: unlistedWhy},
		Entry{Name: PatternOther, Class: ClassOther, Why: "not an NCCL setting"},
	)
}

// listedNames are the variables the rule set names, in the table's order:
// the shipped ones in order, the guest config's, then the fabric, known
// and logging variables that are neither (sorted).
func listedNames(shippedOrder []string, rules []guestconfig.Rule) []string {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range shippedOrder {
		add(n)
	}
	for _, r := range rules {
		add(r.Name)
	}
	for _, m := range []func() []string{
		func() []string { return slices.Sorted(maps.Keys(fabricVars)) },
		func() []string { return slices.Sorted(maps.Keys(knownValues)) },
		func() []string { return slices.Sorted(maps.Keys(loggingVars)) },
	} {
		for _, n := range m() {
			add(n)
		}
	}
	return names
}

// unlistedWhy is why an NCCL variable the guest config does not list is
// tuning: Google's release note of Aug 21, 2025 ("will only be flagged as
// unexpected environment variables").
const unlistedWhy = "the installer's guest config does not list it: the checker reports it as unexpected"

// why says, for the table, what puts name in its class.
func why(name string, shipped bool, rules []guestconfig.Rule) string {
	r, _ := ruleFor(name, rules)
	switch Classify(name, rules) {
	case ClassEnforced:
		return "the installer's guest config enforces " + yamlstrict.Quote(r.Value) + ": the plugin aborts or hangs at NCCL init otherwise"
	case ClassFabric:
		if kv, ok := knownValues[name]; ok && !shipped {
			return fabricWhy(name) + "; if set, it must be " + yamlstrict.Quote(kv.value)
		}
		return fabricWhy(name)
	case ClassRecommended:
		return "the installer's guest config recommends " + yamlstrict.Quote(r.Value) + ": the checker reports a difference"
	case ClassLogging:
		return "logging only (NCCL's environment variable documentation)"
	case ClassTuning:
		switch {
		case shipped:
			return "the installer's profile sets it; its guest config does not enforce it"
		case isNCCL(name):
			return unlistedWhy
		}
		return "TCPXO pairs one GPU NIC with each GPU: hiding GPUs leaves their NICs idle"
	}
	if shipped {
		return "shipped: a change is judged as tuning"
	}
	return "not an NCCL setting"
}
