package bomcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

func nodeEnv(pod *corev1.PodTemplateSpec) []corev1.EnvVar {
	for _, c := range pod.Spec.Containers {
		if c.Name == runtimes.NodeContainer {
			return c.Env
		}
	}
	return nil
}

func checkShippedEnv(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime, generated.FactsFile, bom.OverridesRepoPath}
	if r := need(files, t.GeneratedErr, t.OverridesErr, t.ReleasesErr); r != nil {
		return *r
	}
	in := &runtimes.Inputs{Facts: *t.Generated, Releases: t.Releases, Overrides: t.Overrides}
	want, err := in.WorkerEnv(runtimes.ProfileDefault)
	if err != nil {
		return fail(files, "delete or update the stale override in "+bom.OverridesRepoPath, "%v", err)
	}
	pod, err := shippedPod(t)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	var diffs []string
	for _, c := range wiring.DiffEnv(want, nodeEnv(pod)) {
		diffs = append(diffs, c.String())
	}
	if len(diffs) > 0 {
		return fail(files, "never edit the golden: record a reviewed override in "+bom.OverridesRepoPath+" and "+regenerate,
			"%s node env differs from profile+overrides: %s", runtimes.GoldenRuntime, strings.Join(diffs, "; "))
	}
	return pass("%d variables: %d from the profile, %d reviewed overrides", len(want), len(t.Generated.DefaultProfile), len(t.Overrides.Overrides))
}

// checkKeepsFabric holds the shipped env of each profile, reviewed
// overrides applied, to the one fabric rule set: the installer's guest
// config rules and the variables whose change routes NCCL off the fabric.
// An override may not break it, whatever its reason: the plugin would abort
// or hang the workload at NCCL init, or NCCL would silently use TCP. The
// capabilities the shipped runtime's containers add (the tcpxo-daemon's,
// the node container's) are held to the rule set's capability rule
// (checkShippedCapabilities).
func checkKeepsFabric(_ context.Context, t *Tree) Result {
	files := []string{bom.OverridesRepoPath, generated.FactsFile}
	if r := need(files, t.GeneratedErr, t.OverridesErr, t.ReleasesErr); r != nil {
		return *r
	}
	in := &runtimes.Inputs{Facts: *t.Generated, Releases: t.Releases, Overrides: t.Overrides}
	var fatal, warnings []string
	enforced := 0
	for _, profile := range facts.Profiles {
		shipped, err := in.WorkerEnv(profile)
		if err != nil {
			return fail(files, "delete or update the stale override in "+bom.OverridesRepoPath, "%v", err)
		}
		vars, _ := t.Generated.Profile(profile)
		prof := make([]corev1.EnvVar, 0, len(vars))
		for _, v := range vars {
			prof = append(prof, corev1.EnvVar{Name: v.Name, Value: v.Value})
		}
		rules := t.Generated.GuestRules(profile)
		for _, r := range rules {
			if r.Policy == guestconfig.Enforced {
				enforced++
			}
		}
		for _, f := range fabric.Check(prof, rules, shipped) {
			switch f.Severity {
			case fabric.Fatal:
				fatal = append(fatal, fmt.Sprintf("%s profile: %s", profile, f))
			case fabric.Warning:
				warnings = append(warnings, fmt.Sprintf("%s profile: %s", profile, f.Path))
			}
		}
	}
	gibProfiles := 0
	if t.GIB != nil {
		// The gIB runtimes ship each machine type's env with
		// LD_LIBRARY_PATH in front, held to gIB's rule set and checker.
		gin := &runtimes.Inputs{GIB: *t.GIB}
		for _, mt := range t.GIB.ProfileNames() {
			shipped, err := gin.RDMAEnv(mt)
			if err != nil {
				return fail(append(files, generated.GIBFactsFile), regenerate, "%v", err)
			}
			vars, _ := t.GIB.Profile(mt)
			prof := make([]corev1.EnvVar, 0, len(vars))
			for _, v := range vars {
				prof = append(prof, corev1.EnvVar{Name: v.Name, Value: v.Value})
			}
			for _, f := range fabric.GIBRules.Check(prof, t.GIB.GuestRules(mt), shipped) {
				switch f.Severity {
				case fabric.Fatal:
					fatal = append(fatal, fmt.Sprintf("gIB %s: %s", mt, f))
				case fabric.Warning:
					warnings = append(warnings, fmt.Sprintf("gIB %s: %s", mt, f.Path))
				}
			}
			gibProfiles++
		}
	}
	capBad, capCount, err := checkShippedCapabilities(t)
	if err != nil {
		return fail(append(files, runtimes.GoldenRuntime), regenerate, "%v", err)
	}
	var fixes []string
	if len(fatal) > 0 {
		fixes = append(fixes, "remove or correct the override in "+bom.OverridesRepoPath+" (a reason cannot make a fabric-losing change safe), then "+regenerate)
	}
	if len(capBad) > 0 {
		files = append(files, runtimes.GoldenRuntime)
		fixes = append(fixes, "write each capability without the "+fabric.CapPrefix+" prefix in "+shipsCapabilities+", then "+regenerate)
	}
	if len(fixes) > 0 {
		return fail(files, strings.Join(fixes, "; "), "%s", strings.Join(append(fatal, capBad...), "; "))
	}
	msg := fmt.Sprintf("%d profiles keep %d enforced guest-config rules and every fabric setting; %d shipped capabilities carry no %s prefix",
		len(facts.Profiles), enforced, capCount, fabric.CapPrefix)
	if gibProfiles > 0 {
		msg += fmt.Sprintf("; the gIB env of %d machine types keeps gIB's rule set", gibProfiles)
	}
	if len(warnings) > 0 {
		msg += fmt.Sprintf("; %d warning(s): %s", len(warnings), strings.Join(warnings, ", "))
	}
	return pass("%s", msg)
}

// shipsCapabilities is the builder that writes the shipped runtime's
// capabilities.
const shipsCapabilities = "runtimes/wiring.go"

// checkShippedCapabilities holds the capabilities every container of the
// shipped runtime's pod adds to the capability rule (fabric.CheckCapabilities),
// each list against itself: a name written with the CAP_ prefix is dropped
// by containerd (NVIDIA cluster-readiness-engine issue #438). Every finding
// fails, a warning too: the runtime is ours, and an inert duplicate is one
// edit from losing the capability with no error. It returns the findings
// and how many capabilities it judged.
func checkShippedCapabilities(t *Tree) ([]string, int, error) {
	pod, err := shippedPod(t)
	if err != nil {
		return nil, 0, err
	}
	var bad []string
	n := 0
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			continue
		}
		add := c.SecurityContext.Capabilities.Add
		n += len(add)
		for _, f := range fabric.CheckCapabilities(c.Name, add, add) {
			bad = append(bad, fmt.Sprintf("%s container %s: %s", runtimes.GoldenRuntime, c.Name, f))
		}
	}
	return bad, n, nil
}

func checkProfileFiles(_ context.Context, t *Tree) Result {
	files := []string{generated.FactsFile}
	if r := need(files, t.GeneratedErr); r != nil {
		return *r
	}
	g := t.Generated
	var missing []string
	refs := facts.ReferencedPluginFiles(g.LibDir, g.DefaultProfile, g.SimpleProfile)
	for _, name := range refs {
		if !slices.Contains(g.PluginFiles, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fail(files, "the profile points NCCL at files the installer does not ship: re-extract (go generate ./...) or fix the installer pin",
			"%s not in the extracted plugin list %v", strings.Join(missing, ", "), g.PluginFiles)
	}
	return pass("%s all shipped under /plugins", strings.Join(refs, ", "))
}

func checkPublishedDifferences(_ context.Context, t *Tree) Result {
	files := []string{bom.ReleasesRepoPath, generated.FactsFile, bom.OverridesRepoPath}
	if r := need(files, t.GeneratedErr, t.ReleasesErr, t.OverridesErr); r != nil {
		return *r
	}
	cfg, ok := t.Releases.ConfigFor(t.Generated.PluginVersion)
	if !ok {
		return fail(files, "add the release notes' NCCL config list for "+t.Generated.PluginVersion+" to "+bom.ReleasesRepoPath,
			"no published NCCL config list for installer %s to compare the profile with", t.Generated.PluginVersion)
	}
	diffs := bom.PublishedDifferences(cfg, t.Generated, t.Overrides)
	var undecided []string
	for _, d := range diffs {
		if d.Decision == nil {
			undecided = append(undecided, d.String())
		}
	}
	if len(undecided) > 0 {
		return fail(files, "review each difference and record the decision in "+bom.OverridesRepoPath+" (e.g. action follow-profile, with a reason)",
			"undecided differences from %s: %s", cfg.Source, strings.Join(undecided, "; "))
	}
	return pass("%d differences from the published list, all decided", len(diffs))
}
