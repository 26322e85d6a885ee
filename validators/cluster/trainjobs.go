package cluster

// The TrainJobs of the shipped runtimes, and whether each still runs the
// wiring the deployed runtime carries.
//
// Kubeflow Trainer v2.3.0 snapshots the runtime into each TrainJob when it
// first reconciles it (KEP-2599, kubeflow/trainer PR #3580) and builds the
// TrainJob from that snapshot from then on, so a runtime applied later does
// not reach it. In github.com/kubeflow/trainer/v2@v2.3.0
// pkg/runtime/core/snapshot.go the snapshot is a ConfigMap named
// <trainjob>-runtime-snapshot (runtimeSnapshotSuffix) in the TrainJob's
// namespace, its data key "runtime" (runtimeDataKey) holding the runtime
// object as YAML (createRuntimeSnapshot), controller-owned by the TrainJob;
// getRuntimeSnapshot refuses one whose controller is not the TrainJob (by
// UID), lacks the key, does not decode or names another runtime. Its kind
// check is not repeated here: v2.3.0 writes the snapshot without apiVersion
// and kind (kubeflow/trainer#3921, see validators/realize's
// SnapshotBreaksRebuild), so that check fails every snapshot it wrote.
// Trainer v2.2.0 keeps no snapshot; there the pods already running keep the
// wiring they started with.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// The runtime snapshot trainer v2.3.0 writes (pkg/runtime/core/snapshot.go:
// runtimeSnapshotSuffix, runtimeDataKey).
const (
	SnapshotSuffix = "-runtime-snapshot"
	SnapshotKey    = "runtime"
)

// ShippedRuntime is a runtime tcpxogen ships, as a TrainJob's runtimeRef
// names it.
type ShippedRuntime struct{ Kind, Name string }

func (r ShippedRuntime) String() string { return r.Kind + " " + r.Name }

// ShippedRuntimesOf are the runtimes whose TrainJobs check cluster judges
// on a pool of fabric f's machine type mt: the ClusterTrainingRuntime users
// reference, and the benchmark TrainingRuntime as `render benchmark` names
// it (validate's own runs name theirs per run and delete them).
func ShippedRuntimesOf(f fabric.Fabric, mt string) []ShippedRuntime {
	return []ShippedRuntime{
		{trainer.ClusterTrainingRuntimeKind, f.ShippedRuntime(mt)},
		{trainer.TrainingRuntimeKind, f.ShippedBenchmark(mt)},
	}
}

// ShippedRuntimes are TCPXO's (ShippedRuntimesOf).
var ShippedRuntimes = ShippedRuntimesOf(fabric.TCPXO, "")

// TrainJob is one unfinished TrainJob of a shipped runtime and what its
// wiring is judged by.
type TrainJob struct {
	Namespace, Name string
	UID             types.UID
	Runtime         ShippedRuntime
	// Snapshot is its runtime snapshot ConfigMap; nil when there is none.
	Snapshot *corev1.ConfigMap
	// Deployed is the runtime its runtimeRef names as deployed now, a
	// *trainer.ClusterTrainingRuntime or *trainer.TrainingRuntime; nil when
	// it is not deployed.
	Deployed client.Object
}

// TrainJobs is what the TrainJob check reads.
type TrainJobs struct {
	// Shipped are the runtimes whose TrainJobs were read (nil: TCPXO's,
	// ShippedRuntimes).
	Shipped []ShippedRuntime
	// Jobs are the unfinished TrainJobs of the shipped runtimes, by
	// namespace and name.
	Jobs []TrainJob
	// Finished counts the ones that completed or failed: nothing of them
	// runs any more, so they are not judged.
	Finished int
}

// ReadTrainJobs lists the TrainJobs in every namespace and reads, for each
// unfinished one of a shipped runtime, its runtime snapshot and the runtime
// it references as deployed: deployed is the shipped ClusterTrainingRuntime
// (State.Runtime, nil when not deployed); the benchmark TrainingRuntime is
// read in each namespace a TrainJob of it runs in. A cluster without the
// trainer has no TrainJobs.
func ReadTrainJobs(ctx context.Context, c *Clients, shipped []ShippedRuntime, deployed *unstructured.Unstructured) (TrainJobs, error) {
	out := TrainJobs{Shipped: shipped}
	ul, err := c.Dynamic.Resource(trainerTrainJobs).List(ctx, metav1.ListOptions{})
	switch {
	case meta.IsNoMatchError(err) || isNotServed(err):
		return out, nil
	case err != nil:
		return out, c.Guard.Explain(fmt.Errorf("listing the TrainJobs in every namespace on %s: %w", c.Host, err))
	}
	var ctr *trainer.ClusterTrainingRuntime
	if deployed != nil {
		ctr = &trainer.ClusterTrainingRuntime{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployed.Object, ctr); err != nil {
			return out, fmt.Errorf("ClusterTrainingRuntime %s does not decode as the trainer's type: %w", deployed.GetName(), err)
		}
	}
	benchmarks := map[string]*trainer.TrainingRuntime{} // by namespace; nil: not deployed there
	for i := range ul.Items {
		u := &ul.Items[i]
		ref, ok := shippedRef(u, shipped)
		if !ok {
			continue
		}
		if finished(u) {
			out.Finished++
			continue
		}
		j := TrainJob{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), Runtime: ref}
		switch ref.Kind {
		case trainer.ClusterTrainingRuntimeKind:
			if ctr != nil {
				j.Deployed = ctr
			}
		case trainer.TrainingRuntimeKind:
			rt, seen := benchmarks[j.Namespace]
			if !seen {
				if rt, err = readBenchmark(ctx, c, j.Namespace, ref.Name); err != nil {
					return out, err
				}
				benchmarks[j.Namespace] = rt
			}
			if rt != nil {
				j.Deployed = rt
			}
		}
		cm, err := c.Kube.CoreV1().ConfigMaps(j.Namespace).Get(ctx, j.Name+SnapshotSuffix, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return out, c.Guard.Explain(fmt.Errorf("reading TrainJob %s/%s's runtime snapshot (ConfigMap %s%s): %w", j.Namespace, j.Name, j.Name, SnapshotSuffix, err))
		default:
			j.Snapshot = cm
		}
		out.Jobs = append(out.Jobs, j)
	}
	slices.SortFunc(out.Jobs, func(a, b TrainJob) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// readBenchmark reads the benchmark TrainingRuntime deployed in namespace,
// nil when there is none.
func readBenchmark(ctx context.Context, c *Clients, namespace, name string) (*trainer.TrainingRuntime, error) {
	u, err := c.Dynamic.Resource(trainerNSRuntimes).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, c.Guard.Explain(fmt.Errorf("reading TrainingRuntime %s/%s: %w", namespace, name, err))
	}
	rt := &trainer.TrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rt); err != nil {
		return nil, fmt.Errorf("TrainingRuntime %s/%s does not decode as the trainer's type: %w", namespace, name, err)
	}
	return rt, nil
}

// shippedRef tells whether a TrainJob's spec.runtimeRef names a shipped
// runtime, with the API's defaults (group trainer.kubeflow.org, kind
// ClusterTrainingRuntime) for what it leaves out.
func shippedRef(u *unstructured.Unstructured, shipped []ShippedRuntime) (ShippedRuntime, bool) {
	name, _, _ := unstructured.NestedString(u.Object, "spec", "runtimeRef", "name")
	group, hasGroup, _ := unstructured.NestedString(u.Object, "spec", "runtimeRef", "apiGroup")
	kind, hasKind, _ := unstructured.NestedString(u.Object, "spec", "runtimeRef", "kind")
	if hasGroup && group != trainer.GroupVersion.Group {
		return ShippedRuntime{}, false
	}
	if !hasKind {
		kind = trainer.ClusterTrainingRuntimeKind
	}
	ref := ShippedRuntime{Kind: kind, Name: name}
	return ref, slices.Contains(shipped, ref)
}

// finished tells whether a TrainJob completed or failed (its Complete or
// Failed condition is True).
func finished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		if (t == trainer.TrainJobComplete || t == trainer.TrainJobFailed) && m["status"] == string(metav1.ConditionTrue) {
			return true
		}
	}
	return false
}

// maxListed bounds how many TrainJobs, and how many wiring changes of one,
// a finding names.
const (
	maxListed  = 10
	maxChanges = 3
)

// CheckTrainJobs judges each unfinished TrainJob of a shipped runtime: its
// runtime snapshot's node-pod wiring against the deployed runtime's
// (wiring.Diff, the differ the lint uses), a snapshot the trainer would
// refuse, and, for those without a snapshot, that their wiring is not
// known. Without a snapshot the trainer version would decide (v2.2.0 keeps
// none; v2.3.0 has not reconciled the TrainJob yet), but nothing here reads
// the cluster's trainer version: validate's lifecycle.Observe finds the
// trainer's CRDs and controller Deployments, not their version, and its
// report names the BOM's pin. So those are reported neutrally. A TrainJob on other wiring than deployed is a warning, not a
// failure: the cluster is sound, the TrainJob was submitted earlier. Each
// deployed benchmark runtime read is held to the webhook rule as the
// shipped runtime is (Check).
func CheckTrainJobs(tj TrainJobs) []Finding {
	var out []Finding
	add := func(l Level, format string, a ...any) {
		out = append(out, Finding{Level: l, Check: "trainjob-wiring", Message: fmt.Sprintf(format, a...)})
	}
	var benchmarks []client.Object
	var noSnapshot []string
	for _, j := range tj.Jobs {
		if rt, ok := j.Deployed.(*trainer.TrainingRuntime); ok && !slices.Contains(benchmarks, j.Deployed) {
			benchmarks = append(benchmarks, rt)
			out = append(out, webhookFinding(trainer.TrainingRuntimeKind, rt.Namespace, rt.Name, rt.Labels)...)
		}
		where := j.Namespace + "/" + j.Name
		snapshot := fmt.Sprintf("ConfigMap %s/%s%s", j.Namespace, j.Name, SnapshotSuffix)
		if j.Snapshot == nil {
			noSnapshot = append(noSnapshot, where)
			continue
		}
		snap, problem := decodeSnapshot(j)
		if problem != "" {
			add(Warn, "TrainJob %s: its runtime snapshot (%s) %s; trainer v2.3.0 refuses such a snapshot (invalid runtime snapshot) and cannot reconcile the TrainJob: delete and resubmit it", where, snapshot, problem)
			continue
		}
		if j.Deployed == nil {
			add(Warn, "TrainJob %s runs on %s, which is not deployed%s: its snapshot (%s) cannot be compared with a deployed runtime", where, j.Runtime, inNamespace(j), snapshot)
			continue
		}
		changes, err := snapshotChanges(snap, j.Deployed)
		if err != nil {
			add(Warn, "TrainJob %s: its snapshot (%s) cannot be compared with the deployed %s: %v", where, snapshot, j.Runtime, err)
			continue
		}
		if len(changes) == 0 {
			add(OK, "TrainJob %s: its runtime snapshot carries the deployed %s's wiring", where, j.Runtime)
			continue
		}
		add(Warn, "TrainJob %s keeps the wiring %s had when the TrainJob was first reconciled (its runtime snapshot, %s), which the deployed runtime no longer carries (snapshot -> deployed): %s; resubmit it (delete and recreate) to run the deployed wiring",
			where, j.Runtime, snapshot, firstChanges(changes))
	}
	if len(noSnapshot) > 0 {
		add(Warn, "%d TrainJob(s) of %s have no runtime snapshot (ConfigMap <trainjob>%s): %s; trainer v2.2.0 keeps none (its running pods keep the wiring they started with), and v2.3.0 and later write one when they first reconcile a TrainJob; check cluster cannot tell which trainer runs here, so whether these run the deployed runtime's wiring is not known: resubmit the ones created before the deployed runtime was applied",
			len(noSnapshot), shippedNames(tj.shipped()), SnapshotSuffix, listNames(noSnapshot))
	}
	if len(tj.Jobs) == 0 {
		add(OK, "no unfinished TrainJob runs on %s (%d finished, not judged)", shippedNames(tj.shipped()), tj.Finished)
	}
	return out
}

// decodeSnapshot reads the runtime out of a TrainJob's snapshot as the
// trainer does (getRuntimeSnapshot), or says why the trainer would refuse
// it.
func decodeSnapshot(j TrainJob) (client.Object, string) {
	owner := metav1.GetControllerOf(j.Snapshot)
	switch {
	case owner == nil:
		return nil, "has no controller, so it is not the TrainJob's"
	case owner.UID != j.UID:
		return nil, fmt.Sprintf("is controlled by %s %s (uid %s), not by the TrainJob (uid %s)", owner.Kind, owner.Name, owner.UID, j.UID)
	}
	data, ok := j.Snapshot.Data[SnapshotKey]
	if !ok {
		return nil, fmt.Sprintf("has no %q data key", SnapshotKey)
	}
	var rt client.Object = &trainer.ClusterTrainingRuntime{}
	if j.Runtime.Kind == trainer.TrainingRuntimeKind {
		rt = &trainer.TrainingRuntime{}
	}
	if err := yaml.Unmarshal([]byte(data), rt); err != nil {
		return nil, fmt.Sprintf("does not decode as a %s: %v", j.Runtime.Kind, err)
	}
	if rt.GetName() != j.Runtime.Name {
		return nil, fmt.Sprintf("holds runtime %q, not the %s the TrainJob references", rt.GetName(), j.Runtime.Name)
	}
	return rt, ""
}

// snapshotChanges is how the deployed runtime's node-pod wiring differs
// from the snapshot's.
func snapshotChanges(snap, deployed client.Object) ([]wiring.Change, error) {
	from, err := wiring.RuntimePodTemplate(snap, runtimes.NodeContainer)
	if err != nil {
		return nil, fmt.Errorf("the snapshot: %w", err)
	}
	to, err := wiring.RuntimePodTemplate(deployed, runtimes.NodeContainer)
	if err != nil {
		return nil, fmt.Errorf("the deployed runtime: %w", err)
	}
	return wiring.Diff(wiring.Of(from, runtimes.NodeContainer), wiring.Of(to, runtimes.NodeContainer)), nil
}

func firstChanges(cs []wiring.Change) string {
	var parts []string
	for i, c := range cs {
		if i == maxChanges {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-maxChanges))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

func inNamespace(j TrainJob) string {
	if j.Runtime.Kind == trainer.TrainingRuntimeKind {
		return " in namespace " + j.Namespace
	}
	return ""
}

func listNames(ns []string) string {
	if len(ns) <= maxListed {
		return strings.Join(ns, ", ")
	}
	return strings.Join(ns[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(ns)-maxListed)
}

// shipped are the runtimes tj was read for.
func (tj TrainJobs) shipped() []ShippedRuntime {
	if tj.Shipped == nil {
		return ShippedRuntimes
	}
	return tj.Shipped
}

func shippedNames(shipped []ShippedRuntime) string {
	var parts []string
	for _, r := range shipped {
		parts = append(parts, r.Name)
	}
	return strings.Join(parts, " or ")
}

// webhookFindings warns when the deployed shipped ClusterTrainingRuntime
// opts out of the trainer's validating webhook.
func webhookFindings(rt *unstructured.Unstructured) []Finding {
	return webhookFinding(rt.GetKind(), rt.GetNamespace(), rt.GetName(), rt.GetLabels())
}

// webhookFinding warns when a deployed runtime carries
// runtimes.WebhookValidationLabel: disabled.
func webhookFinding(kind, namespace, name string, labels map[string]string) []Finding {
	if !runtimes.BypassesWebhook(labels) {
		return nil
	}
	what, flag, render := kind+" "+name, "", "render runtime"
	if namespace != "" {
		what, flag, render = kind+" "+namespace+"/"+name, " -n "+namespace, "render benchmark"
	}
	return []Finding{{Level: Warn, Check: "webhook-validation", Message: fmt.Sprintf(
		"the deployed %s carries %s: %s: %s (trainer v2.2.0 ignores the label); remove it (kubectl label %s%s %s %s-) and apply the runtime as tcpxogen %s prints it, with no label added by the Helm chart's runtimes.commonLabels or a kustomize labels transformer",
		what, runtimes.WebhookValidationLabel, runtimes.WebhookValidationDisabled, runtimes.WebhookBypass,
		strings.ToLower(kind), flag, name, runtimes.WebhookValidationLabel, render)}}
}
