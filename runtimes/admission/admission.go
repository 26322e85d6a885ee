// Package admission generates the ValidatingAdmissionPolicies and bindings
// that enforce the fabric contract on the cluster, inside the API server,
// for trainer.kubeflow.org TrainJobs: the contract policy (what loses the
// GPUDirect-TCPXO fabric or launches wrong: fatal) and the advisory policy
// (what the checker reports or A3 Mega was not qualified with, and
// multi-node TrainJobs of runtimes without the wiring). Every CEL rule is
// generated from the fabric rule set's single-entry forms
// (internal/fabric.EntryRules for the env, fabric.CapabilityRuleFor for the
// daemon's capabilities a runtime patch writes) and the shipped runtime; it
// owns the CEL and the objects, not the rules (internal/fabric,
// validators/realize) and not what only a realization can judge
// (validators/lint).
//
// Placement, container order and a missing image are such: the contract
// has no rule for a runtime patch's nodeSelector, affinity or containers,
// nor for a TrainJob without spec.trainer.image, and check trainjob is
// what judges them. The trainer applies runtime patches as strategic merge
// patches, one after another: a patched required node affinity replaces
// the runtime's terms whole, a "$patch" key inside a patched nodeSelector
// (a valid label key to the schema) replaces or deletes the runtime's map,
// and a container a patch names that the runtime lacks lands before node
// or after it by the merge's ordering of the patch's list and the current
// one. A CEL rule would have to reproduce that merge over every patch in
// order to give check trainjob's verdict (the equivalence test holds the
// two to agree), and a simpler rule (deny any patched nodeSelector or
// affinity) would deny what check trainjob passes: a nodeSelector entry
// that picks a node pool. Whether a TrainJob needs spec.trainer.image
// depends on the deployed runtime (render runtime --worker-image gives a
// gIB runtime a default), which the policies, rendered apart from it, do
// not know.
package admission

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/launch"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// The objects' names. The binding of each policy has the policy's name.
const (
	ContractPolicy = "tcpxo-fabric-contract"
	AdvisoryPolicy = "tcpxo-fabric-advisory"
)

// Options say which runtimes the policies judge and how.
type Options struct {
	// Enforce binds the contract with Deny; the advisory stays Warn, Audit.
	Enforce bool
	// Fabric is the fabric whose wiring the runtimes carry and whose rule
	// set judges them; the zero Fabric is TCPXO. Each fabric's policies
	// have their own names (<fabric>-fabric-contract, -advisory), so both
	// fabrics' sets apply side by side.
	Fabric fabric.Fabric
	// Runtimes carry the fabric's wiring: their TrainJobs are judged by the
	// contract and the advisory's env rules, and are exempt from the
	// capability advisory. Default: the fabric's shipped runtimes.
	Runtimes []string
	// Exempt are other runtimes whose multi-node TrainJobs get no
	// capability advisory (a CPU runtime, one on another fabric). TCPXO's
	// advisory always exempts the runtimes of the other shipped fabrics.
	Exempt []string
}

// policyNames are fabric f's policy names; TCPXO's are ContractPolicy and
// AdvisoryPolicy.
func policyNames(f fabric.Fabric) (contract, advisory string) {
	return f.Name + "-fabric-contract", f.Name + "-fabric-advisory"
}

// AdvisoryMessage is what a multi-node TrainJob of a runtime without the
// wiring is told.
const AdvisoryMessage = "its inter-node traffic runs over TCP: use " + names.Runtime

// Set is one rendering: the policies, then their bindings.
type Set struct {
	Policies []*admissionv1.ValidatingAdmissionPolicy
	Bindings []*admissionv1.ValidatingAdmissionPolicyBinding
}

// Objects lists the set in apply order: each policy before its binding.
func (s *Set) Objects() []any {
	var out []any
	for i := range s.Policies {
		out = append(out, s.Policies[i], s.Bindings[i])
	}
	return out
}

// Generate renders the policies for TrainJobs of rt (the shipped runtime,
// built from f): the env rules from the fabric rule set with the guest
// config rules of rt's profile, the launch rules from rt's node container.
func Generate(rt *trainer.ClusterTrainingRuntime, f facts.Facts, opts Options) (*Set, error) {
	if opts.Fabric.Name == "" {
		opts.Fabric = fabric.TCPXO
	}
	if len(opts.Runtimes) == 0 {
		opts.Runtimes = opts.Fabric.ShippedRuntimes()
	}
	tcpxo := opts.Fabric.Name == fabric.TCPXO.Name
	if tcpxo {
		// The other fabrics' runtimes carry their own wiring: their
		// multi-node TrainJobs are not ones "without a fabric".
		for _, other := range fabric.Fabrics() {
			if other.Name != opts.Fabric.Name {
				opts.Exempt = append(opts.Exempt, slices.DeleteFunc(other.ShippedRuntimes(), func(n string) bool { return slices.Contains(opts.Exempt, n) })...)
			}
		}
	}
	for _, n := range slices.Concat(opts.Runtimes, opts.Exempt) {
		if problems := validation.IsDNS1123Subdomain(n); len(problems) > 0 {
			return nil, fmt.Errorf("runtime name %q: %s", n, strings.Join(problems, "; "))
		}
	}
	if both := slices.DeleteFunc(slices.Clone(opts.Exempt), func(n string) bool { return !slices.Contains(opts.Runtimes, n) }); len(both) > 0 {
		return nil, fmt.Errorf("runtime %q is named both as carrying the wiring (--runtime) and as exempt (--exempt): name it once", both[0])
	}
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		return nil, err
	}
	node := slices.IndexFunc(tpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == runtimes.NodeContainer })
	if node < 0 {
		return nil, fmt.Errorf("runtime %s has no %s container", rt.Name, runtimes.NodeContainer)
	}
	nc := tpl.Spec.Containers[node]
	gpus, ok := nc.Resources.Limits[runtimes.GPUResource]
	if !ok {
		return nil, fmt.Errorf("runtime %s: the %s container has no %s limit", rt.Name, runtimes.NodeContainer, runtimes.GPUResource)
	}
	var daemonCaps []corev1.Capability
	if i := slices.IndexFunc(tpl.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == names.DaemonContainer }); i >= 0 {
		if sc := tpl.Spec.InitContainers[i].SecurityContext; sc != nil && sc.Capabilities != nil {
			daemonCaps = sc.Capabilities.Add
		}
	}
	g := gen{
		fab: opts.Fabric, daemon: tcpxo,
		runtimes: opts.Runtimes, exempt: opts.Exempt, gpus: gpus.String(),
		entries: opts.Fabric.Rules().EntryRules(nc.Env, runtimes.RulesFor(f, nc.Env)),
		caps:    fabric.CapabilityRuleFor(names.DaemonContainer, daemonCaps),
	}
	contractName, advisoryName := policyNames(opts.Fabric)
	contract := g.policy(contractName, admissionv1.Fail, g.contract())
	// Only TrainJobs of the runtimes with the wiring are the contract's
	// (matchConditions cannot read the policy's variables).
	contract.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "runtime-carries-" + opts.Fabric.Name, Expression: g.tcpxoExpr()}}
	advisory := g.policy(advisoryName, admissionv1.Ignore, g.advisory())
	actions := []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}
	if opts.Enforce {
		actions = []admissionv1.ValidationAction{admissionv1.Deny}
	}
	return &Set{
		Policies: []*admissionv1.ValidatingAdmissionPolicy{contract, advisory},
		Bindings: []*admissionv1.ValidatingAdmissionPolicyBinding{
			binding(contractName, actions),
			binding(advisoryName, []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}),
		},
	}, nil
}

type gen struct {
	fab fabric.Fabric
	// daemon says whether the fabric's pods run the tcpxo-daemon sidecar,
	// whose capabilities and patches the contract judges.
	daemon           bool
	runtimes, exempt []string
	gpus             string
	entries          []fabric.EntryRule
	// caps is the capability rule over the daemon's capabilities.
	caps fabric.CapabilityRule
}

func (g gen) policy(name string, failure admissionv1.FailurePolicyType, vs []admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "tcpxogen"}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(failure),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					// CREATE only: a TrainJob's spec is immutable but for
					// suspend, which a queueing controller flips on TrainJobs
					// admitted before the policy existed.
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{
						APIGroups: []string{trainer.GroupVersion.Group}, APIVersions: []string{trainer.GroupVersion.Version},
						Resources: []string{"trainjobs"}, Scope: ptr.To(admissionv1.NamespacedScope),
					},
				}}},
			},
			Variables: []admissionv1.Variable{
				{Name: g.fab.Name, Expression: g.tcpxoExpr()},
				{Name: "trainerEnv", Expression: "object.spec.?trainer.?env.orValue([])"},
			},
			Validations: vs,
		},
	}
}

func binding(policy string, actions []admissionv1.ValidationAction) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policy, Labels: map[string]string{"app.kubernetes.io/managed-by": "tcpxogen"}},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

func (g gen) tcpxoExpr() string { return "object.spec.runtimeRef.name in " + list(g.runtimes) }

// contract is every fatal rule.
func (g gen) contract() []admissionv1.Validation {
	tr := "object.spec.trainer"
	rpn := tr + ".resourcesPerNode"
	gpu := lit(string(runtimes.GPUResource))
	gpuOK := func(m string) string {
		return fmt.Sprintf("(%[2]s in %[1]s && isQuantity(string(%[1]s[%[2]s])) && quantity(string(%[1]s[%[2]s])).compareTo(quantity(%[3]s)) == 0)", m, gpu, lit(g.gpus))
	}
	show := func(field string) string {
		m := rpn + "." + field
		return fmt.Sprintf("(has(%[1]s) ? (%[2]s in %[1]s ? %[3]s + string(%[1]s[%[2]s]) : 'without ' + %[2]s) : 'unset')", m, gpu, lit(string(runtimes.GPUResource)+": "))
	}
	noTrainer := "spec.trainer is missing: the trainer injects torchrun's rendezvous variables (" + strings.Join(launch.RendezvousEnv, ", ") +
		") only when it is set (" + launch.UpstreamNoTrainer + "), so every node would train alone; fix: add `spec.trainer: {}` (an empty trainer is enough; the runtime supplies the rest)"
	resWhy := fmt.Sprintf(": "+g.pairing()+" of the node's %[1]s GPUs. On trainer v2.2.0 resourcesPerNode replaces the node container's resources (%[2]s) and the GPUs are lost; "+
		"on v2.3.0 torchrun's process count comes only from it (%[3]s); fix: restate %[4]s: \"%[1]s\" in its limits and requests, or drop spec.trainer.resourcesPerNode",
		g.gpus, launch.UpstreamReplace, launch.UpstreamRawOverride, runtimes.GPUResource)
	daemon := lit(names.DaemonContainer)
	patched := func(list string) string {
		return "j.?template.?spec.?template.?spec.?" + list + ".orValue([]).exists(c, c.name == " + daemon + ")"
	}
	touches := "object.spec.?runtimePatches.orValue([]).exists(p, p.?trainingRuntimeSpec.?template.?spec.?replicatedJobs.orValue([]).exists(j, " +
		patched("containers") + " || " + patched("initContainers") + "))"
	// Both lists: check trainjob judges the realized container, where
	// v2.2.0's replacement leaves exactly the lists resourcesPerNode sets.
	vs := []admissionv1.Validation{
		{Expression: "has(" + tr + ")", Message: noTrainer, Reason: ptr.To(metav1.StatusReasonInvalid)},
		{
			Expression: fmt.Sprintf("!has(%[1]s) || !has(%[2]s) || (!has(%[2]s.limits) && !has(%[2]s.requests)) || (has(%[2]s.limits) && %[3]s && has(%[2]s.requests) && %[4]s)",
				tr, rpn, gpuOK(rpn+".limits"), gpuOK(rpn+".requests")),
			Message: "spec.trainer.resourcesPerNode does not state " + string(runtimes.GPUResource) + ": \"" + g.gpus + "\" in its limits and requests" + resWhy,
			MessageExpression: "'spec.trainer.resourcesPerNode sets limits ' + " + show("limits") + " + ', requests ' + " + show("requests") +
				" + ', where the runtime gives the node container " + string(runtimes.GPUResource) + ": \"" + g.gpus + "\"' + " + lit(resWhy),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("!has(%[1]s) || !has(%[1]s.numProcPerNode) || string(%[1]s.numProcPerNode) in ['auto', %[2]s]", tr, lit(g.gpus)),
			Message:    "spec.trainer.numProcPerNode is not one process per GPU (" + g.gpus + ")",
			MessageExpression: fmt.Sprintf("'spec.trainer.numProcPerNode is ' + string(%[1]s.numProcPerNode) + %[2]s", tr,
				lit(": torchrun would start that many processes on the node's "+g.gpus+" GPUs, and "+g.pairing()+" GPU; fix: set spec.trainer.numProcPerNode to "+g.gpus+", or remove it (auto starts one process per GPU)")),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
	}
	if g.daemon {
		// Before the patch rule: the API server denies with the first failed
		// validation's message, and this one names the cause.
		vs = append(vs, g.capValidations(fabric.Fatal)...)
		vs = append(vs, admissionv1.Validation{Expression: "!" + touches, Message: patchedDaemonMessage, Reason: ptr.To(metav1.StatusReasonInvalid)})
	}
	return append(vs, g.envValidations(fabric.Fatal)...)
}

// pairing says why the GPU count matters on the fabric, ending before
// "GPU" or "of the node's N GPUs".
func (g gen) pairing() string {
	if g.daemon {
		return "TCPXO pairs one GPU NIC with each"
	}
	return "gIB pairs one RDMA NIC with each"
}

// patchedDaemonMessage is the contract's word on any runtime patch of the
// daemon.
const patchedDaemonMessage = "spec.runtimePatches patches the " + names.DaemonContainer + " container: it is the GPUDirect-TCPXO receive daemon (" +
	"its devices, mounts and flags are the installer's), and a changed daemon loses the fabric on trainer v2.3.0, which applies init container patches; " +
	"fix: patch only the " + runtimes.NodeContainer + " container, never " + names.DaemonContainer

// advisory is every warning the rule set gives an env entry, and the
// capability advisory.
func (g gen) advisory() []admissionv1.Validation {
	var vs []admissionv1.Validation
	if g.daemon {
		vs = g.capValidations(fabric.Warning)
	}
	vs = append(vs, g.envValidations(fabric.Warning)...)
	for i := range vs {
		vs[i].Expression = "!variables." + g.fab.Name + " || " + vs[i].Expression
	}
	if !g.daemon {
		// The advisory about runtimes without any fabric's wiring is
		// TCPXO's, which exempts the other fabrics' runtimes.
		return vs
	}
	nodes := "object.spec.?trainer.?numNodes.orValue(1)"
	return append(vs, admissionv1.Validation{
		Expression: "variables.tcpxo || object.spec.runtimeRef.name in " + list(g.exempt) + " || " + nodes + " <= 1",
		Message:    "the TrainJob runs on more than one node on a runtime without the GPUDirect-TCPXO wiring: " + AdvisoryMessage,
		MessageExpression: "'spec.runtimeRef.name ' + " + bounded("object.spec.runtimeRef.name") + " + ' with spec.trainer.numNodes ' + string(" + nodes + ") + " +
			lit(": the runtime does not carry the GPUDirect-TCPXO wiring, so "+AdvisoryMessage+" (or, for a runtime that needs no fabric, exempt it: tcpxogen render policy --exempt NAME)"),
		Reason: ptr.To(metav1.StatusReasonInvalid),
	})
}

// envValidations is one validation per entry rule with a verdict of sev.
func (g gen) envValidations(sev fabric.Severity) []admissionv1.Validation {
	var named []string
	var prefixes []string
	var out []admissionv1.Validation
	for _, r := range g.entries {
		match := "e.name == " + lit(r.Name)
		what := lit("spec.trainer.env " + r.Name)
		if r.Prefix != nil {
			match = "!(e.name in " + list(named) + ")"
			for _, p := range prefixes {
				match += " && !e.name.startsWith(" + lit(p) + ")"
			}
			if *r.Prefix != "" {
				match = "e.name.startsWith(" + lit(*r.Prefix) + ") && " + match
			}
			prefixes = append(prefixes, *r.Prefix)
			what = "'spec.trainer.env ' + " + bounded("e.name")
		} else {
			named = append(named, r.Name)
		}
		bad, text := judge(r, sev)
		if bad == "false" {
			continue
		}
		pred := "(" + match + ") && (" + bad + ")"
		subject := r.Name
		if r.Prefix != nil {
			subject = "a variable matching " + lit(*r.Prefix+"*")
		}
		out = append(out, admissionv1.Validation{
			Expression:        "!variables.trainerEnv.exists(e, " + pred + ")",
			Message:           fmt.Sprintf("spec.trainer.env sets %s to a value the fabric rule set calls %s: run tcpxogen check trainjob for the reason and fix", subject, sev),
			MessageExpression: "variables.trainerEnv.filter(e, " + pred + ").map(e, " + what + " + ' ' + " + text + ").join('; ')",
			Reason:            ptr.To(metav1.StatusReasonInvalid),
		})
	}
	return out
}

// capValidations is one validation for the capability rule's verdicts of
// sev on the daemon's capabilities a runtime patch writes (the list
// replaces the runtime's: the trainer merges capabilities.add whole). The
// branches are CapabilityRule.Judge's, in its order; none when no verdict
// has sev.
func (g gen) capValidations(sev fabric.Severity) []admissionv1.Validation {
	r := g.caps
	is := func(v fabric.EntryVerdict) string { return strconv.FormatBool(v.Severity == sev) }
	caps := "c.?securityContext.?capabilities.?add.orValue([])"
	plain := "e.upperAscii().substring(" + strconv.Itoa(len(fabric.CapPrefix)) + ")"
	marks := map[string]string{fabric.NameMark: bounded("e"), fabric.PlainMark: bounded(plain)}
	words := func(v fabric.EntryVerdict) string {
		if v.Severity != sev {
			return "''"
		}
		return template(string(v.Kind)+": "+v.Reason+"; fix: "+v.Fix, marks)
	}
	dup := caps + ".exists(x, x.upperAscii() == " + plain + ")"
	needed := plain + " in " + list(r.Needed)
	verdict := fmt.Sprintf("(%s ? %s : (%s ? %s : %s))", dup, is(r.Duplicate), needed, is(r.Lost), is(r.Other))
	if !strings.Contains(verdict, "true") {
		return nil
	}
	bad := "e.upperAscii().startsWith(" + lit(fabric.CapPrefix) + ") && " + verdict
	text := fmt.Sprintf("(%s ? %s : (%s ? %s : %s))", dup, words(r.Duplicate), needed, words(r.Lost), words(r.Other))
	jobs := "p.?trainingRuntimeSpec.?template.?spec.?replicatedJobs.orValue([])"
	inits := "j.?template.?spec.?template.?spec.?initContainers.orValue([])"
	daemon := "c.name == " + lit(r.Container)
	joined := ".filter(s, s != '').join('; ')"
	return []admissionv1.Validation{{
		Expression: "!object.spec.?runtimePatches.orValue([]).exists(p, " + jobs + ".exists(j, " + inits + ".exists(c, " + daemon + " && " + caps + ".exists(e, " + bad + "))))",
		Message: fmt.Sprintf("spec.runtimePatches gives the %s a capability written with the %s prefix (the fabric rule set's %s): %s (%s); fix: write it without the prefix (run tcpxogen check trainjob for the reason)",
			r.Container, fabric.CapPrefix, sev, fabric.CapPrefixDropped, fabric.CapPrefixSource),
		MessageExpression: "object.spec.?runtimePatches.orValue([]).map(p, " + jobs + ".map(j, " + inits + ".filter(c, " + daemon + ").map(c, " + caps +
			".filter(e, " + bad + ").map(e, " + lit("spec.runtimePatches "+r.Container+" capability ") + " + " + bounded("e") + " + ' ' + " + text + ").join('; '))" +
			joined + ")" + joined + ")" + joined,
		Reason: ptr.To(metav1.StatusReasonInvalid),
	}}
}

// judge renders EntryRule.Judge for one severity as two CEL expressions
// over an entry e: whether its verdict has severity sev, and the verdict's
// words (kind, reason, fix). The branches are Judge's, in its order.
func judge(r fabric.EntryRule, sev fabric.Severity) (bad, text string) {
	is := func(v fabric.EntryVerdict) string { return strconv.FormatBool(v.Severity == sev) }
	value := "e.?value.orValue('')"
	marks := map[string]string{fabric.ValueMark: bounded(value), fabric.NameMark: bounded("e.name")}
	words := func(v fabric.EntryVerdict) string {
		if v.Severity != sev {
			return "''"
		}
		return template(string(v.Kind)+": "+v.Reason+"; fix: "+v.Fix, marks)
	}
	badChain, textChain := is(r.Other), words(r.Other)
	if p := r.Paths; p != nil {
		keeps := list(p.Dirs) + ".all(d, d in " + value + ".split(':'))"
		first := value + ".split(':').size() >= " + strconv.Itoa(len(p.Dirs))
		for i, d := range p.Dirs {
			first += " && " + value + ".split(':')[" + strconv.Itoa(i) + "] == " + lit(d)
		}
		badChain = fmt.Sprintf("(%s ? ((%s) ? %s : %s) : %s)", keeps, first, is(p.Ordered), is(p.Anywhere), badChain)
		textChain = fmt.Sprintf("(%s ? ((%s) ? %s : %s) : %s)", keeps, first, words(p.Ordered), words(p.Anywhere), textChain)
	}
	for _, v := range slices.Backward(r.Values) {
		cond := value + " == " + lit(v.Value)
		if v.Fold {
			cond = value + ".lowerAscii() == " + lit(strings.ToLower(v.Value))
		}
		badChain = fmt.Sprintf("(%s ? %s : %s)", cond, is(v.Verdict), badChain)
		textChain = fmt.Sprintf("(%s ? %s : %s)", cond, words(v.Verdict), textChain)
	}
	bad = fmt.Sprintf("(has(e.valueFrom) ? %s : %s)", is(r.From), badChain)
	text = fmt.Sprintf("(has(e.valueFrom) ? %s : %s)", words(r.From), textChain)
	if !strings.Contains(bad, "true") {
		return "false", "''"
	}
	return bad, text
}

// template renders a verdict's words as a CEL string expression, the
// expressions of marks (a rule set's mark to the CEL that shows the
// entry's own) in place of the marks.
func template(s string, marks map[string]string) string {
	var parts []string
	for s != "" {
		at, mark := -1, ""
		for m := range marks {
			if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at) {
				at, mark = i, m
			}
		}
		if at < 0 {
			parts, s = append(parts, lit(s)), ""
			continue
		}
		parts = append(parts, lit(s[:at]), marks[mark])
		s = s[at+len(mark):]
	}
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == `""` })
	if len(parts) == 0 {
		return "''"
	}
	return strings.Join(parts, " + ")
}

// maxShown bounds a user's string in a message, as excerpt bounds it in
// check trainjob's.
const maxShown = 80

// bounded shows a string expression, cut at maxShown characters.
func bounded(expr string) string {
	return fmt.Sprintf("(%[1]s.size() > %[2]d ? %[1]s.substring(0, %[2]d) + '… (cut)' : %[1]s)", expr, maxShown)
}

// lit is a CEL string literal.
func lit(s string) string { return strconv.Quote(s) }

// list is a CEL list of string literals.
func list(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = lit(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Golden paths, relative to the module root: the default form and the
// enforcing one. They are two files because both bind the same policies
// under the same names: one applicable file per form.
const (
	GoldenPath        = "runtimes/admission-policy.yaml"
	GoldenEnforcePath = "runtimes/admission-policy-enforce.yaml"
)

// The gIB policies' goldens, beside TCPXO's: each fabric's set has its own
// names, so both apply side by side.
const (
	GoldenGIBPath        = "runtimes/admission-policy-gib.yaml"
	GoldenGIBEnforcePath = "runtimes/admission-policy-gib-enforce.yaml"
)

// Goldens renders both forms of every fabric's policies for the shipped
// runtimes as the goldens carry them, keyed by golden path.
func Goldens(in *runtimes.Inputs) (map[string][]byte, error) {
	out, err := tcpxoGoldens(in)
	if err != nil {
		return nil, err
	}
	// gIB's env differs per machine type only in the tuner config, a fabric
	// variable whose every change the rule set judges alike; the policy is
	// rendered from the first machine type's runtime and judges TrainJobs
	// of every gIB runtime.
	mt := fabric.GIB.MachineTypes[0].Name
	rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt})
	if err != nil {
		return nil, err
	}
	for path, enforce := range map[string]bool{GoldenGIBPath: false, GoldenGIBEnforcePath: true} {
		set, err := Generate(rt, in.GIB, Options{Enforce: enforce, Fabric: fabric.GIB})
		if err != nil {
			return nil, err
		}
		form, cmd := formOf(enforce)
		header := []string{
			"Code generated by tcpxogen render goldens. DO NOT EDIT.",
			fmt.Sprintf("Admission policies for TrainJobs of %s, NCCL/gIB installer %s, %s.", strings.Join(fabric.GIB.ShippedRuntimes(), " and "), in.GIB.PluginVersion, form),
			"Render them for your cluster with: " + cmd + " --fabric gib [--runtime NAME]...",
		}
		if out[path], err = runtimes.Encode(runtimes.FormatYAML, header, set.Objects()...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// formOf names a policy set's form and the command that renders it.
func formOf(enforce bool) (form, cmd string) {
	if enforce {
		return "enforcing: the contract bound with [Deny], the advisory with [Warn, Audit]", "tcpxogen render policy --enforce"
	}
	return "advisory by default: the contract and the advisory bound with [Warn, Audit]", "tcpxogen render policy"
}

func tcpxoGoldens(in *runtimes.Inputs) (map[string][]byte, error) {
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for path, enforce := range map[string]bool{GoldenPath: false, GoldenEnforcePath: true} {
		set, err := Generate(rt, in.Facts, Options{Enforce: enforce})
		if err != nil {
			return nil, err
		}
		form, cmd := formOf(enforce)
		header := []string{
			"Code generated by tcpxogen render goldens. DO NOT EDIT.",
			fmt.Sprintf("Admission policies for TrainJobs of %s, NCCL plugin installer %s (tcpxo-daemon %s), %s.", names.Runtime, in.Facts.PluginVersion, in.Facts.DaemonVersion, form),
			"Render them for your cluster with: " + cmd + " [--runtime NAME]... [--exempt NAME]...",
		}
		if out[path], err = runtimes.Encode(runtimes.FormatYAML, header, set.Objects()...); err != nil {
			return nil, err
		}
	}
	return out, nil
}
