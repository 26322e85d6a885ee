package rendercmd

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// render rbac prints typed RBAC objects that decode strictly, in the
// namespace asked for, bound to the subject asked for; the rules
// themselves are held to the declared lists by internal/access's tests.
func TestRenderRBAC(t *testing.T) {
	code, out, stderr := render(t, "rbac", "--for", "validate", "--namespace", "bench", "--install-trainer", "--user", "alice")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	kinds := map[string]int{}
	for _, doc := range strings.Split(out, "\n---\n")[1:] {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		kinds[meta.Kind]++
		switch meta.Kind {
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				t.Fatalf("%s does not decode strictly: %v", meta.Kind, err)
			}
			if len(b.Subjects) != 1 || b.Subjects[0] != (rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}) {
				t.Errorf("%s %s binds %v", meta.Kind, b.Name, b.Subjects)
			}
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatal(err)
			}
			// The benchmark's namespace, and the installer's, where
			// validate reads the installer's pods.
			if r.Namespace != "bench" && r.Namespace != names.ComponentsNamespace {
				t.Errorf("Role in %q", r.Namespace)
			}
		}
	}
	want := map[string]int{"ClusterRole": 2, "ClusterRoleBinding": 2, "Role": 2, "RoleBinding": 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if kinds["ServiceAccount"] != 0 {
		t.Error("a ServiceAccount is rendered for a user subject")
	}
	if !strings.Contains(out, "# ClusterRole tcpxogen-validate-bench-install-trainer:") {
		t.Errorf("the header does not name the install role:\n%.600s", out)
	}

	code, out, _ = render(t, "rbac", "--for", "discover")
	if code != cli.ExitOK || !strings.Contains(out, "namespace: "+names.ComponentsNamespace) || !strings.Contains(out, "networks") {
		t.Errorf("discover: exit %d\n%.400s", code, out)
	}
	for _, bad := range [][]string{
		{"rbac"},
		{"rbac", "--for", "extract"},
		{"rbac", "--for", "discover", "--install-trainer"},
		{"rbac", "--for", "validate", "--namespace", "Bad_NS"},
		{"rbac", "--for", "validate", "--user", "a", "--group", "b"},
		{"rbac", "--for", "validate", "--service-account", "nons"},
	} {
		if code, _, stderr := render(t, bad...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", bad, code, cli.ExitUsage, stderr)
		}
	}
}
