package interfaces

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
)

// networkNamePattern is GKE's rule for a Network name used by a pod
// interface (a lower-case DNS label). The rules in networkNameRules explain
// each way a name can miss it; the pattern is the final word, so a gap in the
// rules can cost a precise message but never admit a bad name.
var networkNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// findNetwork is the advice every network problem ends with: the names are
// per cluster, so the user has to look theirs up.
const findNetwork = "use the name of this cluster's Device-type GKE Network for that NIC's VPC, exactly as `kubectl get networks` prints it"

// nameRule is one way a non-empty Network name can be invalid. Rules are
// checked in order and the first broken one is reported: one precise reason
// per name is easier to act on than a list of every rule it breaks.
type nameRule struct {
	broken func(name string) bool
	// problem completes `eth4 is mapped to "NAME", which ...`.
	problem func(name string) string
	fix     string
	// separator marks rules that a missing pair separator also breaks (two
	// pairs read as one network), where the form's hint about separators helps.
	separator bool
}

var networkNameRules = []nameRule{
	{
		broken: func(n string) bool { return len(n) > MaxNetworkNameLength },
		problem: func(n string) string {
			return fmt.Sprintf("is %d characters long, over GKE's limit of %d for a pod network (the name becomes part of a socket path)",
				utf8.RuneCountInString(n), MaxNetworkNameLength)
		},
		fix: fmt.Sprintf("create the Device-type GKE Network (and its GKENetworkParamSet) under a name of at most %d characters and map the NIC to it; Kubernetes object names cannot be changed in place", MaxNetworkNameLength),
	},
	{
		broken:    func(n string) bool { return strings.IndexFunc(n, unicode.IsSpace) >= 0 },
		problem:   func(string) string { return "contains whitespace" },
		fix:       "network names have no spaces; " + findNetwork,
		separator: true,
	},
	{
		broken:  func(n string) bool { return strings.IndexFunc(n, unicode.IsUpper) >= 0 },
		problem: func(string) string { return "has upper-case letters" },
		fix:     "GKE Network names are lower-case; " + findNetwork,
	},
	{
		broken: func(n string) bool { return !('a' <= n[0] && n[0] <= 'z') },
		problem: func(n string) string {
			r, _ := utf8.DecodeRuneInString(n)
			return fmt.Sprintf("starts with %s; a GKE Network name starts with a letter a-z", excerpt.Rune(r))
		},
		fix: findNetwork,
	},
	{
		broken:  func(n string) bool { return strings.HasSuffix(n, "-") },
		problem: func(string) string { return "ends with '-'; a GKE Network name ends with a letter or digit" },
		fix:     findNetwork,
	},
	{
		broken: func(n string) bool { return strings.IndexFunc(n, notNameRune) >= 0 },
		problem: func(n string) string {
			r, _ := utf8.DecodeRuneInString(n[strings.IndexFunc(n, notNameRune):])
			return fmt.Sprintf("contains %s; a GKE Network name has only a-z, 0-9 and '-'", excerpt.Rune(r))
		},
		fix:       findNetwork,
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
		return &nameRule{fix: findNetwork}, "is empty", false
	}
	for i := range networkNameRules {
		if r := &networkNameRules[i]; r.broken(name) {
			return r, r.problem(name), false
		}
	}
	if !networkNamePattern.MatchString(name) {
		// Not reached while the rules cover the pattern (FuzzNetworkName checks
		// that they do); kept so that a future gap fails closed.
		return &nameRule{fix: findNetwork}, "does not match " + networkNamePattern.String(), false
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
}

var (
	pairForm = form{
		binding:       func(i, n string) string { return i + "=" + n },
		where:         "the mapping",
		separatorHint: "; if this is more than one pair, separate the pairs with ','",
	}
	listForm = form{
		binding: func(i, n string) string { return "{interfaceName: " + i + ", network: " + n + "}" },
		where:   yamlKey,
	}
)

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

// validate checks entries against the rules of an A3 Mega mapping and builds
// the Mapping if they hold. Problems come in a fixed order: each entry's own
// problems in input order, then interfaces given more than once, interfaces
// missing and networks shared, each in eth1..eth8 order.
func validate(entries []entry, f form, listLine int) (Mapping, []*Error) {
	var errs []*Error
	add := func(line int, subject, problem, fix string) {
		errs = append(errs, &Error{Line: line, Path: subject, Problem: problem, Fix: fix})
	}

	var uses [numGPUNICs][]int // indices into entries, per GPU NIC
	goodNetwork := make([]bool, len(entries))
	for i, e := range entries {
		errs = append(errs, e.pre...)
		if e.skip {
			continue
		}
		subject := show(e.iface)
		idx, isGPU := gpuIndex(e.iface)
		switch {
		case e.iface == "":
			subject = e.where
			add(e.line, subject, "has no interface name",
				"write it as "+f.binding("eth<1-8>", networkOrPlaceholder(e.network))+", naming one of the GPU NICs "+gpuNICRange)
		case e.iface == DefaultInterface:
			add(e.line, subject, "is the pod's default interface, which GKE attaches to the cluster's default network; it is not part of the GPU NIC mapping",
				"remove it and map only the GPU NICs "+gpuNICRange+"; the pod annotation binds eth0 to the "+DefaultNetwork+" network by itself")
		case !isGPU:
			fix := "use " + gpuNICRange
			if _, ok := gpuIndex(strings.ToLower(e.iface)); ok {
				fix = "did you mean " + strings.ToLower(e.iface) + "? interface names are lower-case"
			}
			add(e.line, subject, "is not a GPU NIC of "+machineType, fix)
		default:
			uses[idx] = append(uses[idx], i)
		}
		if e.noNetwork {
			continue
		}
		if e.network == "" {
			add(e.netLine, subject, "has no network",
				"write it as "+f.binding(ifaceOrPlaceholder(e.iface), "<network>")+"; "+findNetwork)
			continue
		}
		if rule, problem, ok := networkNameProblem(e.network); !ok {
			fix := rule.fix
			if rule.separator {
				fix += f.separatorHint
			}
			add(e.netLine, subject, "is mapped to "+quoted(e.network)+", which "+problem, fix)
			continue
		}
		goodNetwork[i] = true
	}

	for idx, u := range uses {
		if len(u) < 2 {
			continue
		}
		var at []string
		for _, i := range u {
			at = append(at, entries[i].where)
		}
		add(entries[u[1]].line, gpuNICs[idx], "is mapped "+times(len(u))+" ("+andList(at)+")",
			"keep exactly one "+f.binding(gpuNICs[idx], "<network>"))
	}

	var missing []int
	for idx, u := range uses {
		if len(u) == 0 {
			missing = append(missing, idx)
		}
	}
	for _, idx := range missing {
		fix := "add " + f.binding(gpuNICs[idx], "<network>") + " to " + f.where + "; " + findNetwork
		if len(missing) == 1 {
			// Seven NICs is what a node shows when an additional gVNIC network
			// on the GPU node pool has taken a PCI slot; say so, because then
			// there is no eighth Network to name and the pool is what to fix.
			fix += ". TCPXO needs all eight GPU NICs; a GPU node pool with an additional gVNIC network has only seven"
		}
		add(listLine, gpuNICs[idx], "is not mapped", fix)
	}

	owner := map[string]int{} // network → GPU NIC index of its first use
	for idx, u := range uses {
		if len(u) == 0 || !goodNetwork[u[0]] {
			continue
		}
		e := entries[u[0]]
		if first, taken := owner[e.network]; taken {
			add(e.netLine, gpuNICs[idx], "is mapped to "+quoted(e.network)+", which "+gpuNICs[first]+" already uses",
				SharedNetworkRule+"; map "+gpuNICs[idx]+" to the Network of its own VPC")
			continue
		}
		owner[e.network] = idx
	}

	if len(errs) > 0 {
		return Mapping{}, errs
	}
	var m Mapping
	for idx, u := range uses {
		m.networks[idx] = entries[u[0]].network
	}
	return m, nil
}

// networkOrPlaceholder and ifaceOrPlaceholder repeat the user's value in a
// suggested fix only when it is valid, so the fix never echoes another mistake.
func networkOrPlaceholder(network string) string {
	if _, _, ok := networkNameProblem(network); !ok {
		return "<network>"
	}
	return network
}

func ifaceOrPlaceholder(iface string) string {
	if _, ok := gpuIndex(iface); ok {
		return iface
	}
	return "eth<1-8>"
}
