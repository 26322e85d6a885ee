package fabric

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// The rule set for an enforcer that sees one env entry at a time: an
// admission policy judges each variable a TrainJob sets, knowing only the
// shipped env it is merged into. EntryRules derives that form from Check
// itself, by asking it about a few values per variable, so the two can
// only disagree where a test (TestEntryRulesAgreeWithCheck) would say so.

// ValueMark and NameMark stand for the entry's value and name in an
// EntryVerdict's Reason and Fix: the enforcer puts the entry's own in their
// place.
const (
	ValueMark = "{{value}}"
	NameMark  = "{{name}}"
)

// probeValue and probeName are what Check is asked about for "any other
// value" and "any other name": neither is a value or name any rule lists.
const (
	probeValue = "tcpxogen-probe-value"
	probeName  = "TCPXOGEN_PROBE"
)

// EntryVerdict is Check's finding for one entry; Severity 0 when there is
// none. Reason and Fix may hold ValueMark and NameMark.
type EntryVerdict struct {
	Severity    Severity
	Kind        Kind
	Reason, Fix string
}

// ValueVerdict is the verdict on one literal value.
type ValueVerdict struct {
	Value string
	// Fold: the value is matched case-insensitively (Check gives every
	// casing of it the same verdict).
	Fold    bool
	Verdict EntryVerdict
}

// PathList is the verdict on a list of directories (LD_LIBRARY_PATH) that
// keeps every shipped directory: Ordered when they come first and in order,
// Anywhere when they are all present but others come first. A value that
// loses one gets the rule's Other verdict.
type PathList struct {
	Dirs              []string
	Ordered, Anywhere EntryVerdict
}

// EntryRule is the rule set's verdict on a variable a workload sets.
type EntryRule struct {
	// Name is the variable; with Prefix set, Name is "" and the rule covers
	// every name with that prefix that no earlier rule names ("" covers
	// every name).
	Name   string
	Prefix *string
	Class  Class
	// Values are the literal values whose verdict is not Other's, in the
	// order the rule set names them.
	Values []ValueVerdict
	// Paths is set for a directory list.
	Paths *PathList
	// Other is the verdict on any other literal value, From on a value set
	// from elsewhere (valueFrom).
	Other, From EntryVerdict
}

// Matches says whether the rule covers name, given the names of the rules
// before it.
func (r EntryRule) Matches(name string) bool {
	if r.Prefix == nil {
		return r.Name == name
	}
	return strings.HasPrefix(name, *r.Prefix)
}

// Judge is the rule's verdict on one entry: a literal value, or a value set
// from elsewhere when fromElsewhere.
func (r EntryRule) Judge(value string, fromElsewhere bool) EntryVerdict {
	if fromElsewhere {
		return r.From
	}
	for _, v := range r.Values {
		if v.Value == value || (v.Fold && strings.EqualFold(v.Value, value)) {
			return v.Verdict
		}
	}
	if p := r.Paths; p != nil {
		got := strings.Split(value, ":")
		if !slices.ContainsFunc(p.Dirs, func(d string) bool { return !slices.Contains(got, d) }) {
			if len(got) >= len(p.Dirs) && slices.Equal(got[:len(p.Dirs)], p.Dirs) {
				return p.Ordered
			}
			return p.Anywhere
		}
	}
	return r.Other
}

// EntryRules is TCPXORules.EntryRules.
func EntryRules(shipped []corev1.EnvVar, rules []guestconfig.Rule) []EntryRule {
	return TCPXORules.EntryRules(shipped, rules)
}

// EntryRules returns the rule set as verdicts on single entries for a
// workload whose env is merged, by name, into shipped, with rules the guest
// config rules of the shipped profile. The named rules come first (the
// names Table lists), then the patterns: other variables of the plugin
// prefix (TCPXO: NCCL_FASTRAK_*; gIB: NCCL_IB_*), other NCCL variables,
// every other name. The first rule that Matches a name decides.
func (rs *RuleSet) EntryRules(shipped []corev1.EnvVar, rules []guestconfig.Rule) []EntryRule {
	ship, order := settings(shipped)
	names := rs.listedNames(order, rules)
	out := make([]EntryRule, 0, len(names)+3)
	for _, n := range names {
		out = append(out, rs.entryRule(n, ship[n], rules))
	}
	prefixes := []string{ncclPrefix, ""}
	if rs.pluginPrefix != "" {
		prefixes = append([]string{rs.pluginPrefix}, prefixes...)
	}
	for _, prefix := range prefixes {
		r := rs.entryRule(prefix+probeName, setting{}, rules)
		r.Name, r.Prefix = "", &prefix
		r.Values, r.Paths = nil, nil
		r.Other, r.From = markName(r.Other, prefix+probeName), markName(r.From, prefix+probeName)
		out = append(out, r)
	}
	return out
}

// entryRule asks Check about name set to each value the rule set names for
// it, to a value none names, and to a value from elsewhere.
func (rs *RuleSet) entryRule(name string, s setting, rules []guestconfig.Rule) EntryRule {
	ask := func(c setting, shown string) EntryVerdict {
		f, ok := rs.judge(name, s, c, rules)
		if !ok {
			return EntryVerdict{}
		}
		v := EntryVerdict{Severity: f.Severity, Kind: f.Kind, Reason: f.Reason, Fix: f.Fix}
		if shown != "" {
			v.Reason = strings.ReplaceAll(v.Reason, yamlstrict.Quote(shown), yamlstrict.Quote(ValueMark))
			v.Fix = strings.ReplaceAll(v.Fix, yamlstrict.Quote(shown), yamlstrict.Quote(ValueMark))
		}
		return v
	}
	literal := func(v string) setting { return setting{set: true, value: v} }
	r := EntryRule{Name: name, Class: rs.Classify(name, rules)}
	r.Other = ask(literal(probeValue), probeValue)
	r.From = ask(setting{set: true, from: fromElsewhere}, "")
	var named []string
	if s.set && s.from == "" {
		named = append(named, s.value)
	}
	if rule, ok := ruleFor(name, rules); ok {
		named = append(named, rule.Value)
	}
	if kv, ok := rs.known[name]; ok {
		named = append(named, kv.value)
	}
	if name == netVar && rs.net.name != "" {
		named = append(named, rs.net.name)
	}
	same := func(a, b EntryVerdict) bool { return a.Severity == b.Severity && a.Kind == b.Kind }
	for _, v := range slices.Compact(named) {
		if slices.ContainsFunc(r.Values, func(x ValueVerdict) bool { return x.Value == v }) {
			continue
		}
		got := ask(literal(v), "")
		// The value's other casings, and the verdict they share (cased
		// marks the first, so that it names the entry's own casing).
		var cased EntryVerdict
		casings, agree := 0, true
		for _, other := range []string{strings.ToUpper(v), strings.ToLower(v)} {
			if other == v {
				continue
			}
			if o := ask(literal(other), other); casings == 0 {
				cased = o
			} else if !same(o, cased) {
				agree = false
			}
			casings++
		}
		// Casings Check judges alike, unlike any other value, where the
		// value itself is judged otherwise (gIB's shipped NCCL_NET, without
		// a rule that enforces it): the value's own verdict first, then
		// every casing's.
		casedApart := casings > 0 && agree && !same(cased, got) && !same(cased, r.Other)
		if same(got, r.Other) && !casedApart {
			continue
		}
		fold := v != strings.ToUpper(v) || v != strings.ToLower(v)
		for _, other := range []string{strings.ToUpper(v), strings.ToLower(v)} {
			if o := ask(literal(other), ""); o.Severity != got.Severity {
				fold = false
			}
		}
		if fold {
			// The verdict names the value given: the enforcer shows the
			// entry's own casing.
			got = ask(literal(v), v)
		}
		r.Values = append(r.Values, ValueVerdict{Value: v, Fold: fold, Verdict: got})
		if !fold && casedApart {
			r.Values = append(r.Values, ValueVerdict{Value: v, Fold: true, Verdict: cased})
		}
	}
	// A directory list: Check keeps a value that adds directories around the
	// shipped ones, where any other value loses the fabric.
	if s.set && s.from == "" {
		dirs := slices.DeleteFunc(strings.Split(s.value, ":"), func(d string) bool { return d == "" })
		ordered := strings.Join(dirs, ":") + ":/" + probeValue
		anywhere := "/" + probeValue + ":" + strings.Join(dirs, ":")
		o, a := ask(literal(ordered), ordered), ask(literal(anywhere), anywhere)
		if o.Severity != r.Other.Severity || a.Severity != r.Other.Severity {
			r.Paths = &PathList{Dirs: dirs, Ordered: o, Anywhere: a}
		}
	}
	return r
}

// fromElsewhere is how the entry's valueFrom is described to Check.
const fromElsewhere = "the entry's valueFrom"

// markName puts NameMark where a pattern rule's verdict names the probe.
func markName(v EntryVerdict, probe string) EntryVerdict {
	v.Reason = strings.ReplaceAll(v.Reason, probe, NameMark)
	v.Fix = strings.ReplaceAll(v.Fix, probe, NameMark)
	return v
}

// ncclPrefix marks NCCL's variables (isNCCL).
const ncclPrefix = "NCCL_"
