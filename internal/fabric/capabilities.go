package fabric

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The capability rule: how a capability the fabric's containers add
// (securityContext.capabilities.add: the tcpxo-daemon's NET_ADMIN and
// NET_BIND_SERVICE, the node container's IPC_LOCK) must be written for the
// container runtime to grant it. A Kubernetes capability name carries no
// CAP_ prefix; containerd prefixes the name it is given itself, so a name
// written with the prefix (CAP_NET_ADMIN) names no capability and is
// dropped: the container starts without it and nothing reports it
// (CapPrefixSource). Every enforcer derives from CheckCapabilities: check
// trainjob on each realized container, bom-check on the shipped runtime,
// the admission policies through CapabilityRuleFor, and the requirements
// table cites CapPrefixSource.

// CapPrefix is the prefix of a capability's kernel name (capabilities(7):
// CAP_NET_ADMIN), which a Kubernetes capability name must not carry.
const CapPrefix = "CAP_"

// CapPrefixDropped is what the container runtime does with a prefixed
// name, and CapPrefixSource the field report that found it.
const (
	CapPrefixDropped = "containerd drops a capability name written with the " + CapPrefix + " prefix: the capability is silently not granted"
	CapPrefixSource  = "NVIDIA cluster-readiness-engine issue #438, where the TCPXO daemon from v1.0.21, so denied NET_ADMIN, crash-loops in its NIC tuning step"
)

// CapabilityPrefix is the Kind of a finding about a capability name
// written with CapPrefix.
const CapabilityPrefix Kind = "capability-prefix"

// CapabilityPath is the Path of a finding about the capability name, as
// wiring.Diff names a container's capability ("capability NET_ADMIN").
func CapabilityPath(name string) string { return "capability " + name }

// Unprefixed returns the name containerd would grant for name: without
// CapPrefix, in upper case (containerd upper-cases the names it is given);
// ok says whether name carries the prefix, in any case.
func Unprefixed(name string) (plain string, ok bool) {
	upper := asciiUpper(name)
	if !strings.HasPrefix(upper, CapPrefix) {
		return upper, false
	}
	return upper[len(CapPrefix):], true
}

// asciiUpper upper-cases ASCII letters only, as the admission policies'
// CEL upperAscii does, so that both enforcers read a name alike.
func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// CheckCapabilities judges candidate, the capabilities a container adds,
// against shipped, the ones tcpxogen ships for it, whose names (without the
// prefix, should the shipped list carry one) the container needs. It
// returns one finding per distinct candidate entry written with CapPrefix,
// in the candidate's order, Path CapabilityPath(entry), Kind CapabilityPrefix. The
// entry grants nothing (CapPrefixSource); its verdict depends on the rest
// of the list:
//  1. the list also has the plain name: Warning. The plain entry grants
//     the capability and the fabric is kept today, but the prefixed one is
//     inert, and an edit that keeps it and drops the plain one (believing
//     them the same) loses the capability with no error;
//  2. the container needs the plain name: Fatal, the capability is lost;
//  3. any other name: Warning, the container does not get it.
func CheckCapabilities(container string, shipped, candidate []corev1.Capability) []Finding {
	var needed []string
	for _, c := range shipped {
		plain, _ := Unprefixed(string(c))
		needed = append(needed, plain)
	}
	var out []Finding
	for i, c := range candidate {
		entry := string(c)
		plain, prefixed := Unprefixed(entry)
		if !prefixed || slices.Contains(candidate[:i], c) {
			continue
		}
		dup := slices.ContainsFunc(candidate, func(o corev1.Capability) bool { return asciiUpper(string(o)) == plain })
		out = append(out, capabilityFinding(container, entry, plain, dup, slices.Contains(needed, plain)))
	}
	return out
}

// capabilityFinding is CheckCapabilities' verdict on one prefixed entry.
func capabilityFinding(container, entry, plain string, dup, needed bool) Finding {
	name, want := display(entry), display(plain)
	f := Finding{Path: CapabilityPath(entry), Kind: CapabilityPrefix}
	cause := name + " carries the " + CapPrefix + " prefix, and " + CapPrefixDropped + " (" + CapPrefixSource + ")"
	switch {
	case dup:
		f.Severity = Warning
		f.Reason = cause + ": the entry grants nothing; " + want + " in the same list grants the capability, so " + container +
			" keeps it, but an edit that drops " + want + " and keeps " + name + " loses it with no error; remove " + name
		f.Fix = "remove " + name + " and keep " + want
	case needed:
		f.Severity = Fatal
		f.Reason = cause + ": " + container + " lacks " + want + ", which it needs"
		f.Fix = "write " + want + " (a Kubernetes capability name carries no " + CapPrefix + " prefix)"
	default:
		f.Severity = Warning
		f.Reason = cause + ": " + container + " lacks " + want + "; write " + want + ", or remove the entry"
		f.Fix = "write " + want + " (a Kubernetes capability name carries no " + CapPrefix + " prefix), or remove the entry"
	}
	return f
}

// PlainMark stands for the entry's name without CapPrefix, upper-cased
// (Unprefixed), in a CapabilityRule's verdicts; NameMark stands for the
// entry as written.
const PlainMark = "{{plain}}"

// probeCapability is what CheckCapabilities is asked about: no capability.
const probeCapability = "TCPXOGEN_PROBE"

// CapabilityRule is the capability rule as verdicts on one entry of a
// container's capability list, for an enforcer that sees the list a patch
// writes rather than the realized container (an admission policy). The
// verdicts hold NameMark and PlainMark.
type CapabilityRule struct {
	Container string
	// Needed are the plain names the container needs, upper-cased.
	Needed []string
	// Duplicate is the verdict on a prefixed entry whose plain name the
	// list also has; Lost on one whose plain name is Needed and absent;
	// Other on any other prefixed entry.
	Duplicate, Lost, Other EntryVerdict
}

// CapabilityRuleFor derives the rule for container, which tcpxogen ships
// with the capabilities shipped, by asking CheckCapabilities about a probe
// name in each of the three cases.
func CapabilityRuleFor(container string, shipped []corev1.Capability) CapabilityRule {
	r := CapabilityRule{Container: container}
	for _, c := range shipped {
		plain, _ := Unprefixed(string(c))
		if !slices.Contains(r.Needed, plain) {
			r.Needed = append(r.Needed, plain)
		}
	}
	prefixed := corev1.Capability(CapPrefix + probeCapability)
	ask := func(needed, list []corev1.Capability) EntryVerdict {
		for _, f := range CheckCapabilities(container, needed, list) {
			if f.Path != CapabilityPath(string(prefixed)) {
				continue
			}
			mark := func(s string) string {
				s = strings.ReplaceAll(s, string(prefixed), NameMark)
				return strings.ReplaceAll(s, probeCapability, PlainMark)
			}
			return EntryVerdict{Severity: f.Severity, Kind: f.Kind, Reason: mark(f.Reason), Fix: mark(f.Fix)}
		}
		return EntryVerdict{}
	}
	r.Duplicate = ask(nil, []corev1.Capability{probeCapability, prefixed})
	r.Lost = ask([]corev1.Capability{probeCapability}, []corev1.Capability{prefixed})
	r.Other = ask(nil, []corev1.Capability{prefixed})
	return r
}

// Judge is the rule's verdict on entry, one of list; Severity 0 when the
// entry carries no prefix.
func (r CapabilityRule) Judge(entry string, list []string) EntryVerdict {
	plain, prefixed := Unprefixed(entry)
	switch {
	case !prefixed:
		return EntryVerdict{}
	case slices.ContainsFunc(list, func(o string) bool { return asciiUpper(o) == plain }):
		return r.Duplicate
	case slices.Contains(r.Needed, plain):
		return r.Lost
	}
	return r.Other
}

// FillCapability puts a capability entry's name and plain name in place of
// the marks of a CapabilityRule's verdict, as CheckCapabilities shows them.
func FillCapability(v EntryVerdict, entry string) EntryVerdict {
	plain, _ := Unprefixed(entry)
	fill := func(s string) string {
		s = strings.ReplaceAll(s, NameMark, display(entry))
		return strings.ReplaceAll(s, PlainMark, display(plain))
	}
	v.Reason, v.Fix = fill(v.Reason), fill(v.Fix)
	return v
}
