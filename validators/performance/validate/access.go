package validate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tcpxogen/tcpxogen/internal/access"
)

// RBACHint is how a user gets the permissions validate needs, for --help
// and messages.
const RBACHint = "the permissions it needs are printed by tcpxogen render rbac --for validate [--install-trainer] --namespace NS | kubectl apply -f -"

// bindAccess binds the run's guard (nil for clients that do not go through
// one, such as the tests' fakes) to --namespace.
func bindAccess(cl *Clients, namespace string) error {
	if cl.Guard == nil {
		return nil
	}
	b, err := access.Validate.Bind(namespace)
	if err != nil {
		return err
	}
	cl.Guard.SetBinding(b)
	return nil
}

// grantInstall widens the guard to the install-trainer row once the policy
// has decided to install, after checking that the objects to install are
// all kinds that row covers: a --trainer-manifests file holding another
// kind is refused as input, not sent.
func grantInstall(cl *Clients, namespace string, objs []*unstructured.Unstructured) error {
	b, err := access.Validate.Bind(namespace, access.InstallTrainer)
	if err != nil {
		return err
	}
	if err := installCovered(b, objs); err != nil {
		return err
	}
	if cl.Guard != nil {
		cl.Guard.SetBinding(b)
	}
	return nil
}

// installCovered checks that b allows creating and deleting every object.
// The resource is the kind's conventional plural, which every kind of a
// trainer install has (a test holds the rendered install to it).
func installCovered(b access.Binding, objs []*unstructured.Unstructured) error {
	var missing []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		for _, verb := range []string{"create", "delete"} {
			req := access.Request{Verb: verb, Group: gvk.Group, Resource: plural.Resource, Namespace: o.GetNamespace()}
			if verb == "delete" {
				req.Name = o.GetName()
			}
			if !b.Allows(req) {
				missing = append(missing, fmt.Sprintf("%s (%s)", describe(o), req.Permission()))
				break
			}
		}
	}
	if len(missing) > 0 {
		return badInput("the trainer install holds objects validate's %s permissions do not cover, so it would not install them: %s; an install of the pinned trainer holds none of these kinds (give its manifests with --trainer-manifests, or drop the option to render them)",
			access.InstallTrainer, strings.Join(missing, "; "))
	}
	return nil
}
