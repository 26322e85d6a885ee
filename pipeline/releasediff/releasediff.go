// Package releasediff is the semantic summary of a change to what ships:
// between two snapshots of the BOM's pins and the generated facts (before
// and after `tcpxogen bump`, or a git revision and the working tree for
// `tcpxogen review`), what a pull request reviewer must see: the images, the
// env of each profile with its fabric class, the guest-config rules, the
// files in /plugins and /scripts, the CUDA rule, driver branch and GKE floor,
// the plugin libraries' needed sonames, every decision still to record, and,
// when the shipped runtime changes, that the TrainJobs already submitted
// keep the wiring they were created with.
// It owns the comparison and its one Markdown rendering, not how either
// snapshot is obtained (internal/bump, internal/review) nor the rules it
// reports (internal/fabric, internal/coupling).
package releasediff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

// Snapshot is one side of the comparison: the generated facts and the
// reviewed inputs they are judged with.
type Snapshot struct {
	Facts     *facts.Facts
	BOM       *bom.BOM
	Releases  *bom.Releases
	Overrides *bom.Overrides
}

// Report is what Markdown renders.
type Report struct {
	// Title is the heading, e.g. "tcpxogen bump --installer v1.0.16".
	Title    string
	Old, New Snapshot
	// Files are the repo-relative files the change rewrote, if known.
	Files []string
	// Check is bom-check's report on the new tree; nil when it was not run.
	Check *bomcheck.Report
	// CheckNote says why Check is nil.
	CheckNote string
}

// Decision is one difference of the new installer's profile from its
// published NCCL list, with its reviewed decision (nil: still to record).
type Decision = bom.PublishedDifference

// Decisions returns the new snapshot's differences from the published list
// and the decisions recorded for them. ok is false when the release table
// has no published list for the installer (then nothing can be judged).
func Decisions(s Snapshot) (ds []Decision, ok bool) {
	if s.Facts == nil || s.Releases == nil {
		return nil, false
	}
	cfg, found := s.Releases.ConfigFor(s.Facts.PluginVersion)
	if !found {
		return nil, false
	}
	return bom.PublishedDifferences(cfg, s.Facts, s.Overrides), true
}

// Missing lists the differences of s with no recorded decision.
func Missing(s Snapshot) []Decision {
	ds, _ := Decisions(s)
	return slices.DeleteFunc(ds, func(d Decision) bool { return d.Decision != nil })
}

// Markdown renders r for a pull request: the one renderer bump and review
// share, so both show a change the same way.
func Markdown(r Report) string {
	var b strings.Builder
	o, n := r.Old.Facts, r.New.Facts
	if o == nil {
		o = &facts.Facts{}
	}
	if n == nil {
		n = &facts.Facts{}
	}
	fmt.Fprintf(&b, "## %s\n\n", r.Title)
	fmt.Fprintf(&b, "Installer %s → %s, daemon %s → %s.\n\n", or(o.PluginVersion), or(n.PluginVersion), or(o.DaemonVersion), or(n.DaemonVersion))
	if was, now, back := r.New.Releases.RollBack(o.PluginVersion, n.PluginVersion); back {
		fmt.Fprintf(&b, "**ROLL BACK**: installer %s was published on %s, before %s (%s): the change takes the nodes' pair back to a release Google has superseded.\n\n", now.Installer, now.Date, was.Installer, was.Date)
	}
	for _, p := range []struct {
		what        string
		substituted bool
		read        string
	}{{"installer", n.Provenance.Substituted, n.Provenance.Read}, {"daemon", n.DaemonProvenance.Substituted, n.DaemonProvenance.Read}} {
		if p.substituted {
			fmt.Fprintf(&b, "**SUBSTITUTE**: the %s facts were read from %s, not from the pinned image; `make release-check` refuses this tree until they are extracted from the registry.\n\n", p.what, code(p.read))
		}
	}

	b.WriteString("### Images\n\n| role | old | new |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| installer | %s | %s |\n", code(o.InstallerImage), code(n.InstallerImage))
	fmt.Fprintf(&b, "| daemon | %s | %s |\n\n", code(o.DaemonImage), code(n.DaemonImage))

	writeRelease(&b, r)

	for _, prof := range facts.Profiles {
		op, _ := o.Profile(prof)
		np, _ := n.Profile(prof)
		writeEnv(&b, prof, op, np, n.GuestRules(prof))
		writeRules(&b, prof, o.GuestRules(prof), n.GuestRules(prof))
	}

	b.WriteString("### Files\n\n")
	writeFiles(&b, "/plugins", o.PluginFiles, n.PluginFiles)
	writeFiles(&b, "/scripts", o.Scripts, n.Scripts)
	b.WriteString("\n")

	writeLibraries(&b, o.PluginLibraries, n.PluginLibraries)
	writePublished(&b, r)
	writeDecisions(&b, r)
	writeCheck(&b, r)
	writeSubmitted(&b, r)
	if len(r.Files) > 0 {
		b.WriteString("### Files rewritten\n\n")
		for _, f := range r.Files {
			fmt.Fprintf(&b, "- %s\n", code(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func pairOf(s Snapshot) bom.Pair {
	if s.Facts == nil || s.Releases == nil {
		return bom.Pair{}
	}
	p, _ := s.Releases.PairFor(s.Facts.PluginVersion)
	return p
}

func writeRelease(b *strings.Builder, r Report) {
	op, np := pairOf(r.Old), pairOf(r.New)
	of, nf := r.Old.Facts, r.New.Facts
	b.WriteString("### Release (bom/releases.yaml) and CUDA\n\n| | old | new |\n|---|---|---|\n")
	row := func(what, a, c string) {
		mark := ""
		if a != c {
			mark = " **changed**"
		}
		fmt.Fprintf(b, "| %s | %s | %s%s |\n", what, or(a), or(c), mark)
	}
	row("release date", op.Date, np.Date)
	row("NCCL qualified", op.NCCL, np.NCCL)
	row("CUDA qualified", op.CUDA, np.CUDA)
	row("GPU driver", op.Driver, np.Driver)
	row("driver branch (gpu-driver-version)", op.DriverBranch, np.DriverBranch)
	row("GKE floor", op.GKE, np.GKE)
	row("glibc floor", op.GLibc, np.GLibc)
	row("precompiled libs", op.PrecompiledLibs, np.PrecompiledLibs)
	var ocuda, ncuda, onccl, nnccl string
	if of != nil {
		ocuda, onccl = of.CUDAVersion, of.NCCLVersion
	}
	if nf != nil {
		ncuda, nnccl = nf.CUDAVersion, nf.NCCLVersion
	}
	row("NCCL in the image", onccl, nnccl)
	row("CUDA_VERSION of the image (a fact, not the rule)", ocuda, ncuda)
	row("worker CUDA rule (plugin DT_NEEDED)", cudaRule(r.Old, op), cudaRule(r.New, np))
	b.WriteString("\n")
}

// cudaRule is what the plugin libraries bind the worker to, as bom-check
// reads it.
func cudaRule(s Snapshot, p bom.Pair) string {
	if s.Facts == nil || len(s.Facts.PluginLibraries) == 0 {
		return ""
	}
	binding, err := bom.PluginCUDABinding(s.Facts.PluginLibraries)
	if err != nil {
		return "error: " + err.Error()
	}
	return binding.Need(p.DriverBranch)
}

func writeEnv(b *strings.Builder, prof string, old, cur []facts.EnvVar, rules []guestconfig.Rule) {
	fmt.Fprintf(b, "### Env, profile %s\n\n", prof)
	oldBy := map[string]string{}
	for _, e := range old {
		oldBy[e.Name] = e.Value
	}
	curBy := map[string]bool{}
	var rows []string
	for _, e := range cur {
		curBy[e.Name] = true
		ov, had := oldBy[e.Name]
		switch {
		case !had:
			rows = append(rows, fmt.Sprintf("| added | %s | | %s | %s |", code(e.Name), code(e.Value), fabric.Classify(e.Name, rules)))
		case ov != e.Value:
			rows = append(rows, fmt.Sprintf("| changed | %s | %s | %s | %s |", code(e.Name), code(ov), code(e.Value), fabric.Classify(e.Name, rules)))
		}
	}
	for _, e := range old {
		if !curBy[e.Name] {
			rows = append(rows, fmt.Sprintf("| removed | %s | %s | | %s |", code(e.Name), code(e.Value), fabric.Classify(e.Name, rules)))
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(b, "No variable added, removed or changed (%d exported).\n\n", len(cur))
		return
	}
	b.WriteString("| change | variable | old | new | fabric class |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n")
}

func writeRules(b *strings.Builder, prof string, old, cur []guestconfig.Rule) {
	fmt.Fprintf(b, "### Guest-config rules, profile %s\n\n", prof)
	oldBy := map[string]guestconfig.Rule{}
	for _, r := range old {
		oldBy[r.Name] = r
	}
	curBy := map[string]bool{}
	var rows []string
	for _, r := range cur {
		curBy[r.Name] = true
		or, had := oldBy[r.Name]
		switch {
		case !had:
			rows = append(rows, fmt.Sprintf("| added | %s | | %s |", code(r.Name), rule(r)))
		case or.Value != r.Value || or.Policy != r.Policy:
			rows = append(rows, fmt.Sprintf("| changed | %s | %s | %s |", code(r.Name), rule(or), rule(r)))
		}
	}
	for _, r := range old {
		if !curBy[r.Name] {
			rows = append(rows, fmt.Sprintf("| removed | %s | %s | |", code(r.Name), rule(r)))
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(b, "No rule added, removed or changed (%s).\n\n", count(len(cur), "rule"))
		return
	}
	b.WriteString("| change | variable | old | new |\n|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n\n")
}

func rule(r guestconfig.Rule) string {
	return code(r.Value) + " " + strings.ToLower(strings.TrimPrefix(string(r.Policy), "POLICY_"))
}

func writeFiles(b *strings.Builder, dir string, old, cur []string) {
	added := slices.DeleteFunc(slices.Clone(cur), func(f string) bool { return slices.Contains(old, f) })
	gone := slices.DeleteFunc(slices.Clone(old), func(f string) bool { return slices.Contains(cur, f) })
	fmt.Fprintf(b, "- %s: ", dir)
	if len(added)+len(gone) == 0 {
		fmt.Fprintf(b, "no file new or gone (%s)\n", count(len(cur), "file"))
		return
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "new "+codes(added))
	}
	if len(gone) > 0 {
		parts = append(parts, "gone "+codes(gone))
	}
	b.WriteString(strings.Join(parts, "; ") + "\n")
}

func writeLibraries(b *strings.Builder, old, cur []facts.Library) {
	b.WriteString("### Library needs (DT_NEEDED of /plugins)\n\n")
	oldBy := map[string][]string{}
	for _, l := range old {
		oldBy[l.Name] = l.Needed
	}
	curBy := map[string]bool{}
	var lines []string
	for _, l := range cur {
		curBy[l.Name] = true
		on, had := oldBy[l.Name]
		switch {
		case !had:
			lines = append(lines, fmt.Sprintf("- %s new, needs %s", code(l.Name), codes(l.Needed)))
		case !slices.Equal(on, l.Needed):
			var parts []string
			if a := slices.DeleteFunc(slices.Clone(l.Needed), func(s string) bool { return slices.Contains(on, s) }); len(a) > 0 {
				parts = append(parts, "now needs "+codes(a))
			}
			if g := slices.DeleteFunc(slices.Clone(on), func(s string) bool { return slices.Contains(l.Needed, s) }); len(g) > 0 {
				parts = append(parts, "no longer needs "+codes(g))
			}
			if len(parts) == 0 {
				parts = append(parts, "same sonames, new order "+codes(l.Needed))
			}
			lines = append(lines, fmt.Sprintf("- %s %s", code(l.Name), strings.Join(parts, ", ")))
		}
	}
	for _, l := range old {
		if !curBy[l.Name] {
			lines = append(lines, fmt.Sprintf("- %s gone (needed %s)", code(l.Name), codes(l.Needed)))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintf(b, "No change (%s).\n\n", count(len(cur), "library"))
		return
	}
	b.WriteString(strings.Join(lines, "\n") + "\n\n")
}

// writePublished shows the published NCCL list's own changes (its new
// entries are what a bump brings) and the new profile's differences from
// it, each with its decision.
func writePublished(b *strings.Builder, r Report) {
	n := r.New.Facts
	if n == nil {
		return
	}
	fmt.Fprintf(b, "### Published NCCL list of %s\n\n", n.PluginVersion)
	var oldEnv, newEnv []facts.EnvVar
	if r.Old.Facts != nil && r.Old.Releases != nil {
		if c, ok := r.Old.Releases.ConfigFor(r.Old.Facts.PluginVersion); ok {
			oldEnv = c.Env
		}
	}
	newCfg, ok := bom.NCCLConfig{}, false
	if r.New.Releases != nil {
		newCfg, ok = r.New.Releases.ConfigFor(n.PluginVersion)
	}
	if !ok {
		fmt.Fprintf(b, "None in bom/releases.yaml: add the release notes' list for %s there.\n\n", n.PluginVersion)
		return
	}
	newEnv = newCfg.Env
	fmt.Fprintf(b, "From %s, %d entries.\n\n", newCfg.Source, len(newEnv))
	ds, _ := Decisions(r.New)
	decisionOf := func(name string) string {
		for _, d := range ds {
			if d.Name == name {
				return decision(d)
			}
		}
		return "the profile agrees"
	}
	var rows []string
	oldBy := map[string]string{}
	for _, e := range oldEnv {
		oldBy[e.Name] = e.Value
	}
	for _, e := range newEnv {
		ov, had := oldBy[e.Name]
		switch {
		case !had:
			rows = append(rows, fmt.Sprintf("| new entry | %s | | %s | %s |", code(e.Name), code(e.Value), decisionOf(e.Name)))
		case ov != e.Value:
			rows = append(rows, fmt.Sprintf("| changed | %s | %s | %s | %s |", code(e.Name), code(ov), code(e.Value), decisionOf(e.Name)))
		}
	}
	for _, e := range oldEnv {
		if !slices.ContainsFunc(newEnv, func(x facts.EnvVar) bool { return x.Name == e.Name }) {
			rows = append(rows, fmt.Sprintf("| dropped | %s | %s | | %s |", code(e.Name), code(e.Value), decisionOf(e.Name)))
		}
	}
	if len(rows) > 0 {
		b.WriteString("Entries new, changed or dropped since the previous installer's list:\n\n| change | variable | old | new | decision |\n|---|---|---|---|---|\n")
		b.WriteString(strings.Join(rows, "\n") + "\n\n")
	}
	if len(ds) == 0 {
		b.WriteString("The default profile agrees with every entry.\n\n")
		return
	}
	b.WriteString("Differences of the default profile from the list:\n\n| variable | published | profile | decision |\n|---|---|---|---|\n")
	for _, d := range ds {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(d.Name), shown(d.Published, d.InPublished), shown(d.Profile, d.InProfile), decision(d))
	}
	b.WriteString("\n")
}

func decision(d Decision) string {
	if d.Decision == nil {
		return "**none recorded**"
	}
	scope := "every installer"
	if len(d.Decision.Installers) > 0 {
		scope = strings.Join(d.Decision.Installers, ", ")
	}
	return fmt.Sprintf("%s (bom/overrides.yaml, for %s)", d.Decision.Action, scope)
}

func writeDecisions(b *strings.Builder, r Report) {
	b.WriteString("### Decisions to record\n\n")
	if r.New.Facts == nil {
		b.WriteString("Nothing to judge: no generated facts.\n\n")
		return
	}
	if _, ok := Decisions(r.New); !ok {
		fmt.Fprintf(b, "- the published NCCL list of %s: add it to `bom/releases.yaml`, then every difference from the profile needs a decision in `bom/overrides.yaml`\n\n", r.New.Facts.PluginVersion)
		return
	}
	missing := Missing(r.New)
	if len(missing) == 0 {
		b.WriteString("None: every difference from the published list has a decision.\n\n")
		return
	}
	for _, d := range missing {
		fmt.Fprintf(b, "- %s: published %s, profile %s: record the decision in `bom/overrides.yaml` (action add, replace, pin, remove or follow-profile, `installers: [%s]`, and a reason citing the release notes)\n",
			code(d.Name), shown(d.Published, d.InPublished), shown(d.Profile, d.InProfile), r.New.Facts.PluginVersion)
	}
	b.WriteString("\n")
}

func writeCheck(b *strings.Builder, r Report) {
	b.WriteString("### bom-check\n\n")
	if r.Check == nil {
		b.WriteString(or(r.CheckNote) + "\n\n")
		return
	}
	var failed []string
	for _, res := range r.Check.Results {
		if res.Status == bomcheck.Fail {
			failed = append(failed, fmt.Sprintf("- FAIL %s: %s (fix: %s)", res.ID, res.Message, res.Fix))
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(b, "Passed: %d checks.\n\n", len(r.Check.Results))
		return
	}
	fmt.Fprintf(b, "%d of %d checks failed:\n\n%s\n\n", len(failed), len(r.Check.Results), strings.Join(failed, "\n"))
}

// writeSubmitted says, when the change rewrites the shipped runtime, that
// applying it does not reach the TrainJobs submitted before: Kubeflow
// Trainer v2.3.0 builds a TrainJob from the snapshot of the runtime it took
// on its first reconcile (KEP-2599, kubeflow/trainer PR #3580:
// pkg/runtime/core/snapshot.go, ConfigMap <trainjob>-runtime-snapshot), and
// on v2.2.0 the running pods keep what they started with.
func writeSubmitted(b *strings.Builder, r Report) {
	if !slices.Contains(r.Files, runtimes.GoldenRuntime) {
		return
	}
	b.WriteString("### TrainJobs already submitted\n\n")
	b.WriteString("Applying the new runtime does not change the TrainJobs created before it: they keep the wiring they were created with, " +
		"on Kubeflow Trainer v2.3.0 and later from the runtime snapshot taken when the TrainJob was first reconciled " +
		"(ConfigMap `<trainjob>-runtime-snapshot`), on v2.2.0 in the pods already running. " +
		"Resubmit (delete and recreate) the running and suspended ones to run the new wiring; " +
		"`tcpxogen check cluster` lists the TrainJobs of the shipped runtime whose snapshot differs from the deployed runtime.\n\n")
}

func shown(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return code(v)
}

func or(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// code quotes s as Markdown code; a backtick inside (never in these
// values, but the input is an image's) would end the span, so it is
// replaced.
func code(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func codes(ss []string) string {
	if len(ss) == 0 {
		return "nothing"
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
