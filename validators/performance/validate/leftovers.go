package validate

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tcpxogen/tcpxogen/validators/performance/lifecycle"
)

// ledger is the run's cleanup record as it stands: every object the run
// created and has not deleted yet, the benchmark's and the trainer
// install's. A second signal prints it (package interrupt), so it is read
// from the signal's goroutine while the run changes it.
type ledger struct {
	mu   sync.Mutex
	objs []*unstructured.Unstructured
}

func (l *ledger) add(o *unstructured.Unstructured) {
	if l == nil || o == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objs = append(l.objs, o)
}

func (l *ledger) remove(o *unstructured.Unstructured) {
	if l == nil || o == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objs = slices.DeleteFunc(l.objs, func(x *unstructured.Unstructured) bool {
		return x.GroupVersionKind() == o.GroupVersionKind() && x.GetNamespace() == o.GetNamespace() && x.GetName() == o.GetName()
	})
}

// track keeps the ledger from the trainer plan's events.
func (l *ledger) track(e lifecycle.Event) {
	switch e.Step {
	case "created":
		l.add(e.Obj)
	case "deleted":
		l.remove(e.Obj)
	}
}

// report writes what is left and the kubectl commands that remove it, by
// the labels the run stamped (RunLabel on the benchmark's objects,
// lifecycle.InstallIDLabel on the trainer it installed): newest first, so a
// CRD goes after the objects of its kind.
func (l *ledger) report(w io.Writer) {
	l.mu.Lock()
	objs := slices.Clone(l.objs)
	l.mu.Unlock()
	if len(objs) == 0 {
		fmt.Fprintln(w, "validate: nothing of this run is left on the cluster")
		return
	}
	type group struct {
		selector  string
		kinds     []string
		allNS     bool
		namespace string
	}
	var groups []*group
	var names []string
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		names = append(names, describe(o))
		sel := ""
		switch labels := o.GetLabels(); {
		case labels[RunLabel] != "":
			sel = RunLabel + "=" + labels[RunLabel]
		case labels[lifecycle.InstallIDLabel] != "":
			sel = lifecycle.InstallIDLabel + "=" + labels[lifecycle.InstallIDLabel]
		}
		gi := slices.IndexFunc(groups, func(g *group) bool { return g.selector == sel })
		if gi < 0 {
			groups = append(groups, &group{selector: sel, namespace: o.GetNamespace()})
			gi = len(groups) - 1
		}
		g := groups[gi]
		kind := strings.ToLower(o.GetKind())
		if grp := o.GroupVersionKind().Group; grp != "" {
			kind += "." + grp
		}
		if !slices.Contains(g.kinds, kind) {
			g.kinds = append(g.kinds, kind)
		}
		if ns := o.GetNamespace(); ns != "" && ns != g.namespace {
			g.allNS = true
		}
		if g.namespace == "" {
			g.namespace = o.GetNamespace()
		}
	}
	fmt.Fprintf(w, "validate: left on the cluster, not cleaned up: %s\n", strings.Join(names, ", "))
	fmt.Fprintln(w, "validate: remove it with:")
	for _, g := range groups {
		if g.selector == "" {
			fmt.Fprintf(w, "  kubectl delete %s  # each object named above\n", strings.Join(g.kinds, ","))
			continue
		}
		where := ""
		switch {
		case g.allNS:
			where = " --all-namespaces"
		case g.namespace != "":
			where = " -n " + g.namespace
		}
		fmt.Fprintf(w, "  kubectl delete %s%s -l %s\n", strings.Join(g.kinds, ","), where, g.selector)
	}
}
