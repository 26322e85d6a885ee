// Package lint judges TrainJob files against the shipped runtime
// torch-distributed-tcpxo: the schema proof first (a document the API server
// rejects is never judged), then every document realized through the trainer
// runtime framework and its wiring and launch judged by the fabric rule set.
// It owns the verdict lines and the exit contract of `check trainjob`; it does
// not own the rules (internal/fabric), the realization (validators/realize)
// or the command's flags (tools/tcpxogen).
package lint

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// InputError is a file this lint cannot judge (exit 2 in the CLI): not
// YAML, not a TrainJob of the shipped runtime, or one the API server would
// reject. The user fixes the document before anything can be judged.
type InputError struct{ err error }

func (e *InputError) Error() string { return e.err.Error() }
func (e *InputError) Unwrap() error { return e.err }

// BadInput marks the error as the user's input to fix.
func (e *InputError) BadInput() bool { return true }

func badInput(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// File realizes every TrainJob document of data (read from the file name)
// against the shipped runtime on the linked trainer and writes, per
// document, the schema findings, every change to the wiring, and the
// launch verdict to w (Trainers runs it once per trainer version, each in
// the binary that links it). It fails when any document loses the fabric
// or launches wrong, and returns an
// *InputError when any document is not a TrainJob of the shipped runtime,
// before anything is judged.
func File(ctx context.Context, w io.Writer, name string, data []byte) error {
	return FileWith(ctx, w, name, data, Options{})
}

// Options say how much File prints.
type Options struct {
	// Verbose prints every element: unchanged-wiring lines ("ok"), the
	// trainer's own rendezvous variables, launch notes already summed up
	// in the verdict line. Without it a document prints what the user must
	// act on (FAIL, warn, the user's own overrides) and one verdict line.
	Verbose bool
	// FileLabel names the file on every line about a document, for a run
	// over many files where "[doc 1 ns/name]" alone does not say which
	// file passed. A sibling binary realizing another trainer version is
	// told through FileLabelEnv.
	FileLabel bool
	// Announced, when set, is the run's record of the trainer versions
	// whose realization was already named: each is named once per run,
	// not once per file.
	Announced map[string]bool
}

// machinery is what every document is judged with, built once per process
// and only when a file is judged: the schema proof of the linked trainer's
// CRDs and webhooks, and each shipped runtime with its fabric's rule set
// and checker rules, by runtime name. A pre-commit hook over many files
// pays for it once.
var machinery = sync.OnceValues(func() (*judge, error) {
	v, err := schema.NewTrainer()
	if err != nil {
		return nil, err
	}
	in, err := shipped.Inputs()
	if err != nil {
		return nil, err
	}
	j := &judge{schema: v, runtimes: map[string]shippedRuntime{}}
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		return nil, err
	}
	j.runtimes[rt.Name] = shippedRuntime{runtime: rt, fabric: fabric.TCPXO, rules: runtimes.RulesFor(in.Facts, wiring.Of(tpl, runtimes.NodeContainer).NodeEnv)}
	for _, mt := range fabric.GIB.MachineTypes {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt.Name})
		if err != nil {
			return nil, err
		}
		j.runtimes[rt.Name] = shippedRuntime{runtime: rt, fabric: fabric.GIB, rules: in.GIB.GuestRules(mt.Name), imageFix: gibImageFix(in, rt.Name)}
	}
	return j, nil
})

type judge struct {
	schema   *schema.Validator
	runtimes map[string]shippedRuntime
}

// shippedRuntime is one runtime tcpxogen ships, with what judges a
// TrainJob of it: its fabric (whose rule set classifies each variable) and
// the installer's checker rules for its env.
type shippedRuntime struct {
	runtime *trainer.ClusterTrainingRuntime
	fabric  fabric.Fabric
	rules   []guestconfig.Rule
	// imageFix is the fix for a node container without an image, when the
	// runtime ships none.
	imageFix string
}

// gibImageFix is the fix for a gIB TrainJob without an image: the runtime
// ships none, and the image must be built for the CUDA the pinned gIB
// release names as its minimum.
func gibImageFix(in *runtimes.Inputs, runtime string) string {
	cuda := "the CUDA the gIB release notes name (bom/releases.yaml)"
	if r, ok := in.Releases.GIBReleaseFor(in.GIB.PluginVersion); ok && r.CUDA != "" {
		cuda = "CUDA >= " + r.CUDA + " (gIB " + in.GIB.PluginVersion + "'s minimum)"
	}
	return "set spec.trainer.image to an image built for " + cuda + ": the runtime " + runtime + " ships none"
}

// names lists the shipped runtimes, sorted, for messages.
func (j *judge) names() []string { return slices.Sorted(maps.Keys(j.runtimes)) }

// FileWith is File with options.
func FileWith(ctx context.Context, w io.Writer, name string, data []byte, o Options) error {
	j, err := machinery()
	if err != nil {
		return err
	}
	v := j.schema
	reports, err := v.Validate(data)
	if err != nil {
		return badInput("%s: %w", name, err)
	}
	lines := locate(data)
	docs, err := trainJobDocs(name, reports, lines, j)
	if err != nil {
		return err
	}
	if o.FileLabel || os.Getenv(FileLabelEnv) != "" {
		for i := range docs {
			docs[i].file = name
		}
	}
	if err := refuseRejected(w, name, docs, lines); err != nil {
		return err
	}
	var failed []string
	for _, d := range docs {
		reasons, err := lintDoc(ctx, w, j, d, lines, o)
		if err != nil {
			return fmt.Errorf("%s document %d: %w", name, d.report.Document, err)
		}
		if len(reasons) > 0 {
			failed = append(failed, fmt.Sprintf("%s %s", d.label(), strings.Join(reasons, ", ")))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: %d of %d TrainJob document(s) fail: %s", name, len(failed), len(docs), strings.Join(failed, "; "))
	}
	return nil
}

// maxFindingsShown bounds the schema findings printed per document: a file
// with 200,000 invalid env entries would otherwise print 200,000 lines.
const maxFindingsShown = 20

// refuseRejected stops before any realization when the API server would
// reject a document: such a TrainJob is never created, so there is no pod
// to judge, and realizing it anyway cost minutes on a 200,000-entry env
// list the schema had already refused ("at most 128"). The file is bad
// input (exit 2), as a file of a non-TrainJob is: the user fixes the
// document before anything can be judged. Pruned fields are not a
// rejection: the object is created without them, and realizing what remains
// shows what that loses (exit 1).
func refuseRejected(w io.Writer, name string, docs []trainJobDoc, lines docLines) error {
	var rejected []string
	for _, d := range docs {
		why := rejections(d.report.Findings)
		if len(why) == 0 {
			continue
		}
		p := printer{w: w, prefix: d.label()}
		for _, f := range why[:min(len(why), maxFindingsShown)] {
			p.line("FAIL", "schema: %s%s (the API server rejects the TrainJob)", lines.at(d.report.Document, f.Path), f)
		}
		if n := len(why) - maxFindingsShown; n > 0 {
			p.line("", "... and %d more schema finding(s)", n)
		}
		rejected = append(rejected, fmt.Sprintf("%s %d schema finding(s)", d.label(), len(why)))
	}
	if len(rejected) == 0 {
		return nil
	}
	return badInput("%s: the API server would reject %d of %d TrainJob document(s) (%s); nothing was realized: fix the findings above first",
		name, len(rejected), len(docs), strings.Join(rejected, "; "))
}

// rejections returns the findings for which the API server refuses the
// object.
func rejections(findings []schema.Finding) []schema.Finding {
	var why []schema.Finding
	for _, f := range findings {
		if rejects(f) {
			why = append(why, f)
		}
	}
	return why
}

// findingList joins findings for one message, at most maxFindingsShown.
func findingList(doc int, fs []schema.Finding, lines docLines) string {
	parts := make([]string, 0, min(len(fs), maxFindingsShown)+1)
	for _, f := range fs[:min(len(fs), maxFindingsShown)] {
		parts = append(parts, lines.at(doc, f.Path)+f.String())
	}
	if n := len(fs) - maxFindingsShown; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, "; ")
}

// rejects reports whether the API server refuses the object for f, rather
// than dropping a field (pruned) or warning.
func rejects(f schema.Finding) bool {
	switch f.Kind {
	case schema.FindingInvalid, schema.FindingUnknownKind:
		return true
	case schema.FindingWebhook:
		// The schema proof reports the webhook's warnings as findings
		// whose detail starts "warning: "; its errors are rejections.
		return !strings.HasPrefix(f.Detail, "warning: ")
	}
	return false
}

// trainJobDoc is one TrainJob document of the file, as the API server
// would store it (pruned, CRD defaults applied).
type trainJobDoc struct {
	report schema.Report
	job    *trainer.TrainJob
	// file is the file's name when the run labels lines with it.
	file string
}

// label names the document in every line about it: its position in the
// file, which is what a reader counts, and the TrainJob's name.
func (d trainJobDoc) label() string {
	if d.file != "" {
		return fmt.Sprintf("[%s doc %d %s/%s]", d.file, d.report.Document, d.job.Namespace, d.job.Name)
	}
	return fmt.Sprintf("[doc %d %s/%s]", d.report.Document, d.job.Namespace, d.job.Name)
}

// trainJobDocs decodes every document, refusing the file (exit 2) if any
// is not a TrainJob of the shipped runtime: judging only some of a file's
// documents would pass what the rest loses.
func trainJobDocs(name string, reports []schema.Report, lines docLines, j *judge) ([]trainJobDoc, error) {
	if len(reports) == 0 {
		return nil, badInput("%s holds no YAML document", name)
	}
	want := trainer.SchemeGroupVersion.WithKind(trainer.TrainJobKind).GroupKind()
	docs := make([]trainJobDoc, 0, len(reports))
	for _, r := range reports {
		gv, err := k8sschema.ParseGroupVersion(r.APIVersion)
		if err != nil || gv.WithKind(r.Kind).GroupKind() != want {
			return nil, badInput("%s document %d is a %s of apiVersion %s, not a TrainJob (%s): this lint checks TrainJobs of the shipped runtime", name, r.Document, excerpt.Quote(r.Kind), excerpt.Quote(r.APIVersion), trainer.SchemeGroupVersion)
		}
		if r.Defaulted == nil {
			return nil, badInput("%s document %d cannot be read as a TrainJob: %v", name, r.Document, r.Err())
		}
		var job trainer.TrainJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.Defaulted.Object, &job); err != nil {
			// The converter speaks in Go types ("unrecognized type:
			// int32"); the schema proof already said which field is wrong
			// and how, in the API server's words.
			if why := rejections(r.Findings); len(why) > 0 {
				return nil, badInput("%s document %d cannot be read as a TrainJob: %s", name, r.Document, findingList(r.Document, why, lines))
			}
			return nil, badInput("%s document %d cannot be read as a TrainJob: %w", name, r.Document, err)
		}
		ref := job.Spec.RuntimeRef
		if _, shipped := j.runtimes[ref.Name]; !shipped || ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind) != trainer.ClusterTrainingRuntimeKind {
			return nil, badInput("%s document %d (TrainJob %s) references %s %s, not a ClusterTrainingRuntime tcpxogen ships (%s): this lint checks TrainJobs of the shipped runtimes",
				name, r.Document, excerpt.Quote(job.Name), excerpt.Quote(ptr.Deref(ref.Kind, trainer.ClusterTrainingRuntimeKind)), excerpt.Quote(ref.Name), strings.Join(j.names(), ", "))
		}
		docs = append(docs, trainJobDoc{report: r, job: &job})
	}
	return docs, nil
}

// lintDoc prints one document's verdict lines and returns why it fails
// (nothing when it passes).
func lintDoc(ctx context.Context, w io.Writer, j *judge, d trainJobDoc, lines docLines, o Options) ([]string, error) {
	p := printer{w: w, prefix: d.label()}
	sr := j.runtimes[d.job.Spec.RuntimeRef.Name]
	rt := sr.runtime
	var reasons []string
	for _, f := range d.report.Findings[:min(len(d.report.Findings), maxFindingsShown)] {
		p.line("FAIL", "schema: %s%s (the API server would drop or reject this; on a cluster it vanishes silently)", lines.at(d.report.Document, f.Path), f)
	}
	if n := len(d.report.Findings) - maxFindingsShown; n > 0 {
		p.line("", "... and %d more schema finding(s)", n)
	}
	if n := len(d.report.Findings); n > 0 {
		reasons = append(reasons, fmt.Sprintf("has %d schema finding(s)", n))
	}
	v, err := realize.LintImage(ctx, rt, d.job, sr.fabric.Rules(), sr.rules, sr.imageFix)
	if err != nil {
		return nil, fmt.Errorf("realize against %s: %w", rt.Name, err)
	}
	fatal, shown, hidden := 0, 0, 0
	for _, c := range v.Changes {
		quiet := c.Severity != fabric.Fatal && c.Severity != fabric.Warning && c.What != wiring.EnvOverridden
		if rdzv := trainerRendezvous(c.Change) && c.Severity != fabric.Fatal; !o.Verbose && (quiet || rdzv) {
			if !rdzv { // the trainer's own variables are no change of the user's
				hidden++
			}
			continue
		}
		shown++
		switch {
		case c.Severity == fabric.Fatal:
			p.line("FAIL", "%s: %s", c.Change, c.Reason)
			if c.Fix != "" {
				p.line("", "  fix: %s", c.Fix)
			}
			fatal++
		case c.Severity == fabric.Warning:
			p.line("warn", "%s: %s", c.Change, c.Reason)
		case c.What == wiring.EnvOverridden:
			p.line("note", "%s: your value wins over the runtime's (%s)", c.Change, c.Reason)
		default:
			p.line("ok", "%s: %s", c.Change, c.Reason)
		}
	}
	if fatal > 0 {
		reasons = append(reasons, fmt.Sprintf("would lose the %s fabric (%d change(s)): NCCL would fall back to TCP or fail", sr.fabric.Title, fatal))
	}
	for _, c := range v.Images {
		p.line("FAIL", "%s: %s", c.Change, c.Reason)
		p.line("", "  fix: %s", c.Fix)
	}
	if n := len(v.Images); n > 0 {
		reasons = append(reasons, fmt.Sprintf("has %d container(s) without an image: the API server refuses its pods", n))
	}

	more := ""
	if hidden > 0 {
		more = fmt.Sprintf(" (%d more that need nothing from you: -v lists them)", hidden)
	}
	summaries := []string{fmt.Sprintf("trainer %s: %d wiring change(s) listed above%s, %d lose the fabric; %s", v.TrainerVersion, shown, more, fatal, v.Launch.Summary)}
	p.launch(v.TrainerVersion, "", v.Launch, o.Verbose)
	if !v.Launch.OK() {
		reasons = append(reasons, "launches wrong on trainer "+v.TrainerVersion)
	}
	p.line("", "%s", strings.Join(summaries, "; "))
	return reasons, nil
}

// trainerRendezvous reports an env var the trainer's torch plugin adds to
// every node container (PET_NNODES, PET_MASTER_ADDR, ...): what the launch
// judgement checks, not a change the user made to the wiring.
func trainerRendezvous(c wiring.Change) bool {
	name, ok := strings.CutPrefix(c.Path, "env ")
	return ok && c.What == wiring.EnvAdded && strings.HasPrefix(name, "PET_")
}

type printer struct {
	w      io.Writer
	prefix string
}

// line prints one verdict line: the document label, a tag of four
// columns (FAIL, note, ok or none), the text.
func (p printer) line(tag, format string, a ...any) {
	fmt.Fprintf(p.w, "%s %-5s %s\n", p.prefix, tag, fmt.Sprintf(format, a...))
}

func (p printer) launch(version, source string, l realize.Launch, verbose bool) {
	switch {
	case !l.Judged:
		p.line("note", "launch on trainer %s%s: %s", version, source, l.Summary)
	case l.OK() && verbose:
		p.line("ok", "launch on trainer %s%s: %s", version, source, strings.Join(l.Notes, "; "))
	}
	for _, pr := range l.Problems {
		p.line("FAIL", "launch on trainer %s%s: %s: %s", version, source, pr.Check, pr.Problem)
		if pr.Cause != "" {
			p.line("", "  cause: %s", pr.Cause)
		}
		if pr.Upstream != "" {
			p.line("", "  upstream: %s", pr.Upstream)
		}
		p.line("", "  fix: %s", pr.Fix)
	}
}
