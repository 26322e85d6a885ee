package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Applier creates and deletes objects. DynamicApplier implements it over
// client-go's dynamic client.
type Applier interface {
	// Apply creates obj. It never modifies an object that already exists:
	// it returns an error wrapping ErrAlreadyExists instead, because the
	// executor must not adopt (and later delete) what it did not create. On
	// success it may record the server-assigned UID in obj, which Delete
	// then uses as a precondition. A create whose answer was lost and could
	// not be settled by reading the object back wraps ErrUnconfirmed: the
	// object may exist and belongs in the caller's cleanup.
	Apply(ctx context.Context, obj *unstructured.Unstructured) error
	// Delete deletes obj (with foreground propagation); an object that is
	// already gone is not an error. Without a recorded UID it deletes only
	// an object carrying every label obj has.
	Delete(ctx context.Context, obj *unstructured.Unstructured) error
}

// ErrAlreadyExists is wrapped by Applier.Apply when the object exists.
var ErrAlreadyExists = errors.New("object already exists")

// ErrUnconfirmed is wrapped by Applier.Apply when a create got no answer and
// reading the object back failed too: it may exist, so the caller records it
// for its cleanup like a created object (Delete checks it is the caller's
// before deleting it).
var ErrUnconfirmed = errors.New("the create may have happened")

var (
	// ErrTeardown is wrapped when objects the validator installed could not
	// all be deleted; the message says how to find them.
	ErrTeardown = errors.New("tearing down the installed trainer failed")
	// ErrPanicked is wrapped when the benchmark step (or the Applier)
	// panicked; the installed objects were torn down regardless.
	ErrPanicked = errors.New("panicked")
)

const (
	// InstallIDLabel is stamped on every object the validator installs, with
	// the plan's InstallID as its value, so leftovers of an interrupted
	// teardown can be found: kubectl get <kind> -l tcpxogen.dev/install-id=ID.
	InstallIDLabel = "tcpxogen.dev/install-id"

	// DefaultTeardownTimeout bounds the teardown when Plan.TeardownTimeout is
	// zero: long enough for a few dozen deletes against a slow API server,
	// short enough that an interrupted run still exits.
	DefaultTeardownTimeout = 2 * time.Minute
)

// Plan is what the validator will do about the trainer: the decision, and the
// objects it installs (in order) when the decision says to install. Printing
// a plan (String) is the dry run.
type Plan struct {
	Decision Decision
	// Install is empty unless Decision.Install.
	Install []*unstructured.Unstructured
	// InstallID identifies this run's installed objects (InstallIDLabel).
	InstallID string
	// TeardownTimeout bounds the teardown; zero means DefaultTeardownTimeout.
	TeardownTimeout time.Duration
	// WaitReady, when set, runs after the install and before the benchmark,
	// typically WaitComplete; if it fails the benchmark does not run and
	// the teardown still does. It is not called when nothing was installed.
	WaitReady func(ctx context.Context) error
	// Events, when set, is told about every install and teardown step, for
	// logs and reports.
	Events func(Event)
}

// Event is one step of Run.
type Event struct {
	// Step is "created" (with Err wrapping ErrUnconfirmed when the create
	// got no answer and may have happened), "kept" (it already existed, so
	// it is neither changed nor deleted), "deleted" or "delete-failed".
	Step   string
	Object string // "Kind namespace/name"
	// Obj is the object itself, for a record of what is on the cluster.
	Obj *unstructured.Unstructured
	Err error
}

// NewPlan builds the plan for a decision. manifests supplies the pinned
// trainer's objects in apply order (CRDs and namespaces first); it is called
// only when the decision installs, so a run that does not install never needs
// them. The objects are copied and stamped with the install ID.
func NewPlan(d Decision, manifests func() ([]*unstructured.Unstructured, error)) (Plan, error) {
	p := Plan{Decision: d}
	if !d.Install {
		return p, nil
	}
	if manifests == nil {
		return Plan{}, errors.New("the decision installs the trainer, but no manifests were supplied: pass the pinned trainer's manifests to NewPlan")
	}
	objs, err := manifests()
	if err != nil {
		return Plan{}, fmt.Errorf("loading the pinned trainer's manifests: %w", err)
	}
	if len(objs) == 0 {
		return Plan{}, errors.New("the pinned trainer's manifests are empty: the decision installs the trainer, so they must hold its CRDs and controller")
	}
	id, err := newInstallID()
	if err != nil {
		return Plan{}, err
	}
	p.InstallID = id
	for i, o := range objs {
		if o == nil || o.GetKind() == "" || o.GetAPIVersion() == "" || o.GetName() == "" {
			return Plan{}, fmt.Errorf("trainer manifest object %d has no apiVersion, kind or metadata.name: every object to install must name itself", i+1)
		}
		c := o.DeepCopy()
		labels := c.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[InstallIDLabel] = id
		c.SetLabels(labels)
		p.Install = append(p.Install, c)
	}
	return p, nil
}

func newInstallID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating an install ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Run carries the plan out around body, the benchmark step:
//
//   - a failing decision returns its error (wrapping ErrPolicy) and touches
//     nothing;
//   - otherwise the objects to install are created in order, each recorded
//     once created; an object that already exists is kept as it is and not
//     recorded, because the validator does not own it;
//   - WaitReady, if set, waits for what was installed to become ready;
//   - body runs with ctx;
//   - if the decision tears down, the recorded objects are deleted in reverse
//     order. This runs whatever happened before: an install step failing
//     midway, body failing, ctx being cancelled, or a panic in body or the
//     Applier. It uses a context that keeps ctx's values but not its
//     cancellation, bounded by TeardownTimeout, so an interrupt does not also
//     interrupt the cleanup.
//
// The returned error joins the install or body error, a recovered panic
// (ErrPanicked) and the teardown error (ErrTeardown).
func (p Plan) Run(ctx context.Context, a Applier, body func(ctx context.Context) error) (err error) {
	if err := p.Decision.Err(); err != nil {
		return err
	}
	if p.Decision.Install != (len(p.Install) > 0) {
		return fmt.Errorf("inconsistent trainer plan: decision %s installs=%v but the plan holds %d objects; build plans with NewPlan", p.Decision.Action, p.Decision.Install, len(p.Install))
	}
	if body == nil {
		return errors.New("no benchmark step given to the trainer plan")
	}

	var installed []*unstructured.Unstructured
	defer func() {
		if r := recover(); r != nil {
			err = errors.Join(err, fmt.Errorf("benchmark step %w: %v\n%s", ErrPanicked, r, debug.Stack()))
		}
		if p.Decision.TearDown && len(installed) > 0 {
			err = errors.Join(err, p.teardown(ctx, a, installed))
		}
	}()

	for _, obj := range p.Install {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("installing the trainer: interrupted before %s: %w", describe(obj), context.Cause(ctx))
		}
		o := obj.DeepCopy()
		switch aerr := a.Apply(ctx, o); {
		case errors.Is(aerr, ErrAlreadyExists):
			p.emit(Event{Step: "kept", Object: describe(o), Obj: o, Err: aerr})
		case errors.Is(aerr, ErrUnconfirmed):
			// Recorded as created, so the teardown (and a second signal's
			// report) covers it; the install stops here all the same.
			installed = append(installed, o)
			p.emit(Event{Step: "created", Object: describe(o), Obj: o, Err: aerr})
			return fmt.Errorf("installing the trainer: creating %s: %w", describe(o), aerr)
		case aerr != nil:
			return fmt.Errorf("installing the trainer: creating %s: %w", describe(o), aerr)
		default:
			installed = append(installed, o)
			p.emit(Event{Step: "created", Object: describe(o), Obj: o})
		}
	}
	if p.WaitReady != nil && len(p.Install) > 0 {
		if err := p.WaitReady(ctx); err != nil {
			return fmt.Errorf("installing the trainer: %w", err)
		}
	}
	if err := body(ctx); err != nil {
		return fmt.Errorf("benchmark: %w", err)
	}
	return nil
}

// teardown deletes the installed objects in reverse order, carrying on past
// failures so that one stuck object does not leave the rest behind.
func (p Plan) teardown(ctx context.Context, a Applier, installed []*unstructured.Unstructured) error {
	timeout := p.TeardownTimeout
	if timeout <= 0 {
		timeout = DefaultTeardownTimeout
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var errs []error
	var left []string
	for i := len(installed) - 1; i >= 0; i-- {
		o := installed[i]
		if err := safeDelete(tctx, a, o); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", describe(o), err))
			left = append(left, describe(o))
			p.emit(Event{Step: "delete-failed", Object: describe(o), Obj: o, Err: err})
			continue
		}
		p.emit(Event{Step: "deleted", Object: describe(o), Obj: o})
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d of the %d objects it installed are left (%s); delete them by hand, they carry the label %s=%s: %w",
		ErrTeardown, len(left), len(installed), strings.Join(left, ", "), InstallIDLabel, p.InstallID, errors.Join(errs...))
}

// safeDelete turns a panicking Applier into an error, so one bad delete
// cannot abort the rest of the teardown.
func safeDelete(ctx context.Context, a Applier, o *unstructured.Unstructured) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("delete %w: %v", ErrPanicked, r)
		}
	}()
	return a.Delete(ctx, o)
}

func (p Plan) emit(e Event) {
	if p.Events != nil {
		p.Events(e)
	}
}

// describe names an object as "Kind namespace/name" or "Kind name".
func describe(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// String renders the plan for a dry run: the decision and, when it installs,
// every object in apply order and the teardown that follows.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trainer lifecycle: %s\n  %s\n", p.Decision.Action, p.Decision.Explanation)
	if p.Decision.Failed() {
		fmt.Fprintf(&b, "  remedy: %s\n", p.Decision.Remedy)
		return b.String()
	}
	if len(p.Install) == 0 {
		b.WriteString("  installs nothing and deletes nothing\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  would install %d objects, in order (labelled %s=%s):\n", len(p.Install), InstallIDLabel, p.InstallID)
	for i, o := range p.Install {
		fmt.Fprintf(&b, "    %d. %s\n", i+1, describe(o))
	}
	if p.Decision.TearDown {
		b.WriteString("  would then delete, in reverse order, exactly the objects it created (not those that already existed)\n")
	}
	return b.String()
}
