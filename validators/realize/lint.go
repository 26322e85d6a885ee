package realize

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// Judged is a wiring change with its fabric verdict.
type Judged struct {
	wiring.Change
	Severity fabric.Severity
	// Reason names the rule that decided; Fix says what to do instead.
	Reason, Fix string
}

// LosesFabric reports whether the change loses or breaks the fabric.
func (j Judged) LosesFabric() bool { return j.Severity == fabric.Fatal }

// EnvRule is the What of a finding of the fabric rule set that no env
// change carries (an enforced rule the runtime itself does not meet, or a
// value set from elsewhere).
const EnvRule = "env rule"

// CapabilityRule is the What of a finding of the capability rule that no
// capability change carries (a prefixed name the runtime itself writes).
const CapabilityRule = "capability rule"

// Judge is the one fabric decision over wiring: the node container's env
// is judged by the fabric rule set (internal/fabric) with the installer's
// guest config rules, for removals, changes and additions alike; a
// capability written with the CAP_ prefix in the node container or a
// sidecar the runtime has, by the rule set's capability rule
// (fabric.CheckCapabilities), which names the prefix as the cause; any
// other change inside a sidecar (the tcpxo-daemon) by judgeSidecar; the
// pod's placement by judgePlacement (a nodeSelector entry or required node
// affinity of the runtime's lost or changed loses the fabric, what only
// narrows keeps it) and the node container's position by judgeOrder (not
// first where the runtime puts it first loses it); any other wiring
// element lost or changed loses the fabric, and additions of other
// elements keep it.
func Judge(from, to wiring.Wiring, rules []guestconfig.Rule) []Judged {
	return JudgeWith(fabric.TCPXORules, from, to, rules)
}

// JudgeWith is Judge with the rule set of the runtime's fabric.
func JudgeWith(rs *fabric.RuleSet, from, to wiring.Wiring, rules []guestconfig.Rule) []Judged {
	all := rs.Check(from.NodeEnv, rules, to.NodeEnv)
	// Check gives one finding per variable, so a path names one finding.
	findings := make(map[string]fabric.Finding, len(all))
	for _, f := range all {
		findings[f.Path] = f
	}
	capAll, writtenAs := capabilityFindings(from, to)
	capFindings := make(map[string]fabric.Finding, len(capAll))
	for _, f := range capAll {
		capFindings[f.Path] = f
	}
	var out []Judged
	for _, c := range wiring.Diff(from, to) {
		j := Judged{Change: c}
		f, prefixed := capFindings[c.Path]
		switch {
		case c.What == wiring.CapabilityAdded && prefixed:
			delete(capFindings, c.Path)
			j.Severity, j.Reason, j.Fix = f.Severity, f.Reason, f.Fix
		case isSidecarChange(c):
			j = judgeSidecar(c)
		case isPlacement(c):
			j = judgePlacement(c, from)
		case c.What == wiring.NodeContainerMoved:
			j = judgeOrder(c, from, to)
		case c.What == wiring.EnvLost || c.What == wiring.EnvOverridden || c.What == wiring.EnvAdded:
			f, ok := findings[c.Path]
			delete(findings, c.Path)
			j.Severity, j.Reason, j.Fix = fabric.Note, "not an NCCL setting", ""
			if ok {
				j.Severity, j.Reason, j.Fix = f.Severity, f.Reason, f.Fix
			}
		case c.IsAddition():
			j.Severity, j.Reason = fabric.Note, "adds to the wiring"
		default:
			j.Severity, j.Reason = fabric.Fatal, "the runtime's wiring element is lost or changed"
			j.Fix = "keep what the runtime sets: override only what the user guide says a workload may tune"
		}
		if entry, ok := writtenAs[c.Path]; ok && c.What == wiring.CapabilityLost {
			j.Reason += "; it is written " + entry + " instead, and the " + fabric.CapPrefix + " prefix is the cause (see capability " + entry + ")"
		}
		out = append(out, j)
	}
	// Findings no env change carries, in the rule set's order.
	for _, f := range all {
		if _, left := findings[f.Path]; left {
			out = append(out, Judged{Change: wiring.Change{What: EnvRule, Path: f.Path}, Severity: f.Severity, Reason: f.Reason, Fix: f.Fix})
		}
	}
	// Prefixed capabilities no change carries: the runtime writes them too.
	for _, f := range capAll {
		if _, left := capFindings[f.Path]; left {
			out = append(out, Judged{Change: wiring.Change{What: CapabilityRule, Path: f.Path}, Severity: f.Severity, Reason: f.Reason, Fix: f.Fix})
		}
	}
	return out
}

// capabilityFindings applies the capability rule to the node container and
// to every sidecar the runtime has, each against the runtime's own list,
// with Paths as wiring.Diff names their capabilities. writtenAs maps the
// Path of a capability the container needs and lacks to the prefixed entry
// written in its place.
func capabilityFindings(from, to wiring.Wiring) (out []fabric.Finding, writtenAs map[string]string) {
	writtenAs = map[string]string{}
	judge := func(container, prefix string, shipped, candidate []corev1.Capability) {
		for _, f := range fabric.CheckCapabilities(container, shipped, candidate) {
			entry := strings.TrimPrefix(f.Path, fabric.CapabilityPath(""))
			if plain, _ := fabric.Unprefixed(entry); f.Severity == fabric.Fatal {
				// Fatal: needed, and the list has no plain spelling.
				writtenAs[prefix+fabric.CapabilityPath(plain)] = entry
			}
			f.Path = prefix + f.Path
			out = append(out, f)
		}
	}
	if from.HasNode && to.HasNode {
		judge(constants.Node, "", from.NodeCaps, to.NodeCaps)
	}
	for i := range to.InitContainers {
		b := &to.InitContainers[i]
		j := slices.IndexFunc(from.InitContainers, func(a corev1.Container) bool { return a.Name == b.Name })
		if j < 0 {
			continue
		}
		judge(b.Name, sidecarPrefix+b.Name+" ", addedCaps(&from.InitContainers[j]), addedCaps(b))
	}
	return out, writtenAs
}

// addedCaps are the capabilities a container adds.
func addedCaps(c *corev1.Container) []corev1.Capability {
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return nil
	}
	return c.SecurityContext.Capabilities.Add
}

// Verdict is what Lint finds for one TrainJob on the linked trainer.
type Verdict struct {
	// TrainerVersion is the trainer version that realized the TrainJob.
	TrainerVersion string
	// Changes are the node pod's wiring changes, in wiring.Diff order, each with
	// its fabric verdict.
	Changes []Judged
	// Launch is the launch verdict.
	Launch Launch
	// Images are the realized pod's containers without an image (see
	// JudgeImages): no wiring change, but the API server refuses the pod.
	Images []Judged
}

// Lint realizes job against runtime and returns the node pod's wiring
// changes, judged with rules (the guest config rules of the runtime's
// profile), and the launch verdict on the linked trainer version.
func Lint(ctx context.Context, runtime client.Object, job *trainer.TrainJob, rules []guestconfig.Rule) (*Verdict, error) {
	return LintWith(ctx, runtime, job, fabric.TCPXORules, rules)
}

// LintWith is Lint with the rule set of the runtime's fabric.
func LintWith(ctx context.Context, runtime client.Object, job *trainer.TrainJob, rs *fabric.RuleSet, rules []guestconfig.Rule) (*Verdict, error) {
	return LintImage(ctx, runtime, job, rs, rules, "")
}

// LintImage is LintWith whose verdict on a node container without an image
// gives imageFix as the fix (what the image must be built for); "" says
// only to set spec.trainer.image.
func LintImage(ctx context.Context, runtime client.Object, job *trainer.TrainJob, rs *fabric.RuleSet, rules []guestconfig.Rule, imageFix string) (*Verdict, error) {
	res, err := Realize(ctx, runtime, job)
	if err != nil {
		return nil, err
	}
	rtPod, err := wiring.RuntimePodTemplate(runtime, constants.Node)
	if err != nil {
		return nil, err
	}
	jsPod, err := wiring.JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		return nil, err
	}
	launch, err := JudgeLaunch(runtime, job, res.JobSet)
	if err != nil {
		return nil, fmt.Errorf("judging the launch: %w", err)
	}
	return &Verdict{
		TrainerVersion: res.TrainerVersion,
		Changes:        JudgeWith(rs, wiring.Of(rtPod, constants.Node), wiring.Of(jsPod, constants.Node), rules),
		Launch:         launch,
		Images:         JudgeImages(jsPod, imageFix),
	}, nil
}
