package bomcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

const regenerate = "run `go generate ./...` and commit the result"

// Checks is the ordered table of invariants.
func Checks() []Check {
	return []Check{
		{"generated-matches-bom", "generated provenance pins the BOM's installer", checkGeneratedMatchesBOM},
		{"daemon-is-published-pair", "the BOM daemon is the published pair of the BOM installer", checkPublishedPair},
		{"images-pinned-from-bom", "every manifest image is digest-pinned and is the BOM's entry for its role", checkImages},
		{"shipped-env-is-profile-plus-overrides", "the shipped env is the extracted profile with the reviewed overrides", checkShippedEnv},
		{"profile-files-shipped", "every file the profile points into the library directory is shipped", checkProfileFiles},
		{"published-differences-decided", "every difference from the published NCCL list has a recorded decision", checkPublishedDifferences},
		{"benchmark-wiring-matches", "the benchmark runtime's wiring equals the shipped runtime's", checkBenchmarkWiring},
		requirementsCheck,
		{"generated-output-reproducible", "re-extracting from the recorded source reproduces the generated code and goldens", checkReproducible},
		{"no-retired-daemon-flags", "no tcpxo-daemon argument is a flag the pinned daemon retired or rejects", checkRetiredFlags},
		{"trainer-version-matches-gomod", "the BOM's trainer version is the one go.mod links", checkTrainerVersion},
		{"daemon-invocation-runs-image-script", "the shipped tcpxo-daemon command runs the entry script the daemon image carries", checkDaemonInvocation},
		{"shipped-env-keeps-the-fabric", "the shipped env of every profile, overrides applied, keeps the guest config's rules and the fabric settings", checkKeepsFabric},
		{"worker-cuda-matches-installer", "the worker image's CUDA major is the one the plugin libraries' needed libcudart names, if any", checkWorkerCUDA},
		{"admission-policy-is-the-rule-set", "the committed admission policies are what the current fabric rule set generates", checkAdmissionPolicy},
	}
}

// need returns a failing result when an input the check reads did not load.
func need(files []string, errs ...error) *Result {
	if err := errors.Join(errs...); err != nil {
		r := fail(files, "fix the file named in the error", "cannot run: %v", err)
		return &r
	}
	return nil
}

func checkGeneratedMatchesBOM(_ context.Context, t *Tree) Result {
	files := []string{generated.FactsFile, bom.RepoPath}
	if r := need(files, t.BOMErr, t.GeneratedErr); r != nil {
		return *r
	}
	g, inst := t.Generated, t.BOM.Images.Installer
	pairs := []struct{ what, generated, bomValue string }{
		{"pinned installer reference", g.Provenance.Pinned, inst.Reference},
		{"installer image", g.InstallerImage, inst.Reference},
		{"plugin version", g.PluginVersion, inst.Version},
		{"daemon image", g.DaemonImage, t.BOM.Images.Daemon.Reference},
	}
	for _, p := range pairs {
		if p.generated != p.bomValue {
			return fail(files, regenerate+" (the BOM changed but the generated code did not follow)",
				"%s: %s has %q, %s has %q", p.what, generated.FactsFile, p.generated, bom.RepoPath, p.bomValue)
		}
	}
	return pass("installer %s, daemon %s", inst.Version, t.BOM.Images.Daemon.Version)
}

func checkPublishedPair(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, bom.ReleasesRepoPath}
	if r := need(files, t.BOMErr, t.ReleasesErr); r != nil {
		return *r
	}
	if err := bom.CheckPublished(t.BOM, t.Releases); err != nil {
		return fail(files, "pin the daemon the release notes publish with the installer (upgrade the installer first)", "%v", err)
	}
	p, _ := t.Releases.PairFor(t.BOM.Images.Installer.Version)
	return pass("installer %s ↔ daemon %s, published %s", p.Installer, p.Daemon, p.Date)
}

// imageRef is an image reference found in a manifest.
type imageRef struct{ file, where, ref string }

// manifestImages walks every container and init container of every object.
func manifestImages(ms []Manifest) []imageRef {
	var out []imageRef
	for _, m := range ms {
		for _, o := range m.Objects {
			walkContainers(o.Object, func(c map[string]any, where string) {
				if img, ok := c["image"].(string); ok {
					out = append(out, imageRef{m.Path, o.GetKind() + "/" + o.GetName() + " " + where, img})
				}
			})
		}
	}
	return out
}

func walkContainers(v any, fn func(map[string]any, string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, key := range []string{"containers", "initContainers"} {
			if list, ok := x[key].([]any); ok {
				for _, c := range list {
					if cm, ok := c.(map[string]any); ok {
						name, _ := cm["name"].(string)
						fn(cm, key+"/"+name)
					}
				}
			}
		}
		for _, child := range x {
			walkContainers(child, fn)
		}
	case []any:
		for _, child := range x {
			walkContainers(child, fn)
		}
	}
}

// repository strips the tag and digest from a reference.
func repository(ref string) string {
	repo, _, _ := bom.SplitReference(ref)
	return repo
}

func checkImages(_ context.Context, t *Tree) Result {
	files := append([]string{bom.RepoPath}, ManifestFiles...)
	errs := []error{t.BOMErr}
	for _, err := range t.ManifestErrs {
		errs = append(errs, err)
	}
	if r := need(files, errs...); r != nil {
		return *r
	}
	byRepo := map[string]bom.Role{}
	for _, role := range t.BOM.ImageRoles() {
		byRepo[role.Image.Repository()] = role
	}
	var problems []string
	imgs := manifestImages(t.Manifests)
	for _, im := range imgs {
		role, known := byRepo[repository(im.ref)]
		_, notPinned := bom.ParsePinned(im.ref)
		switch {
		case known && im.ref == role.Image.Reference:
			// The BOM's own pin, which may be digest-only with a source.
		case notPinned != nil:
			problems = append(problems, fmt.Sprintf("%s %s: not pinned by digest: %v", im.file, im.where, notPinned))
		case !known:
			problems = append(problems, fmt.Sprintf("%s %s: %q is no BOM role's image (a stray pin)", im.file, im.where, im.ref))
		case im.ref != role.Image.Reference:
			problems = append(problems, fmt.Sprintf("%s %s: %q, but the BOM's %s is %q", im.file, im.where, im.ref, role.Name, role.Image.Reference))
		}
	}
	if len(problems) > 0 {
		return fail(files, "pin images only in bom/bom.yaml and "+regenerate+"; never edit a manifest's image by hand", "%s", strings.Join(problems, "; "))
	}
	return pass("%d image references in %d manifests: all BOM pins", len(imgs), len(t.Manifests))
}

// shippedRuntime decodes the runtime golden's node pod.
func shippedPod(t *Tree) (*corev1.PodTemplateSpec, error) {
	m := t.manifest(runtimes.GoldenRuntime)
	if m == nil {
		return nil, fmt.Errorf("%s did not load: %v", runtimes.GoldenRuntime, t.ManifestErrs[runtimes.GoldenRuntime])
	}
	for _, o := range m.Objects {
		if o.GetKind() == "ClusterTrainingRuntime" {
			return nodePod(o)
		}
	}
	return nil, fmt.Errorf("%s holds no ClusterTrainingRuntime", runtimes.GoldenRuntime)
}

func nodePod(o *unstructured.Unstructured) (*corev1.PodTemplateSpec, error) {
	jobs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "replicatedJobs")
	for _, j := range jobs {
		jm, _ := j.(map[string]any)
		if jm["name"] != runtimes.NodeContainer {
			continue
		}
		raw, found, _ := unstructured.NestedMap(jm, "template", "spec", "template")
		if !found {
			break
		}
		var pod corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &pod); err != nil {
			return nil, err
		}
		return &pod, nil
	}
	return nil, fmt.Errorf("%s/%s has no %q replicated job with a pod template", o.GetKind(), o.GetName(), runtimes.NodeContainer)
}

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
// or hang the workload at NCCL init, or NCCL would silently use TCP.
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
	if len(fatal) > 0 {
		return fail(files, "remove or correct the override in "+bom.OverridesRepoPath+" (a reason cannot make a fabric-losing change safe), then "+regenerate,
			"%s", strings.Join(fatal, "; "))
	}
	msg := fmt.Sprintf("%d profiles keep %d enforced guest-config rules and every fabric setting", len(facts.Profiles), enforced)
	if len(warnings) > 0 {
		msg += fmt.Sprintf("; %d warning(s): %s", len(warnings), strings.Join(warnings, ", "))
	}
	return pass("%s", msg)
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
	diffs := PublishedDifferences(cfg, t.Generated, t.Overrides)
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

// PublishedDifference is one variable on which the release notes' published
// NCCL list and the installer's default profile disagree.
type PublishedDifference struct {
	Name                   string
	Published, Profile     string
	InPublished, InProfile bool
	// Decision is the reviewed decision in force for the installer, nil
	// when none is recorded in bom/overrides.yaml.
	Decision *bom.Override
}

func (d PublishedDifference) String() string {
	return fmt.Sprintf("%s: published %s, profile %s", d.Name, show(d.Published, d.InPublished), show(d.Profile, d.InProfile))
}

// PublishedDifferences compares cfg (the published list, its lib directory
// replaced by the workload's) with g's default profile, by name, and finds
// each difference's decision in o: the one rule bom-check, bump and review
// apply.
func PublishedDifferences(cfg bom.NCCLConfig, g *facts.Facts, o *bom.Overrides) []PublishedDifference {
	published := map[string]string{}
	for _, e := range cfg.EnvIn(g.LibDir) {
		published[e.Name] = e.Value
	}
	profile := map[string]string{}
	for _, e := range g.DefaultProfile {
		profile[e.Name] = e.Value
	}
	var out []PublishedDifference
	names := slices.AppendSeq(slices.Collect(maps.Keys(published)), maps.Keys(profile))
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		pv, inPub := published[name]
		xv, inProf := profile[name]
		if inPub && inProf && pv == xv {
			continue
		}
		d := PublishedDifference{Name: name, Published: pv, Profile: xv, InPublished: inPub, InProfile: inProf}
		if o != nil {
			if ov, ok := o.Decision(name, g.PluginVersion); ok {
				d.Decision = &ov
			}
		}
		out = append(out, d)
	}
	return out
}

func show(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprintf("%q", v)
}

func checkBenchmarkWiring(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime, benchmark.GoldenPath}
	bm := t.manifest(benchmark.GoldenPath)
	if bm == nil {
		if _, missing := t.ManifestErrs[benchmark.GoldenPath]; missing {
			return Result{Status: Empty, Message: "no benchmark manifest (" + benchmark.GoldenPath + "): nothing to compare", Files: files}
		}
	}
	shipped, err := typedObject[trainer.ClusterTrainingRuntime](t, runtimes.GoldenRuntime, trainer.ClusterTrainingRuntimeKind)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	bench, err := typedObject[trainer.TrainingRuntime](t, benchmark.GoldenPath, trainer.TrainingRuntimeKind)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	if diffs := benchmark.WiringEqual(shipped, bench); len(diffs) > 0 {
		return fail(files, "derive the benchmark from the shipped runtime ("+regenerate+"); never edit it by hand",
			"the benchmark would measure other wiring than ships: %s", strings.Join(diffs, "; "))
	}
	return pass("%s/%s carries the shipped wiring", bench.Namespace, bench.Name)
}

// typedObject decodes the first object of kind in a loaded manifest.
func typedObject[T any](t *Tree, rel, kind string) (*T, error) {
	m := t.manifest(rel)
	if m == nil {
		return nil, fmt.Errorf("%s did not load: %v", rel, t.ManifestErrs[rel])
	}
	for _, o := range m.Objects {
		if o.GetKind() == kind {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out); err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			return &out, nil
		}
	}
	return nil, fmt.Errorf("%s holds no %s", rel, kind)
}

func checkReproducible(ctx context.Context, t *Tree) Result {
	files := []string{generated.FactsFile, runtimes.GoldenRuntime, runtimes.GoldenComponents}
	if r := need(files, t.BOMErr, t.GeneratedErr, t.ReleasesErr, t.OverridesErr); r != nil {
		return *r
	}
	if t.Options.Reproduce == nil {
		return fail(files, "run bom-check through tcpxogen check, which re-runs the pipeline", "cannot run: this bom-check was given no way to re-run the pipeline")
	}
	source, rendered, requests, err := t.Options.Reproduce(ctx, t.Root, t.BOM, t.Generated, t.Releases, t.Overrides, t.Options.CacheDir, t.Options.Transport)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	if !bytes.Equal(rendered[generated.FactsFile], t.GeneratedRaw) {
		return fail([]string{generated.FactsFile}, "never edit generated code: "+regenerate, "%s differs from a fresh extraction of %s (hand-edited or stale)", generated.FactsFile, source)
	}
	var stale []string
	for _, rel := range slices.Sorted(maps.Keys(rendered)) {
		if rel == generated.FactsFile {
			continue
		}
		current, err := readSource(filepath.Join(t.Root, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(current, rendered[rel]) {
			stale = append(stale, rel)
		}
	}
	if len(stale) > 0 {
		return fail(stale, "never edit goldens: "+regenerate+" (review the diff first)", "%s differ from a fresh render", strings.Join(stale, ", "))
	}
	return pass("%s and %d goldens and generated pages reproduce byte for byte from %s (%d network requests)", generated.FactsFile, len(rendered)-1, source, requests)
}

// daemonFlags are tcpxo-daemon flags a release retired or rejects, from
// the daemon release (from, "" for every pinned one) that does. Sources:
// Google's release notes for --num_nics; the round-3 facts (NVCRE's
// catalog, daemon >= v1.0.21) for the others.
var daemonFlags = []struct {
	flag, from string
	// fatal: the daemon exits at start on it, not merely ignores it.
	fatal bool
	note  string
}{
	{"--num_nics", "", false, "retired in installer v1.0.14 / daemon v1.0.20 (accepted, no effect)"},
	{"--uid", "v1.0.21", false, "retired from daemon v1.0.21 (the daemon logs an error; the flag has no effect)"},
	{"--alsologtostderr", "v1.0.21", false, "retired from daemon v1.0.21 (the daemon logs an error; the flag has no effect)"},
	{"--enforce_kernel_ipv6_support", "v1.0.21", true, "rejected from daemon v1.0.21: the daemon exits before its receive path starts, so the pod never reaches the fabric"},
}

// daemonAtLeast reports whether the pinned daemon tag is at least from. An
// unreadable tag applies every rule: a flag is refused rather than let by.
func daemonAtLeast(pinned, from string) bool {
	if from == "" {
		return true
	}
	var a, b [3]int
	if _, err := fmt.Sscanf(pinned, "v%d.%d.%d", &a[0], &a[1], &a[2]); err != nil {
		return true
	}
	if _, err := fmt.Sscanf(from, "v%d.%d.%d", &b[0], &b[1], &b[2]); err != nil {
		return true
	}
	return slices.Compare(a[:], b[:]) >= 0
}

func checkRetiredFlags(_ context.Context, t *Tree) Result {
	files := ManifestFiles
	var problems []string
	daemonRepo, daemonTag := "", ""
	if t.BOM != nil {
		daemonRepo = t.BOM.Images.Daemon.Repository()
	}
	if t.Generated != nil {
		daemonTag = t.Generated.DaemonVersion
	}
	n, fatal := 0, false
	for _, m := range t.Manifests {
		for _, o := range m.Objects {
			walkContainers(o.Object, func(c map[string]any, where string) {
				img, _ := c["image"].(string)
				if c["name"] != runtimes.DaemonContainer && (daemonRepo == "" || repository(img) != daemonRepo) {
					return
				}
				n++
				for _, arg := range append(stringList(c["command"]), stringList(c["args"])...) {
					for _, df := range daemonFlags {
						if !daemonAtLeast(daemonTag, df.from) {
							continue
						}
						if arg == df.flag || strings.HasPrefix(arg, df.flag+"=") || strings.Contains(arg, " "+df.flag) {
							fatal = fatal || df.fatal
							problems = append(problems, fmt.Sprintf("%s %s/%s %s: %s is %s", m.Path, o.GetKind(), o.GetName(), where, excerpt.Quote(arg), df.note))
						}
					}
				}
			})
		}
	}
	if len(problems) > 0 {
		fix := "remove the retired flag from the daemon builder (runtimes/wiring.go, whose only daemon flag is " + runtimes.DaemonHops + ") and " + regenerate
		if fatal {
			fix = "remove the rejected flag from the daemon builder (runtimes/wiring.go, whose only daemon flag is " + runtimes.DaemonHops + ") and " + regenerate
		}
		return fail(files, fix, "%s", strings.Join(problems, "; "))
	}
	return pass("%d daemon containers, no retired or rejected flags (daemon %s)", n, daemonTag)
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

var requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?(\S+)\s+(v\S+)`)

func checkTrainerVersion(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, "go.mod"}
	if r := need(files, t.BOMErr, t.GoModErr); r != nil {
		return *r
	}
	tr := t.BOM.Trainer
	linked := ""
	for _, m := range requireLine.FindAllSubmatch(t.GoMod, -1) {
		if string(m[1]) == tr.Module {
			linked = string(m[2])
		}
	}
	switch {
	case linked == "":
		return fail(files, "add `require "+tr.Module+" "+tr.Version+"` to go.mod", "go.mod does not require %s", tr.Module)
	case linked != tr.Version:
		return fail(files, fmt.Sprintf("make them agree: go get %s@%s, or set trainer.version to %s", tr.Module, tr.Version, linked),
			"%s says trainer %s, go.mod requires %s %s: the proofs would validate against CRDs and a framework that do not ship", bom.RepoPath, tr.Version, tr.Module, linked)
	}
	return pass("%s %s in both", tr.Module, tr.Version)
}

// checkDaemonInvocation fails when the shipped daemon container would not
// run the script the daemon image carries: a command that execs the script
// directly needs its exec bit, which the published image does not set, so
// the pod would fail with "permission denied" and never reach the fabric.
func checkDaemonInvocation(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime, generated.FactsFile}
	if r := need(files, t.GeneratedErr); r != nil {
		return *r
	}
	pod, err := shippedPod(t)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	i := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == runtimes.DaemonContainer })
	if i < 0 {
		return fail(files, regenerate, "%s has no %s init container", runtimes.GoldenRuntime, runtimes.DaemonContainer)
	}
	g := t.Generated
	if why := invocationProblem(pod.Spec.InitContainers[i].Command, g.DaemonEntrypoint, g.DaemonEntryScript, g.DaemonEntryScriptMode); why != "" {
		return fail(files, "derive the daemon command from the generated DaemonEntrypoint (the image's own) and "+regenerate, "%s %s: %s", runtimes.GoldenRuntime, runtimes.DaemonContainer, why)
	}
	return pass("%q runs %s (mode %04o in the image)", pod.Spec.InitContainers[i].Command, g.DaemonEntryScript, g.DaemonEntryScriptMode)
}

// invocationProblem says why command would not run script, or returns "".
// An empty command runs the image's entrypoint, which does.
func invocationProblem(command, entrypoint []string, script string, mode int) string {
	switch {
	case len(command) == 0, slices.Equal(command, entrypoint):
		return ""
	case command[0] == script && mode&0o111 == 0:
		return fmt.Sprintf("the command execs %s, which the daemon image carries with mode %04o (no exec bit): the container would fail with \"permission denied\"; run it as the image does, %q", script, mode, entrypoint)
	case command[0] == script:
		return ""
	case len(command) > 1 && facts.IsInterpreter(command[0]) && command[1] == script:
		return ""
	}
	return fmt.Sprintf("the command %q does not run %s, the script the daemon image's entrypoint %q runs", command, script, entrypoint)
}

// checkWorkerCUDA holds the worker image's declared CUDA major to what the
// plugin libraries need (PluginCUDA): a needed libcudart.so.<N> binds it to
// N; a plugin set that needs none binds nothing, and the driver branch the
// release names is what matters.
func checkWorkerCUDA(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, generated.FactsFile, bom.ReleasesRepoPath}
	if r := need(files, t.BOMErr, t.GeneratedErr, t.ReleasesErr); r != nil {
		return *r
	}
	binding, err := PluginCUDABinding(t.Generated.PluginLibraries)
	if err != nil {
		return fail(files, regenerate, "installer %s: %v", t.Generated.PluginVersion, err)
	}
	pair, _ := t.Releases.PairFor(t.Generated.PluginVersion)
	w := t.BOM.Images.Worker
	ok, detail := binding.Worker(w.CUDAMajor, pair.DriverBranch)
	if !ok {
		return fail(files, fmt.Sprintf("pin a worker image built for CUDA %d and set images.worker.cudaMajor: %d", binding.Major, binding.Major),
			"worker %s, installer %s: %s", w.Reference, t.Generated.PluginVersion, detail)
	}
	return pass("installer %s: %s (image built on CUDA %s)", t.Generated.PluginVersion, detail, t.Generated.CUDAVersion)
}
