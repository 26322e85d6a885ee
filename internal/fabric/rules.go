package fabric

import (
	"slices"
	"strings"
)

// RuleSet is one fabric's part of the rule set: the data that differs
// between fabrics. The machinery that applies it (Classify, Check,
// EntryRules, Table) is one, shared by every fabric, as methods on
// *RuleSet; the package-level functions of the same names apply
// TCPXORules. Fabric.Rules picks a fabric's.
//
// Each value is written once, as data, each entry citing its source where
// it is defined (TCPXORules in classes.go, GIBRules in gib.go).
type RuleSet struct {
	// vars are the variables of ClassFabric by name, each with why.
	vars map[string]string
	// pluginPrefix marks the fabric plugin's own settings, all ClassFabric
	// with pluginWhy, but for the names in prefixTuning, which the sources
	// show tune the transport rather than select it; "" for none.
	pluginPrefix, pluginWhy string
	prefixTuning            map[string]bool
	// known are ClassFabric variables the installer's env does not set but
	// a workload on GKE does, with the one value that keeps the fabric.
	// Adding one of them with this value is a Note; with any other, Fatal.
	known map[string]knownValue
	// net is the network NCCL_NET must name.
	net netRule
	// profileInput is the variable only a command that sources the
	// installer's env script reads, "" for none; profileInputRemoved is
	// what removing it does, after "removed (shipped VALUE): ".
	profileInput, profileInputRemoved string
	// enforcedEffect is what an enforced guest config rule that does not
	// hold does to the workload.
	enforcedEffect string
	// unlisted is what the checker does with an NCCL variable its config
	// does not list.
	unlisted string
	// qualified is the machines the fabric was qualified on, as the subject
	// of a sentence ("A3 Mega was"); benchmark, the benchmark that shows a
	// change helps.
	qualified, benchmark string
	// profile is what sets the shipped env in the installer.
	profile string
	// gpusWhy is why CUDA_VISIBLE_DEVICES tunes the fabric.
	gpusWhy string
	// libraryShadow qualifies a LD_LIBRARY_PATH that puts directories in
	// front of the installer's.
	libraryShadow string
	// classDocs say what each class allows, for the user guide.
	classDocs map[Class]string
}

// knownValue is a ClassFabric variable's one value that keeps the fabric,
// with why.
type knownValue struct{ value, why string }

// netRule is the network NCCL_NET must name, and the verdict on a value
// naming it in any casing (NCCL env docs, NCCL_NET: the name matches
// case-insensitively) where Check sees a difference of one of kinds.
type netRule struct {
	name     string
	kinds    []Kind
	severity Severity
	// why follows "NCCL_NET=VALUE " in the reason.
	why, fix string
}

// netVar is the variable that forces NCCL's network.
const netVar = "NCCL_NET"

// ClassDoc is one paragraph for the user guide saying what the class
// allows on this fabric.
func (rs *RuleSet) ClassDoc(c Class) string { return rs.classDocs[c] }

// Net is the network name NCCL_NET must keep (NCCL matches it
// case-insensitively).
func (rs *RuleSet) Net() string { return rs.net.name }

// PluginPrefix is the prefix of the variables that configure the fabric's
// transport itself, all of ClassFabric unless a guest config rule enforces
// them or the rule set names them as tuning; "" for none.
func (rs *RuleSet) PluginPrefix() string { return rs.pluginPrefix }

// inPluginPrefix says whether name is one of the plugin's own settings.
func (rs *RuleSet) inPluginPrefix(name string) bool {
	return rs.pluginPrefix != "" && strings.HasPrefix(name, rs.pluginPrefix) && !rs.prefixTuning[name]
}

// fabricWhy is why a ClassFabric variable is one.
func (rs *RuleSet) fabricWhy(name string) string {
	if w := rs.vars[name]; w != "" {
		return w
	}
	return rs.pluginWhy
}

// hasKnownValue says whether c is the known value of name.
func (rs *RuleSet) hasKnownValue(name string, c setting) bool {
	kv, ok := rs.known[name]
	return ok && c.is(kv.value)
}

// keepsNet says whether c names the fabric's network in any casing where
// Check sees a difference of kind diff.
func (rs *RuleSet) keepsNet(key string, diff Kind, c setting) bool {
	n := rs.net
	return key == netVar && n.name != "" && c.set && c.from == "" && strings.EqualFold(c.value, n.name) && slices.Contains(n.kinds, diff)
}
