package fabric

import (
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Severity ranks a finding; a greater one is worse, so cmp.Compare sorts
// them.
type Severity int

const (
	// Note: allowed; worth showing.
	Note Severity = iota + 1
	// Warning: the workload keeps the fabric but leaves the configuration
	// Google qualified, or the checker will report it.
	Warning
	// Fatal: the workload loses or breaks the fabric.
	Fatal
)

func (s Severity) String() string {
	switch s {
	case Note:
		return "note"
	case Warning:
		return "warning"
	case Fatal:
		return "fatal"
	}
	return "unknown"
}

// Kind says which rule produced a finding.
type Kind string

const (
	// Removed, Changed, Added: the candidate differs from the shipped env.
	Removed Kind = "removed"
	Changed Kind = "changed"
	Added   Kind = "added"
	// EnforcedViolation: an enforced guest config rule does not hold.
	EnforcedViolation Kind = "enforced-violation"
	// RecommendedDifference: a recommended guest config rule does not hold.
	RecommendedDifference Kind = "recommended-difference"
)

// Finding is one judged difference. It is not specific to env: Path names
// what differs ("env NCCL_PROTO" for a variable), so wiring checks can
// report removals in the same shape.
type Finding struct {
	Path     string
	Kind     Kind
	Severity Severity
	// Reason names the rule and its consequence, with both values.
	Reason string
	// Fix says what to do.
	Fix string
}

func (f Finding) String() string {
	return f.Severity.String() + ": " + f.Path + " " + string(f.Kind) + ": " + f.Reason + "; fix: " + f.Fix
}

// EnvPath is the Path of a finding about the variable name.
func EnvPath(name string) string { return "env " + name }

// Classify is TCPXORules.Classify.
func Classify(name string, rules []guestconfig.Rule) Class { return TCPXORules.Classify(name, rules) }

// Classify says how name may be changed on the fabric, given the guest
// config rules of the profile in use. The first class that applies wins: an
// enforced rule, then the fabric variables (the rule set's, each citing its
// source, and its plugin prefix), then a recommended rule, logging, other
// NCCL variables, the rest.
func (rs *RuleSet) Classify(name string, rules []guestconfig.Rule) Class {
	r, hasRule := ruleFor(name, rules)
	switch {
	case hasRule && r.Policy == guestconfig.Enforced:
		return ClassEnforced
	case rs.vars[name] != "" || rs.inPluginPrefix(name):
		return ClassFabric
	case hasRule && r.Policy == guestconfig.Recommended:
		return ClassRecommended
	case loggingVars[name]:
		return ClassLogging
	case isNCCL(name) || tuningOther[name]:
		return ClassTuning
	}
	return ClassOther
}

func ruleFor(name string, rules []guestconfig.Rule) (guestconfig.Rule, bool) {
	i := slices.IndexFunc(rules, func(r guestconfig.Rule) bool { return r.Name == name })
	if i < 0 {
		return guestconfig.Rule{}, false
	}
	return rules[i], true
}

// setting is one variable's effective setting in an env.
type setting struct {
	set   bool
	value string // literal value
	from  string // for valueFrom: where the value comes from; "" for a literal
}

func (s setting) same(o setting) bool { return s == o }

// is says whether the setting is the literal value v.
func (s setting) is(v string) bool { return s.set && s.from == "" && s.value == v }

// describe renders the setting for a sentence: `"v"`, "unset", or its
// source.
func (s setting) describe() string {
	switch {
	case !s.set:
		return "unset"
	case s.from != "":
		return "set from " + s.from + ", a value tcpxogen cannot see"
	}
	return yamlstrict.Quote(s.value)
}

// settings returns env's effective settings and its names in first-seen
// order. A later entry for a name wins, as the kubelet builds the
// environment.
func settings(env []corev1.EnvVar) (map[string]setting, []string) {
	m := make(map[string]setting, len(env))
	var order []string
	for _, e := range env {
		if _, seen := m[e.Name]; !seen {
			order = append(order, e.Name)
		}
		s := setting{set: true, value: e.Value}
		if e.ValueFrom != nil {
			s = setting{set: true, from: sourceOf(e.ValueFrom)}
		}
		m[e.Name] = s
	}
	return m, order
}

// sourceOf names a valueFrom source, precisely enough that two equal
// sources compare equal.
func sourceOf(v *corev1.EnvVarSource) string {
	switch {
	case v.ConfigMapKeyRef != nil:
		return "ConfigMap " + yamlstrict.Quote(v.ConfigMapKeyRef.Name) + " key " + yamlstrict.Quote(v.ConfigMapKeyRef.Key)
	case v.SecretKeyRef != nil:
		return "Secret " + yamlstrict.Quote(v.SecretKeyRef.Name) + " key " + yamlstrict.Quote(v.SecretKeyRef.Key)
	case v.FieldRef != nil:
		return "pod field " + yamlstrict.Quote(v.FieldRef.FieldPath)
	case v.ResourceFieldRef != nil:
		return "resource " + yamlstrict.Quote(v.ResourceFieldRef.Resource) + " of container " + yamlstrict.Quote(v.ResourceFieldRef.ContainerName)
	case v.FileKeyRef != nil:
		return "file " + yamlstrict.Quote(v.FileKeyRef.Path) + " key " + yamlstrict.Quote(v.FileKeyRef.Key) + " of volume " + yamlstrict.Quote(v.FileKeyRef.VolumeName)
	}
	return "an empty valueFrom"
}

// Check is TCPXORules.Check.
func Check(shipped []corev1.EnvVar, rules []guestconfig.Rule, candidate []corev1.EnvVar) []Finding {
	return TCPXORules.Check(shipped, rules, candidate)
}

// Check judges candidate, a container's final env, against shipped, the
// env tcpxogen ships for it, and rules, the guest config rules of the
// profile in use. It returns one finding per variable that matters, in the
// order shipped, then rules, then candidate name them.
//
// Per variable, the first rule that applies decides:
//  1. an enforced guest config rule must hold in the candidate, whatever
//     was shipped (missing, another value, or a value tcpxogen cannot see:
//     Fatal);
//  2. a ClassFabric variable must not be removed, changed or added
//     (Fatal), except LD_LIBRARY_PATH that keeps the shipped directories,
//     the rule set's known values (TCPXO: NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY,
//     NCCL_LIB_DIR; gIB: LD_LIBRARY_PATH), NCCL_NET naming the fabric's
//     network in any casing (TCPXO: added FasTrak, a Warning; gIB: gIB),
//     and removing the profile's input variable, which only a command that
//     sources the profile reads (TCPXO: NCCL_LIB_DIR, a Warning);
//  3. a recommended rule that does not hold is a Warning;
//  4. other differences from shipped: logging is a Note; tuning, and any
//     change to a shipped variable, a Warning (an NCCL variable the rules
//     do not list is reported by the checker as unexpected); adding a
//     non-NCCL variable is no finding.
func (rs *RuleSet) Check(shipped []corev1.EnvVar, rules []guestconfig.Rule, candidate []corev1.EnvVar) []Finding {
	ship, shipOrder := settings(shipped)
	cand, candOrder := settings(candidate)
	names := slices.Clone(shipOrder)
	for _, r := range rules {
		names = append(names, r.Name)
	}
	names = append(names, candOrder...)
	var out []Finding
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if f, ok := rs.judge(name, ship[name], cand[name], rules); ok {
			out = append(out, f)
		}
	}
	return out
}

// judge applies Check's rules to one variable.
func (rs *RuleSet) judge(key string, s, c setting, rules []guestconfig.Rule) (Finding, bool) {
	f := Finding{Path: EnvPath(key)}
	r, hasRule := ruleFor(key, rules)
	class := rs.Classify(key, rules)
	name := display(key)

	// 1. Enforced rules hold in the candidate, or the checker stops the
	// workload (the rule set's enforcedEffect says how, and its source).
	if hasRule && r.Policy == guestconfig.Enforced {
		if c.is(r.Value) {
			return f, false
		}
		f.Kind, f.Severity = EnforcedViolation, Fatal
		f.Reason = "the installer's guest config enforces " + name + "=" + yamlstrict.Quote(r.Value) + " and here it is " + c.describe() +
			": " + rs.enforcedEffect
		f.Fix = "set " + name + "=" + yamlstrict.Quote(r.Value) + " as the guest config requires (drop any override of it)"
		return f, true
	}

	diff := diffKind(s, c)

	// 2. Fabric variables.
	if class == ClassFabric && diff != "" {
		return rs.judgeFabric(f, key, diff, s, c), true
	}

	// 3. Recommended rules: the checker reports a difference, the
	// workload runs (facts, "Guest config checker").
	if hasRule && r.Policy == guestconfig.Recommended && !c.is(r.Value) {
		f.Kind, f.Severity = RecommendedDifference, Warning
		f.Reason = "the installer's guest config recommends " + name + "=" + yamlstrict.Quote(r.Value) + " and here it is " + c.describe() +
			": the checker reports the difference at NCCL init"
		f.Fix = "set " + name + "=" + yamlstrict.Quote(r.Value) + ", or accept the checker's warning"
		return f, true
	}
	if diff == "" {
		return f, false
	}
	f.Kind = diff

	// 4. The rest.
	switch {
	case class == ClassLogging:
		f.Severity = Note
		f.Reason = name + " is " + c.describe() + " (shipped " + s.describe() + "): logging only"
		f.Fix = "none needed"
	case class == ClassRecommended:
		// The candidate now follows the recommendation the shipped env did not.
		f.Severity = Note
		f.Reason = name + " is " + c.describe() + " (shipped " + s.describe() + "), the value the installer's guest config recommends"
		f.Fix = "none needed"
	case diff == Added && isNCCL(key):
		// What the checker does with it is the rule set's unlisted.
		f.Severity = Warning
		f.Reason = name + " is set to " + c.describe() + " and the installer's guest config does not list it: " +
			rs.unlisted + ", and " + rs.qualified + " not qualified with it"
		f.Fix = "remove it unless " + rs.benchmark + " shows it helps"
	case diff == Added && class == ClassOther:
		return f, false
	default:
		// Tuning, or any shipped variable: not enforced, but the profile's
		// value is the qualified one.
		f.Severity = Warning
		f.Reason = name + " is " + c.describe() + " where tcpxogen ships " + s.describe() +
			": the installer's guest config does not enforce it, but " + rs.qualified + " qualified with the shipped value"
		if s.set {
			f.Fix = "keep " + name + "=" + s.describe() + " unless " + rs.benchmark + " shows the change helps"
		} else {
			f.Fix = "remove it unless " + rs.benchmark + " shows it helps"
		}
	}
	return f, true
}

// plainName matches the names a sentence can show as they are.
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// display renders a variable's name for a sentence: as it is when plain,
// otherwise quoted and cut short (yamlstrict.Quote), since names come from
// users' manifests, where their length is not limited and odd characters
// would garble a terminal. Finding.Path keeps the whole name.
func display(name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return yamlstrict.Quote(name)
}

// diffKind says how c differs from s: "" when it does not.
func diffKind(s, c setting) Kind {
	switch {
	case s.same(c):
		return ""
	case !c.set:
		return Removed
	case !s.set:
		return Added
	}
	return Changed
}

// judgeFabric judges a difference in a ClassFabric variable: Fatal, but for
// the few changes the sources show keep the fabric.
func (rs *RuleSet) judgeFabric(f Finding, key string, diff Kind, s, c setting) Finding {
	f.Kind, f.Severity = diff, Fatal
	why := rs.fabricWhy(key)
	name := display(key)
	switch {
	case rs.keepsNet(key, diff, c):
		// NCCL_NET names the fabric's network, in a casing NCCL accepts.
		f.Severity = rs.net.severity
		f.Reason = netVar + "=" + c.describe() + " " + rs.net.why
		f.Fix = rs.net.fix
		return f
	case diff == Added && rs.hasKnownValue(key, c):
		f.Severity = Note
		f.Reason = name + "=" + c.describe() + " is added: " + rs.known[key].why
		f.Fix = "none needed"
		return f
	case diff == Removed && rs.profileInput != "" && key == rs.profileInput:
		// Only a command that sources the installer's profile reads it: the
		// rule set's profileInputRemoved says what then breaks.
		f.Severity = Warning
		f.Reason = name + " is removed (shipped " + s.describe() + "): " + rs.profileInputRemoved
		f.Fix = "keep " + name + "=" + s.describe() + " as shipped"
		return f
	case key == "LD_LIBRARY_PATH" && s.set && s.from == "" && c.set && c.from == "":
		if sev, reason := rs.judgeLibraryPath(s.value, c.value); sev != Fatal {
			f.Severity, f.Reason = sev, reason
			f.Fix = "keep LD_LIBRARY_PATH=" + s.describe() + " unless you need the extra directories"
			return f
		}
	}
	switch diff {
	case Removed:
		f.Reason = name + " is removed (shipped " + s.describe() + "): " + why
		f.Fix = "keep " + name + "=" + s.describe() + " as shipped"
	case Added:
		f.Reason = name + " is added as " + c.describe() + ": " + why
		if kv, ok := rs.known[key]; ok {
			f.Fix = "set " + name + "=" + yamlstrict.Quote(kv.value) + ", or remove it"
		} else {
			f.Fix = "remove " + name
		}
	default:
		f.Reason = name + " is " + c.describe() + " where tcpxogen ships " + s.describe() + ": " + why
		f.Fix = "restore " + name + "=" + s.describe()
	}
	return f
}

// judgeLibraryPath judges a literal LD_LIBRARY_PATH against the shipped
// one. Keeping every shipped directory, first and in order, still loads the
// installer's libraries first (Note). Keeping them behind others is what
// Google's release notes describe for an open-source NCCL core ("Compatible
// NCCL version": ${YOUR_OPEN_SOURCE_NCCL_CORE_PATH}:/usr/local/nvidia/lib64),
// but a directory in front can shadow the plugin (Warning; the rule set's
// libraryShadow says what its sources allow). Losing one is Fatal.
func (rs *RuleSet) judgeLibraryPath(shipped, candidate string) (Severity, string) {
	want := slices.DeleteFunc(strings.Split(shipped, ":"), func(d string) bool { return d == "" })
	got := strings.Split(candidate, ":")
	for _, d := range want {
		if !slices.Contains(got, d) {
			return Fatal, ""
		}
	}
	if len(got) >= len(want) && slices.Equal(got[:len(want)], want) {
		return Note, "LD_LIBRARY_PATH=" + yamlstrict.Quote(candidate) + " keeps the installer's directories first: the plugin still loads"
	}
	return Warning, "LD_LIBRARY_PATH=" + yamlstrict.Quote(candidate) + " puts directories before the installer's " +
		yamlstrict.Quote(shipped) + ": a libnccl.so or libnccl-net.so there shadows the installer's (" + rs.libraryShadow + ")"
}
