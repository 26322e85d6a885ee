package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// recorder is a fake Applier that records calls and fails or blocks on
// request.
type recorder struct {
	mu    sync.Mutex
	calls []string
	// applyErr and deleteErr fail the named objects ("Kind name").
	applyErr, deleteErr map[string]error
	// panicOnApply panics when creating the named object.
	panicOnApply string
	// deleteCtxErr records ctx.Err() at each delete, to show teardown does
	// not run on a cancelled context.
	deleteCtxErr []error
	// blockDelete makes Delete wait for its context to end.
	blockDelete bool
}

func (r *recorder) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := describe(obj)
	if name == r.panicOnApply {
		panic("applier exploded")
	}
	r.calls = append(r.calls, "apply "+name)
	if err := r.applyErr[name]; err != nil {
		return err
	}
	if obj.GetLabels()[InstallIDLabel] == "" {
		return fmt.Errorf("%s is not stamped with the install ID", name)
	}
	return nil
}

func (r *recorder) Delete(ctx context.Context, obj *unstructured.Unstructured) error {
	if r.blockDelete {
		<-ctx.Done()
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := describe(obj)
	r.calls = append(r.calls, "delete "+name)
	r.deleteCtxErr = append(r.deleteCtxErr, ctx.Err())
	return r.deleteErr[name]
}

func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func object(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// manifests are a small stand-in for the trainer's: a CRD, a namespace, a
// namespaced Deployment.
func manifests() ([]*unstructured.Unstructured, error) {
	return []*unstructured.Unstructured{
		object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "trainjobs.trainer.kubeflow.org"),
		object("v1", "Namespace", "", "kubeflow-system"),
		object("apps/v1", "Deployment", "kubeflow-system", "kubeflow-trainer-controller-manager"),
	}, nil
}

const (
	crdObj = "CustomResourceDefinition trainjobs.trainer.kubeflow.org"
	nsObj  = "Namespace kubeflow-system"
	depObj = "Deployment kubeflow-system/kubeflow-trainer-controller-manager"
)

func installPlan(t *testing.T) Plan {
	t.Helper()
	p, err := NewPlan(Decide(false, Missing), manifests)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunInstallsAndTearsDown(t *testing.T) {
	a := &recorder{}
	p := installPlan(t)
	var events []string
	p.Events = func(e Event) { events = append(events, e.Step+" "+e.Object) }
	ran := false
	err := p.Run(context.Background(), a, func(context.Context) error {
		ran = true
		if got := a.log(); len(got) != 3 {
			t.Errorf("body ran before the install finished: %v", got)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Run = %v, body ran %v", err, ran)
	}
	want := []string{"apply " + crdObj, "apply " + nsObj, "apply " + depObj, "delete " + depObj, "delete " + nsObj, "delete " + crdObj}
	if got := a.log(); !slices.Equal(got, want) {
		t.Errorf("calls\n%v\nwant\n%v", got, want)
	}
	if wantEvents := []string{"created " + crdObj, "created " + nsObj, "created " + depObj, "deleted " + depObj, "deleted " + nsObj, "deleted " + crdObj}; !slices.Equal(events, wantEvents) {
		t.Errorf("events %v", events)
	}
}

func TestRunTearsDownWhenBodyFails(t *testing.T) {
	a := &recorder{}
	boom := errors.New("all_reduce_perf exited 1")
	err := installPlan(t).Run(context.Background(), a, func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v; want the body's error", err)
	}
	if got := a.log(); len(got) != 6 || got[5] != "delete "+crdObj {
		t.Errorf("not torn down: %v", got)
	}
}

func TestRunTearsDownWhenCancelledMidBody(t *testing.T) {
	a := &recorder{}
	ctx, cancel := context.WithCancelCause(context.Background())
	interrupted := errors.New("interrupt")
	err := installPlan(t).Run(ctx, a, func(ctx context.Context) error {
		cancel(interrupted) // as a signal handler would, mid-benchmark
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, interrupted) {
		t.Fatalf("Run = %v; want the interrupt", err)
	}
	if got := a.log(); len(got) != 6 {
		t.Fatalf("not torn down: %v", got)
	}
	for i, e := range a.deleteCtxErr {
		if e != nil {
			t.Errorf("delete %d ran on a dead context (%v): teardown must not inherit the cancellation", i, e)
		}
	}
}

func TestRunApplyFailureDeletesOnlyWhatWasCreated(t *testing.T) {
	denied := errors.New("admission webhook denied the request")
	a := &recorder{applyErr: map[string]error{depObj: denied}}
	ran := false
	err := installPlan(t).Run(context.Background(), a, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, denied) || !strings.Contains(err.Error(), "creating "+depObj) {
		t.Fatalf("Run = %v; want the apply error naming the object", err)
	}
	if ran {
		t.Error("body ran after a failed install")
	}
	want := []string{"apply " + crdObj, "apply " + nsObj, "apply " + depObj, "delete " + nsObj, "delete " + crdObj}
	if got := a.log(); !slices.Equal(got, want) {
		t.Errorf("calls\n%v\nwant\n%v", got, want)
	}
}

// An object that already exists is not the validator's: it is neither
// changed nor deleted.
func TestRunKeepsExistingObjects(t *testing.T) {
	a := &recorder{applyErr: map[string]error{nsObj: fmt.Errorf("%s: %w", nsObj, ErrAlreadyExists)}}
	var kept []string
	p := installPlan(t)
	p.Events = func(e Event) {
		if e.Step == "kept" {
			kept = append(kept, e.Object)
		}
	}
	if err := p.Run(context.Background(), a, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := a.log(); slices.Contains(got, "delete "+nsObj) || len(got) != 5 {
		t.Errorf("calls %v: the pre-existing namespace must not be deleted", got)
	}
	if !slices.Equal(kept, []string{nsObj}) {
		t.Errorf("kept events %v", kept)
	}
}

func TestRunTearsDownAfterPanic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       *recorder
		body    func(context.Context) error
		deletes []string
	}{
		{"in the benchmark", &recorder{}, func(context.Context) error { panic("nil map") },
			[]string{"delete " + depObj, "delete " + nsObj, "delete " + crdObj}},
		{"in the applier", &recorder{panicOnApply: depObj}, func(context.Context) error { return nil },
			[]string{"delete " + nsObj, "delete " + crdObj}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := installPlan(t).Run(context.Background(), tc.a, tc.body)
			if !errors.Is(err, ErrPanicked) {
				t.Fatalf("Run = %v; want ErrPanicked", err)
			}
			var deletes []string
			for _, c := range tc.a.log() {
				if strings.HasPrefix(c, "delete ") {
					deletes = append(deletes, c)
				}
			}
			if !slices.Equal(deletes, tc.deletes) {
				t.Errorf("deletes %v, want %v", deletes, tc.deletes)
			}
		})
	}
}

// One failed delete does not stop the rest, and the error says what is left
// and how to find it.
func TestRunTeardownFailure(t *testing.T) {
	stuck := errors.New("the server has received too many requests")
	a := &recorder{deleteErr: map[string]error{nsObj: stuck}}
	p := installPlan(t)
	err := p.Run(context.Background(), a, func(context.Context) error { return nil })
	if !errors.Is(err, ErrTeardown) || !errors.Is(err, stuck) {
		t.Fatalf("Run = %v; want ErrTeardown wrapping the cause", err)
	}
	for _, want := range []string{"1 of the 3 objects", nsObj, InstallIDLabel + "=" + p.InstallID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("teardown error lacks %q: %v", want, err)
		}
	}
	if got := a.log(); got[len(got)-1] != "delete "+crdObj {
		t.Errorf("teardown stopped at the failure: %v", got)
	}
}

func TestRunTeardownIsBounded(t *testing.T) {
	a := &recorder{blockDelete: true}
	p := installPlan(t)
	p.TeardownTimeout = 50 * time.Millisecond
	start := time.Now()
	err := p.Run(context.Background(), a, func(context.Context) error { return nil })
	if !errors.Is(err, ErrTeardown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v; want a teardown deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("teardown took %v despite a 50ms bound", d)
	}
}

func TestRunWithoutInstall(t *testing.T) {
	for _, d := range []Decision{Decide(true, Complete), Decide(false, Complete)} {
		p, err := NewPlan(d, func() ([]*unstructured.Unstructured, error) {
			t.Fatal("manifests loaded for a decision that does not install")
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		a := &recorder{}
		ran := false
		if err := p.Run(context.Background(), a, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
			t.Fatalf("%s: Run = %v, body ran %v", d.Action, err, ran)
		}
		if got := a.log(); len(got) != 0 {
			t.Errorf("%s touched the cluster: %v", d.Action, got)
		}
	}
}

func TestRunRefusesFailedDecisions(t *testing.T) {
	for _, d := range []Decision{Decide(true, Missing), Decide(true, Partial), Decide(false, Partial)} {
		p, err := NewPlan(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := &recorder{}
		err = p.Run(context.Background(), a, func(context.Context) error { t.Fatal("body ran"); return nil })
		if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), d.Remedy) {
			t.Errorf("%s: Run = %v; want the policy error with its remedy", d.Action, err)
		}
		if got := a.log(); len(got) != 0 {
			t.Errorf("%s touched the cluster: %v", d.Action, got)
		}
	}
}

func TestRunRejectsInconsistentPlans(t *testing.T) {
	objs, _ := manifests()
	for name, p := range map[string]Plan{
		"objects without install": {Decision: Decide(false, Complete), Install: objs},
		"install without objects": {Decision: Decide(false, Missing)},
	} {
		a := &recorder{}
		if err := p.Run(context.Background(), a, func(context.Context) error { return nil }); err == nil || !strings.Contains(err.Error(), "NewPlan") {
			t.Errorf("%s: Run = %v", name, err)
		}
		if len(a.log()) != 0 {
			t.Errorf("%s touched the cluster", name)
		}
	}
}

func TestNewPlan(t *testing.T) {
	src, _ := manifests()
	p, err := NewPlan(Decide(false, Missing), func() ([]*unstructured.Unstructured, error) { return src, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(p.InstallID) != 12 {
		t.Errorf("install ID %q", p.InstallID)
	}
	for i, o := range p.Install {
		if o.GetLabels()[InstallIDLabel] != p.InstallID {
			t.Errorf("object %d not stamped", i)
		}
		if src[i].GetLabels() != nil {
			t.Errorf("NewPlan modified the caller's object %d", i)
		}
	}
	dry := p.String()
	for _, want := range []string{"install-and-tear-down", "1. " + crdObj, "3. " + depObj, "reverse order"} {
		if !strings.Contains(dry, want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry)
		}
	}

	loadErr := errors.New("no such file")
	for name, m := range map[string]func() ([]*unstructured.Unstructured, error){
		"nil":   nil,
		"error": func() ([]*unstructured.Unstructured, error) { return nil, loadErr },
		"empty": func() ([]*unstructured.Unstructured, error) { return nil, nil },
		"anonymous": func() ([]*unstructured.Unstructured, error) {
			return []*unstructured.Unstructured{object("v1", "ConfigMap", "x", "")}, nil
		},
	} {
		if _, err := NewPlan(Decide(false, Missing), m); err == nil {
			t.Errorf("%s manifests accepted", name)
		}
	}

	refused, _ := NewPlan(Decide(false, Partial), nil)
	if s := refused.String(); !strings.Contains(s, "remedy: ") || strings.Contains(s, "would install") {
		t.Errorf("dry run of a refusal:\n%s", s)
	}
}

func TestRunWaitsForReadiness(t *testing.T) {
	notReady := errors.New("still not ready: the Kubeflow Trainer controller")
	a := &recorder{}
	p := installPlan(t)
	p.WaitReady = func(ctx context.Context) error {
		if got := a.log(); len(got) != 3 {
			t.Errorf("WaitReady ran before the install finished: %v", got)
		}
		return notReady
	}
	err := p.Run(context.Background(), a, func(context.Context) error { t.Error("body ran on a trainer that is not ready"); return nil })
	if !errors.Is(err, notReady) {
		t.Fatalf("Run = %v", err)
	}
	if got := a.log(); len(got) != 6 {
		t.Errorf("not torn down after WaitReady failed: %v", got)
	}

	// Nothing installed: nothing to wait for.
	used, _ := NewPlan(Decide(true, Complete), nil)
	used.WaitReady = func(context.Context) error { t.Error("WaitReady called without an install"); return nil }
	if err := used.Run(context.Background(), &recorder{}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// A create whose answer was lost and could not be read back may have
// happened: the plan records it, so the teardown deletes it (the Applier's
// Delete checks it is the run's first), and the event says it is unconfirmed.
func TestRunTearsDownAnUnconfirmedCreate(t *testing.T) {
	lost := fmt.Errorf("creating: http2: client connection lost: %w", ErrUnconfirmed)
	a := &recorder{applyErr: map[string]error{nsObj: lost}}
	p := installPlan(t)
	var events []Event
	p.Events = func(e Event) { events = append(events, e) }
	err := p.Run(context.Background(), a, func(context.Context) error {
		t.Error("body ran after an unconfirmed install step")
		return nil
	})
	if !errors.Is(err, ErrUnconfirmed) || !strings.Contains(err.Error(), "creating "+nsObj) {
		t.Fatalf("Run = %v; want the unconfirmed create naming the object", err)
	}
	want := []string{"apply " + crdObj, "apply " + nsObj, "delete " + nsObj, "delete " + crdObj}
	if got := a.log(); !slices.Equal(got, want) {
		t.Errorf("calls\n%v\nwant\n%v", got, want)
	}
	i := slices.IndexFunc(events, func(e Event) bool { return e.Object == nsObj && e.Step == "created" })
	if i < 0 || !errors.Is(events[i].Err, ErrUnconfirmed) {
		t.Errorf("no unconfirmed created event for %s: %+v", nsObj, events)
	}
}
