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

// Patterns of the table's last rows: the plugin prefix's (PatternPlugin;
// PatternFasTrak is TCPXO's), then these.
const (
	PatternFasTrak = "other " + FasTrakPrefix + "* variables"
	PatternNCCL    = "other NCCL_* variables"
	PatternOther   = "other variables"
)

// PatternPlugin is the name of the table's row for the variables of a
// plugin prefix no other row names.
func PatternPlugin(prefix string) string { return "other " + prefix + "* variables" }

// Table is TCPXORules.Table.
func Table(shipped []corev1.EnvVar, rules []guestconfig.Rule) []Entry {
	return TCPXORules.Table(shipped, rules)
}

// Table returns the rows of the user guide's table for a profile: the
// shipped variables in order, the variables the guest config names that
// are not shipped, the fabric, known, prefix-tuning and logging variables
// that are neither (sorted), then the patterns that cover every other
// name: the plugin prefix's, other NCCL variables, the rest.
func (rs *RuleSet) Table(shipped []corev1.EnvVar, rules []guestconfig.Rule) []Entry {
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
		out = append(out, Entry{Name: name, Value: value, Class: rs.Classify(name, rules), Why: rs.why(name, s.set, rules)})
	}
	for _, name := range rs.listedNames(order, rules) {
		add(name)
	}
	if rs.pluginPrefix != "" {
		out = append(out, Entry{Name: PatternPlugin(rs.pluginPrefix), Class: ClassFabric, Why: rs.pluginWhy})
	}
	return append(out,
		Entry{Name: PatternNCCL, Class: ClassTuning, Why: rs.unlistedWhy()},
		Entry{Name: PatternOther, Class: ClassOther, Why: "not an NCCL setting"},
	)
}

// listedNames are the variables the rule set names, in the table's order:
// the shipped ones in order, the guest config's, then the fabric, known,
// prefix-tuning and logging variables that are neither (sorted). A
// prefix-tuning name must be listed: the plugin prefix's pattern row, which
// comes later, would judge it otherwise.
func (rs *RuleSet) listedNames(shippedOrder []string, rules []guestconfig.Rule) []string {
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
		func() []string { return slices.Sorted(maps.Keys(rs.vars)) },
		func() []string { return slices.Sorted(maps.Keys(rs.known)) },
		func() []string { return slices.Sorted(maps.Keys(rs.prefixTuning)) },
		func() []string { return slices.Sorted(maps.Keys(loggingVars)) },
	} {
		for _, n := range m() {
			add(n)
		}
	}
	return names
}

// unlistedWhy is why an NCCL variable the guest config does not list is
// tuning: the rule set's unlisted says what the checker does with it.
func (rs *RuleSet) unlistedWhy() string {
	return "the installer's guest config does not list it: " + rs.unlisted
}

// why says, for the table, what puts name in its class.
func (rs *RuleSet) why(name string, shipped bool, rules []guestconfig.Rule) string {
	r, _ := ruleFor(name, rules)
	switch rs.Classify(name, rules) {
	case ClassEnforced:
		return "the installer's guest config enforces " + yamlstrict.Quote(r.Value) + ": " + rs.enforcedEffect + " otherwise"
	case ClassFabric:
		if kv, ok := rs.known[name]; ok && !shipped {
			return rs.fabricWhy(name) + "; if set, it must be " + yamlstrict.Quote(kv.value)
		}
		return rs.fabricWhy(name)
	case ClassRecommended:
		return "the installer's guest config recommends " + yamlstrict.Quote(r.Value) + ": the checker reports a difference"
	case ClassLogging:
		return "logging only (NCCL's environment variable documentation)"
	case ClassTuning:
		switch {
		case shipped:
			return rs.profile + " sets it; its guest config does not enforce it"
		case isNCCL(name):
			return rs.unlistedWhy()
		}
		return rs.gpusWhy
	}
	if shipped {
		return "shipped: a change is judged as tuning"
	}
	return "not an NCCL setting"
}
