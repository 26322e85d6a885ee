package interfaces

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// networkNamePattern is GKE's rule for a Network name used by a pod
// interface (a lower-case DNS label). The rules in networkNameRules explain
// each way a name can miss it; the pattern is the final word, so a gap in the
// rules can cost a precise message but never admit a bad name.
var networkNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// nameRule is one way a non-empty Network name can be invalid. Rules are
// checked in order and the first broken one is reported: one precise reason
// per name is easier to act on than a list of every rule it breaks.
type nameRule struct {
	broken func(name string) bool
	// problem completes `eth4 is mapped to "NAME", which ...`.
	problem func(name string) string
	// advice is the rule's own fix; find adds the layout's findNetwork to it,
	// the advice every network problem ends with unless it says more.
	advice string
	find   bool
	// separator marks rules that a missing pair separator also breaks (two
	// pairs read as one network), where the form's hint about separators helps.
	separator bool
}

// fix is the rule's fix for a mapping of the layout.
func (r *nameRule) fix(spec *layoutSpec) string {
	switch {
	case !r.find:
		return r.advice
	case r.advice == "":
		return spec.findNetwork()
	}
	return r.advice + "; " + spec.findNetwork()
}

var networkNameRules = []nameRule{
	{
		broken: func(n string) bool { return len(n) > MaxNetworkNameLength },
		problem: func(n string) string {
			return fmt.Sprintf("is %d characters long, over GKE's limit of %d for a pod network (the name becomes part of a socket path)",
				utf8.RuneCountInString(n), MaxNetworkNameLength)
		},
		advice: fmt.Sprintf("create the Device-type GKE Network (and its GKENetworkParamSet) under a name of at most %d characters and map the NIC to it; Kubernetes object names cannot be changed in place", MaxNetworkNameLength),
	},
	{
		broken:    func(n string) bool { return strings.IndexFunc(n, unicode.IsSpace) >= 0 },
		problem:   func(string) string { return "contains whitespace" },
		advice:    "network names have no spaces",
		find:      true,
		separator: true,
	},
	{
		broken:  func(n string) bool { return strings.IndexFunc(n, unicode.IsUpper) >= 0 },
		problem: func(string) string { return "has upper-case letters" },
		advice:  "GKE Network names are lower-case",
		find:    true,
	},
	{
		broken: func(n string) bool { return !('a' <= n[0] && n[0] <= 'z') },
		problem: func(n string) string {
			r, _ := utf8.DecodeRuneInString(n)
			return fmt.Sprintf("starts with %s; a GKE Network name starts with a letter a-z", excerpt.Rune(r))
		},
		find: true,
	},
	{
		broken:  func(n string) bool { return strings.HasSuffix(n, "-") },
		problem: func(string) string { return "ends with '-'; a GKE Network name ends with a letter or digit" },
		find:    true,
	},
	{
		broken: func(n string) bool { return strings.IndexFunc(n, notNameRune) >= 0 },
		problem: func(n string) string {
			r, _ := utf8.DecodeRuneInString(n[strings.IndexFunc(n, notNameRune):])
			return fmt.Sprintf("contains %s; a GKE Network name has only a-z, 0-9 and '-'", excerpt.Rune(r))
		},
		find:      true,
		separator: true,
	},
}

func notNameRune(r rune) bool {
	return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-')
}

// networkNameProblem returns why a name is not a valid GKE Network
// name for a pod interface, or ok.
func networkNameProblem(name string) (rule *nameRule, problem string, ok bool) {
	if name == "" {
		// Callers report an empty network in their own words; this guard keeps
		// the rules below free to index name[0].
		return &nameRule{find: true}, "is empty", false
	}
	for i := range networkNameRules {
		if r := &networkNameRules[i]; r.broken(name) {
			return r, r.problem(name), false
		}
	}
	if !networkNamePattern.MatchString(name) {
		// Not reached while the rules cover the pattern (FuzzNetworkName checks
		// that they do); kept so that a future gap fails closed.
		return &nameRule{find: true}, "does not match " + networkNamePattern.String(), false
	}
	return nil, "", true
}

// form is the notation an input was written in; messages show fixes in it so
// that they can be copied back into the input.
type form struct {
	// binding writes one binding of iface to network in this notation.
	binding func(iface, network string) string
	// where names the whole list, for messages about it ("tcpxoInterfaces").
	where string
	// separatorHint is added to fixes of names that may be two bindings run
	// together; empty where that cannot happen.
	separatorHint string
	// sep joins bindings into a whole mapping that can be copied back; empty
	// where a fix does not write whole mappings.
	sep string
}

// pairForm is Parse's notation; a layout's listForm is that of its YAML list
// and of FromBindings.
var pairForm = form{
	binding:       func(i, n string) string { return i + "=" + n },
	where:         "the mapping",
	separatorHint: "; if this is more than one pair, separate the pairs with ','",
	sep:           ",",
}

// entry is one binding as read from the input, before validation.
type entry struct {
	// where locates it for messages: "pair 3", "tcpxoInterfaces[2]".
	where string
	// line and netLine are the YAML lines of the entry and of its network
	// value; 0 for inputs without lines.
	line, netLine int
	// pre are problems the reader already found with this entry, reported in
	// the entry's place so that the output follows the input's order.
	pre []*Error
	// skip marks an entry whose interface could not be read at all.
	skip bool
	// noNetwork marks an entry whose network field was reported missing; it
	// still maps its interface, but its network is not checked again.
	noNetwork bool

	iface, network string
}

// validate checks entries against the rules of the layout's mapping and
// builds the Mapping if they hold. Problems come in a fixed order: each
// entry's own problems in input order, then interfaces given more than once
// and required interfaces missing, each in NIC order, then networks shared,
// the required NICs' in NIC order before the optional ones'.
func validate(l Layout, entries []entry, f form, listLine int) (Mapping, []*Error) {
	spec := l.spec()
	var errs []*Error
	add := func(line int, subject, problem, fix string) {
		errs = append(errs, &Error{Line: line, Path: subject, Problem: problem, Fix: fix})
	}

	var uses [maxNICs][]int // indices into entries, per NIC of the layout
	goodNetwork := make([]bool, len(entries))
	for i, e := range entries {
		errs = append(errs, e.pre...)
		if e.skip {
			continue
		}
		subject := show(e.iface)
		idx, known := spec.index(e.iface)
		switch {
		case e.iface == "":
			subject = e.where
			add(e.line, subject, "has no interface name",
				"write it as "+f.binding(spec.placeholder, networkOrPlaceholder(e.network))+", naming one of the "+spec.nicWord+"s "+spec.nicRange+spec.orOptional())
		case e.iface == DefaultInterface:
			add(e.line, subject, "is the pod's default interface, which GKE attaches to the cluster's default network; it is not part of the "+spec.nicWord+" mapping",
				"remove it and map only the "+spec.nicWord+"s "+spec.nicRange+spec.alsoOptional(func(iface string) string { return iface })+
					"; the pod annotation binds eth0 to the "+DefaultNetwork+" network by itself")
		case !known:
			fix := "use " + spec.nicRange + spec.orOptional()
			if _, ok := spec.index(strings.ToLower(e.iface)); ok {
				fix = "did you mean " + strings.ToLower(e.iface) + "? interface names are lower-case"
			}
			add(e.line, subject, "is not "+spec.aNIC+" of "+yamlstrict.List(spec.machineTypes, "or"), fix)
		default:
			uses[idx] = append(uses[idx], i)
		}
		if e.noNetwork {
			continue
		}
		if e.network == "" {
			add(e.netLine, subject, "has no network",
				"write it as "+f.binding(ifaceOrPlaceholder(spec, e.iface), "<network>")+"; "+spec.findNetwork())
			continue
		}
		if rule, problem, ok := networkNameProblem(e.network); !ok {
			fix := rule.fix(spec)
			if rule.separator {
				fix += f.separatorHint
			}
			add(e.netLine, subject, "is mapped to "+quoted(e.network)+", which "+problem, fix)
			continue
		}
		goodNetwork[i] = true
	}

	nics := spec.nics
	for idx, u := range uses[:len(nics)] {
		if len(u) < 2 {
			continue
		}
		var at []string
		for _, i := range u {
			at = append(at, entries[i].where)
		}
		add(entries[u[1]].line, nics[idx].iface, "is mapped "+times(len(u))+" ("+andList(at)+")",
			"keep exactly one "+f.binding(nics[idx].iface, "<network>"))
	}

	var missing []int
	for idx, u := range uses[:len(nics)] {
		if len(u) == 0 && !nics[idx].optional() {
			missing = append(missing, idx)
		}
	}
	if len(missing) == 1 && megaNumbered(spec, uses[:len(nics)], missing[0]) {
		problem, fix := megaNumbering(spec, f, entries, uses[:len(nics)])
		add(listLine, nics[missing[0]].iface, problem, fix)
		missing = nil
	}
	for _, idx := range missing {
		fix := "add " + f.binding(nics[idx].iface, "<network>") + " to " + f.where + "; " + spec.findNetwork()
		if len(missing) == 1 {
			fix += spec.oneMissing
		}
		add(listLine, nics[idx].iface, "is not mapped", fix)
	}

	// The required NICs claim their networks first, so that an optional NIC
	// on an RDMA NIC's network is the one reported.
	var order []int
	for _, optional := range []bool{false, true} {
		for idx, n := range nics {
			if n.optional() == optional {
				order = append(order, idx)
			}
		}
	}
	owner := map[string]int{} // network → NIC index of its first use
	for _, idx := range order {
		u := uses[idx]
		if len(u) == 0 || !goodNetwork[u[0]] {
			continue
		}
		e := entries[u[0]]
		first, taken := owner[e.network]
		switch n := nics[idx]; {
		case !taken:
			owner[e.network] = idx
		case n.optional():
			add(e.netLine, n.iface, "is mapped to "+quoted(e.network)+", which "+nics[first].iface+" already uses; "+n.iface+" is for "+n.role+", a network of its own",
				"map "+n.iface+" to "+n.role+" ("+n.example+" in Google's documentation), or leave "+n.iface+" out if this cluster has none")
		default:
			add(e.netLine, n.iface, "is mapped to "+quoted(e.network)+", which "+nics[first].iface+" already uses",
				"each "+spec.nicWord+" is on its own "+spec.segment+" and needs its own Device-type GKE Network; map "+n.iface+" to the Network of its own "+spec.segment)
		}
	}

	if len(errs) > 0 {
		return Mapping{}, errs
	}
	m := Mapping{layout: l}
	for idx, u := range uses[:len(nics)] {
		if len(u) > 0 {
			m.networks[idx] = entries[u[0]].network
		}
	}
	return m, nil
}

// megaNumbered reports whether a mapping whose only unmapped required NIC is
// missing is A3 Mega's numbering given to a layout whose required NICs are
// A3 Mega's shifted by one: every one of A3 Mega's GPU NICs (eth1..eth8) is
// mapped, and the NIC left out is the one A3 Mega does not have (eth9).
func megaNumbered(spec *layoutSpec, uses [][]int, missing int) bool {
	if !spec.megaNumbering {
		return false
	}
	mega := layouts[TCPXO]
	for _, iface := range mega.required() {
		if idx, ok := spec.index(iface); !ok || len(uses[idx]) == 0 {
			return false
		}
	}
	_, megaHasIt := mega.index(spec.nics[missing].iface)
	return !megaHasIt
}

// megaNumbering explains the mapping megaNumbered recognised. Either the
// user wrote A3 Mega's interfaces, and every network belongs one interface
// up, or the optional NICs are right and the last NIC was forgotten; the fix
// covers both, and in the pair form writes the shifted mapping out.
func megaNumbering(spec *layoutSpec, f form, entries []entry, uses [][]int) (problem, fix string) {
	mega := layouts[TCPXO]
	from, to := mega.required(), spec.required()
	last := to[len(to)-1]
	var optional, roles, are []string
	for _, n := range spec.nics {
		if n.optional() {
			optional = append(optional, n.iface)
			roles = append(roles, n.iface+" is optional, for "+n.role)
			are = append(are, n.iface+" is "+n.role)
		}
	}
	problem = "is not mapped, and " + andList(optional) + " is: the mapping names " + mega.nicRange + ", the " + mega.nicWord + "s of " + mega.hardware + " (" + mega.fabric + "); on " +
		spec.hardware + " the " + spec.nicWord + "s are " + spec.nicRange + ", " + strings.Join(roles, ", ") + ", and " + DefaultInterface + " is the " + DefaultNetwork + " network"

	fix = "if " + mega.nicRange + " carry the " + spec.count + " networks of the " + spec.nicWord + "s, move each up one interface (" + from[0] + "'s network to " + to[0] +
		", and so on to " + from[len(from)-1] + "'s to " + last + ")"
	if f.sep != "" {
		var shifted []string
		for i, iface := range from {
			idx, _ := spec.index(iface) // megaNumbered found each of them mapped
			shifted = append(shifted, f.binding(to[i], networkOrPlaceholder(entries[uses[idx][0]].network)))
		}
		fix += ": " + strings.Join(shifted, f.sep)
	}
	fix += "; if " + andList(are) + ", add " + f.binding(last, "<network>") + " for the " + spec.nicWord + " " + last
	return problem, fix
}

// networkOrPlaceholder and ifaceOrPlaceholder repeat the user's value in a
// suggested fix only when it is valid, so the fix never echoes another mistake.
func networkOrPlaceholder(network string) string {
	if _, _, ok := networkNameProblem(network); !ok {
		return "<network>"
	}
	return network
}

func ifaceOrPlaceholder(spec *layoutSpec, iface string) string {
	if _, ok := spec.index(iface); ok {
		return iface
	}
	return spec.placeholder
}
