package realize

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/features"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

// DefaultNamespace is the namespace a TrainJob without one is realized in,
// as kubectl would create it.
const DefaultNamespace = "default"

// PlaceholderUID is the UID given to a TrainJob that has none. The API
// server assigns a UID on create and the trainer copies it into every owner
// reference; a fixed value keeps realized output byte-for-byte reproducible
// and is recognisably not a real UID.
const PlaceholderUID types.UID = "00000000-0000-0000-0000-000000000000"

// RedactedValue replaces every value of every Secret in a Result. The MPI
// plugin generates a fresh SSH key pair on each build; the keys are noise in
// a comparison and must never land in a report.
const RedactedValue = "REDACTED"

// Result is what the trainer controller would apply for one TrainJob.
type Result struct {
	// TrainerVersion is the trainer module version that produced the result.
	TrainerVersion string
	// JobSet is the JobSet the controller would apply.
	JobSet *jobsetv1alpha2.JobSet
	// Others holds every other object the controller would write for the
	// TrainJob (for example the MPI hostfile ConfigMap and SSH Secret, or
	// the runtime snapshot ConfigMap from trainer v2.3.0 on), sorted by kind,
	// namespace and name. Secret values are RedactedValue.
	Others []*unstructured.Unstructured
	// Warnings are the warnings the TrainJob admission webhook would return
	// (for example for a runtime labelled deprecated).
	Warnings []string
}

// AdmissionError reports that a trainer admission webhook would reject one
// of the inputs (the runtime on create, or the TrainJob), so the controller
// would never see the TrainJob.
type AdmissionError struct {
	// Kind is the kind of the rejected object.
	Kind string
	Errs field.ErrorList
}

func (e *AdmissionError) Error() string {
	return fmt.Sprintf("trainer admission rejects the %s: %v", e.Kind, e.Errs.ToAggregate())
}

// realizeMu serialises realizations: runtimecore.New stores the runtimes it
// builds in package variables of the trainer (and ClusterTrainingRuntime
// reaches its TrainingRuntime through one), so two concurrent realizations
// could run one job's build against the other's fake client. A realization
// takes milliseconds; serialising all of it is the simple correct choice.
var realizeMu sync.Mutex

// Realize runs the real Kubeflow Trainer runtime framework in-process, with a
// fake API client holding only runtime and job, and returns exactly what the
// trainer controller would apply for job. It follows the path an object
// takes on a cluster: CRD defaulting, the runtime's and the TrainJob's
// validating webhooks, then the build the controller runs on reconcile.
//
// runtime must be a *trainer.ClusterTrainingRuntime or a
// *trainer.TrainingRuntime, and job's runtimeRef must name it. Neither input
// is modified. Both are first defaulted exactly as the API server defaults
// them on create, from the CRD schemas of the linked trainer version (see
// defaults.go). A job without namespace is realized in DefaultNamespace, a
// TrainingRuntime without namespace in the job's, and a job without UID gets
// PlaceholderUID.
//
// A runtime or TrainJob the trainer's webhooks would reject yields an
// *AdmissionError. Both webhooks run on the defaulted objects, as behind
// the API server; on raw objects they misreport (replicas 0, for one).
//
// Not modelled: CRD schema and CEL validation (the schema validator's job;
// run it first), and the TrainJob mutating webhook, which only stamps
// runtimePatches[].time, a field the build never reads.
func Realize(ctx context.Context, runtime client.Object, job *trainer.TrainJob) (*Result, error) {
	rtObj, rtKind, err := prepareRuntime(runtime)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, errors.New("realize: TrainJob is nil")
	}
	job = job.DeepCopy()
	if job.Name == "" {
		return nil, errors.New("realize: TrainJob has no name")
	}
	if job.Namespace == "" {
		job.Namespace = DefaultNamespace
	}
	if job.UID == "" {
		job.UID = PlaceholderUID
	}
	// The fake client refuses objects that already carry a resourceVersion,
	// and managed fields record other writers; the API server would set
	// both afresh on create anyway.
	job.ResourceVersion, job.ManagedFields = "", nil
	rtObj.SetResourceVersion("")
	rtObj.SetManagedFields(nil)
	job.SetGroupVersionKind(trainer.SchemeGroupVersion.WithKind(trainer.TrainJobKind))

	switch rtKind {
	case trainer.TrainingRuntimeKind:
		if rtObj.GetNamespace() == "" {
			rtObj.SetNamespace(job.Namespace)
		}
		if rtObj.GetNamespace() != job.Namespace {
			return nil, fmt.Errorf("realize: TrainingRuntime %s/%s is namespaced and cannot serve TrainJob %s/%s from another namespace",
				rtObj.GetNamespace(), rtObj.GetName(), job.Namespace, job.Name)
		}
	case trainer.ClusterTrainingRuntimeKind:
		if rtObj.GetNamespace() != "" {
			return nil, fmt.Errorf("realize: ClusterTrainingRuntime %q is cluster-scoped but has namespace %q", rtObj.GetName(), rtObj.GetNamespace())
		}
	}

	d, err := linkedDefaulter()
	if err != nil {
		return nil, fmt.Errorf("realize: %w", err)
	}
	if err := d.apply(trainer.TrainJobKind, job); err != nil {
		return nil, fmt.Errorf("realize: defaulting TrainJob: %w", err)
	}
	if err := d.apply(rtKind, rtObj); err != nil {
		return nil, fmt.Errorf("realize: defaulting %s: %w", rtKind, err)
	}

	// Checked after defaulting, because the runtimeRef's group and kind are
	// themselves CRD defaults.
	if err := checkRuntimeRef(job, rtObj, rtKind); err != nil {
		return nil, err
	}
	if err := admitRuntime(ctx, rtObj); err != nil {
		return nil, err
	}
	// The TrainJobStatus plugin dereferences the controller configuration,
	// which realization does not model (it would need the status server's
	// certificates and service); with the gate on, the build would panic.
	if features.Enabled(features.TrainJobStatus) {
		return nil, fmt.Errorf("realize: the trainer feature gate %s is enabled; realization models the controller with it off", features.TrainJobStatus)
	}

	if _, err := logr.FromContext(ctx); err != nil {
		// The framework logs through controller-runtime, whose global logger
		// complains on stderr if nobody ever set one. Realization has nothing
		// to say there: discard unless the caller supplied a logger.
		ctx = logr.NewContext(ctx, logr.Discard())
	}

	realizeMu.Lock()
	defer realizeMu.Unlock()
	return realizeLocked(ctx, rtObj, job)
}

func realizeLocked(ctx context.Context, rtObj client.Object, job *trainer.TrainJob) (res *Result, err error) {
	// A panic in upstream code is a finding about the inputs (or the
	// trainer), not a reason to take the caller down with it.
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("realize: trainer runtime framework panicked on %s %s: %v", rtObj.GetObjectKind().GroupVersionKind().Kind, rtObj.GetName(), p)
		}
	}()

	ct, err := clientScheme()
	if err != nil {
		return nil, err
	}
	scheme := ct.scheme
	// A fresh client per realization: trainer v2.3.0 stores a runtime
	// snapshot through the client on first build and reads it back on later
	// builds, so a shared client would leak one case's runtime into the next
	// (and, on v2.3.0, make the next build fail: TestRebuildOnSameClient).
	rec := &writeRecorder{scheme: scheme}
	c := fake.NewClientBuilder().
		WithScheme(scheme).
		WithRESTMapper(ct.mapper).
		WithObjects(rtObj, job).
		WithInterceptorFuncs(rec.funcs()).
		Build()

	rts, err := runtimecore.New(ctx, c, noopIndexer{}, nil)
	if err != nil {
		return nil, fmt.Errorf("realize: initialising trainer runtimes: %w", err)
	}
	key := trainerruntime.RuntimeRefToRuntimeRegistryKey(job.Spec.RuntimeRef)
	rt, ok := rts[key]
	if !ok {
		return nil, fmt.Errorf("realize: trainer %s has no runtime for %q", TrainerVersion(), key)
	}

	warnings, errs := rt.ValidateObjects(ctx, nil, job)
	if len(errs) > 0 {
		return nil, &AdmissionError{Kind: trainer.TrainJobKind, Errs: errs}
	}

	applyCfgs, err := rt.NewObjects(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("realize: building objects for TrainJob %s/%s: %w", job.Namespace, job.Name, err)
	}

	res = &Result{TrainerVersion: TrainerVersion(), Warnings: append([]string(nil), warnings...)}
	seen := map[string]bool{}
	for _, ac := range applyCfgs {
		u, err := applyConfigToUnstructured(ac)
		if err != nil {
			return nil, fmt.Errorf("realize: %w", err)
		}
		if u == nil {
			continue
		}
		seen[objectKey(u)] = true
		if u.GroupVersionKind() == jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet") {
			if res.JobSet != nil {
				return nil, fmt.Errorf("realize: trainer built more than one JobSet (%s and %s)", res.JobSet.Name, u.GetName())
			}
			if res.JobSet, err = decodeJobSet(u); err != nil {
				return nil, fmt.Errorf("realize: %w", err)
			}
			continue
		}
		res.Others = append(res.Others, u)
	}
	if res.JobSet == nil {
		return nil, fmt.Errorf("realize: trainer built no JobSet for TrainJob %s/%s", job.Namespace, job.Name)
	}

	written, err := rec.objects(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("realize: %w", err)
	}
	for _, u := range written {
		if seen[objectKey(u)] {
			// Not done by any known trainer version; if one starts, which of
			// the two is authoritative needs a decision, not a guess.
			return nil, fmt.Errorf("realize: trainer both wrote and returned %s", objectKey(u))
		}
		res.Others = append(res.Others, u)
	}

	for _, u := range res.Others {
		if err := redactSecret(u); err != nil {
			return nil, fmt.Errorf("realize: %w", err)
		}
	}
	sort.Slice(res.Others, func(i, j int) bool { return objectKey(res.Others[i]) < objectKey(res.Others[j]) })
	return res, nil
}

// prepareRuntime checks the runtime's type and returns a private copy.
func prepareRuntime(runtime client.Object) (client.Object, string, error) {
	switch rt := runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		if rt == nil {
			break
		}
		cp := rt.DeepCopy()
		cp.SetGroupVersionKind(trainer.SchemeGroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
		return cp, trainer.ClusterTrainingRuntimeKind, checkRuntimeName(cp)
	case *trainer.TrainingRuntime:
		if rt == nil {
			break
		}
		cp := rt.DeepCopy()
		cp.SetGroupVersionKind(trainer.SchemeGroupVersion.WithKind(trainer.TrainingRuntimeKind))
		return cp, trainer.TrainingRuntimeKind, checkRuntimeName(cp)
	case nil:
	default:
		return nil, "", fmt.Errorf("realize: runtime must be a *ClusterTrainingRuntime or *TrainingRuntime (trainer.kubeflow.org/v1alpha1), got %T", runtime)
	}
	return nil, "", errors.New("realize: runtime is nil")
}

func checkRuntimeName(obj client.Object) error {
	if obj.GetName() == "" {
		return errors.New("realize: runtime has no name")
	}
	return nil
}

// admitRuntime runs the trainer's validating webhook for the runtime's
// kind, as the API server did when the runtime was created. Its warnings
// concern creating the runtime, not this TrainJob, and are not reported.
func admitRuntime(ctx context.Context, rtObj client.Object) error {
	var err error
	switch rt := rtObj.(type) {
	case *trainer.ClusterTrainingRuntime:
		_, err = (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	case *trainer.TrainingRuntime:
		_, err = (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(ctx, rt)
	}
	if err == nil {
		return nil
	}
	kind := rtObj.GetObjectKind().GroupVersionKind().Kind
	// The validators flatten their field errors into an aggregate; recover
	// them so callers get the same shape as for the TrainJob.
	var errs field.ErrorList
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) {
				errs = append(errs, fe)
			} else {
				errs = append(errs, field.InternalError(nil, e))
			}
		}
	} else {
		errs = field.ErrorList{field.InternalError(nil, err)}
	}
	return &AdmissionError{Kind: kind, Errs: errs}
}

// checkRuntimeRef makes sure job refers to the runtime being realized. The
// framework would otherwise fail with a bare "not found", or worse, pick the
// other runtime kind.
func checkRuntimeRef(job *trainer.TrainJob, rtObj client.Object, rtKind string) error {
	ref := job.Spec.RuntimeRef
	want := schema.GroupKind{Group: trainer.SchemeGroupVersion.Group, Kind: rtKind}
	got := schema.GroupKind{}
	if ref.APIGroup != nil {
		got.Group = *ref.APIGroup
	}
	if ref.Kind != nil {
		got.Kind = *ref.Kind
	}
	if ref.Name != rtObj.GetName() || got != want {
		return fmt.Errorf("realize: TrainJob %s/%s refers to %s %q, but the runtime given is %s %q",
			job.Namespace, job.Name, got, ref.Name, want, rtObj.GetName())
	}
	return nil
}

type clientTypes struct {
	scheme *apiruntime.Scheme
	mapper meta.RESTMapper
}

var clientScheme = sync.OnceValues(func() (clientTypes, error) {
	s := apiruntime.NewScheme()
	// client-go's scheme brings core/v1, which the MPI plugin (it looks up
	// its SSH Secret) and trainer v2.3.0's runtime snapshot ConfigMap need.
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			return clientTypes{}, fmt.Errorf("realize: building scheme: %w", err)
		}
	}
	// Scopes as the API server has them. The fake client's default mapper
	// is empty, which the framework tolerates today only because it never
	// asks; a correct mapper keeps cluster-scoped lookups honest.
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(trainer.SchemeGroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind), meta.RESTScopeRoot)
	m.Add(trainer.SchemeGroupVersion.WithKind(trainer.TrainingRuntimeKind), meta.RESTScopeNamespace)
	m.Add(trainer.SchemeGroupVersion.WithKind(trainer.TrainJobKind), meta.RESTScopeNamespace)
	m.Add(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	return clientTypes{scheme: s, mapper: m}, nil
})

// noopIndexer satisfies the framework's field-indexer dependency. Indexes
// only serve List calls by field, which building objects never makes.
type noopIndexer struct{}

func (noopIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

// applyConfigToUnstructured serialises an apply configuration the way the
// controller sends it to the API server.
func applyConfigToUnstructured(ac apiruntime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	if ac == nil || reflect.ValueOf(ac).Kind() == reflect.Pointer && reflect.ValueOf(ac).IsNil() {
		return nil, nil
	}
	raw, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("serialising %T: %w", ac, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decoding %T as an object: %w", ac, err)
	}
	return u, nil
}

// decodeJobSet decodes strictly: a field the linked JobSet API does not know
// means the apply configuration and the typed API disagree, and silently
// dropping it would hide exactly the kind of loss realization exists to show.
func decodeJobSet(u *unstructured.Unstructured) (*jobsetv1alpha2.JobSet, error) {
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("serialising JobSet %s: %w", u.GetName(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	js := &jobsetv1alpha2.JobSet{}
	if err := dec.Decode(js); err != nil {
		return nil, fmt.Errorf("decoding JobSet %s: %w", u.GetName(), err)
	}
	return js, nil
}

// writeRecorder notes every object the framework writes through the
// client while building (trainer v2.3.0 applies its runtime snapshot
// ConfigMap that way). Writes that cannot be part of "what the controller
// applies" (deletes, status writes) are refused: realization would
// otherwise report an incomplete picture without saying so.
type writeRecorder struct {
	scheme *apiruntime.Scheme
	mu     sync.Mutex
	keys   []writtenKey
	seen   map[writtenKey]bool
}

type writtenKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (k writtenKey) String() string {
	return strings.Join([]string{k.gvk.Kind, k.namespace, k.name}, "/")
}

func (r *writeRecorder) note(k writtenKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[writtenKey]bool{}
	}
	if !r.seen[k] {
		r.seen[k] = true
		r.keys = append(r.keys, k)
	}
}

func (r *writeRecorder) noteObject(obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return fmt.Errorf("realize: identifying object written by the trainer: %w", err)
	}
	r.note(writtenKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()})
	return nil
}

func (r *writeRecorder) funcs() interceptor.Funcs {
	refuse := func(what string) error {
		return fmt.Errorf("realize: the trainer %s while building objects, which realization does not model", what)
	}
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := r.noteObject(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := r.noteObject(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := r.noteObject(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj apiruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			u, err := applyConfigToUnstructured(obj)
			if err != nil {
				return fmt.Errorf("realize: %w", err)
			}
			if u == nil {
				return errors.New("realize: the trainer applied a nil object")
			}
			r.note(writtenKey{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return refuse("deleted an object")
		},
		DeleteAllOf: func(context.Context, client.WithWatch, client.Object, ...client.DeleteAllOfOption) error {
			return refuse("deleted objects")
		},
		SubResourceCreate: func(context.Context, client.Client, string, client.Object, client.Object, ...client.SubResourceCreateOption) error {
			return refuse("wrote a subresource")
		},
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return refuse("wrote a subresource")
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return refuse("wrote a subresource")
		},
		SubResourceApply: func(context.Context, client.Client, string, apiruntime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return refuse("wrote a subresource")
		},
	}
}

// objects reads back, in write order, the final state of everything
// written, without the fields only a server fills in (the apply
// configurations the framework returns have none of them either).
func (r *writeRecorder) objects(ctx context.Context, c client.Client) ([]*unstructured.Unstructured, error) {
	r.mu.Lock()
	keys := append([]writtenKey(nil), r.keys...)
	r.mu.Unlock()
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.gvk)
		if err := c.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: k.name}, u); err != nil {
			return nil, fmt.Errorf("reading back %s written by the trainer: %w", k, err)
		}
		for _, f := range []string{"resourceVersion", "managedFields", "creationTimestamp", "uid", "generation"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		out = append(out, u)
	}
	return out, nil
}

// redactSecret replaces every value of a Secret with RedactedValue, keeping
// the keys (which are part of the wiring: the pods mount them by key).
func redactSecret(u *unstructured.Unstructured) error {
	if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Kind: "Secret"}) {
		return nil
	}
	for _, f := range []struct {
		name  string
		value string
	}{
		{"data", base64.StdEncoding.EncodeToString([]byte(RedactedValue))},
		{"stringData", RedactedValue},
	} {
		m, found, err := unstructured.NestedMap(u.Object, f.name)
		if err != nil {
			return fmt.Errorf("redacting Secret %s: %s: %w", u.GetName(), f.name, err)
		}
		if !found {
			continue
		}
		for k := range m {
			m[k] = f.value
		}
		if err := unstructured.SetNestedMap(u.Object, m, f.name); err != nil {
			return fmt.Errorf("redacting Secret %s: %s: %w", u.GetName(), f.name, err)
		}
	}
	return nil
}

// objectKey orders and identifies objects: kind, then namespace, then name.
func objectKey(u *unstructured.Unstructured) string {
	return strings.Join([]string{u.GetKind(), u.GetNamespace(), u.GetName()}, "/")
}
