package access

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Subject is who the rendered roles are bound to.
type Subject struct {
	// Kind is rbacv1.ServiceAccountKind, rbacv1.UserKind or
	// rbacv1.GroupKind.
	Kind string
	// Namespace is the service account's; empty for users and groups.
	Namespace, Name string
}

// DefaultSubject is the service account the roles are bound to when no
// subject is given: tcpxogen-COMMAND in the bound namespace.
func (b Binding) DefaultSubject() Subject {
	return Subject{Kind: rbacv1.ServiceAccountKind, Namespace: b.Namespace, Name: "tcpxogen-" + b.List.Command}
}

// ManagedBy labels every rendered object.
const ManagedBy = "tcpxogen"

// Rendered is a binding as RBAC objects, in apply order, and the header
// lines saying what each rule is for.
type Rendered struct {
	Objects []any
	Header  []string
}

// Render renders the binding as RBAC objects bound to subject: a
// ClusterRole and ClusterRoleBinding for the base row's ClusterWide rules,
// a Role and RoleBinding in the namespace for its InNamespace rules (and in
// each namespace a rule fixes, such as the installer's), and a
// ClusterRole and ClusterRoleBinding per optional row. A service account
// subject is rendered too, so that the output applies on its own. Names
// carry the namespace (tcpxogen-validate-NS), since rules name it and two
// namespaces' roles must not overwrite each other.
func (b Binding) Render(subject Subject) (Rendered, error) {
	if errs := validation.IsDNS1123Label(b.Namespace); len(errs) > 0 {
		return Rendered{}, fmt.Errorf("namespace %q: %s", b.Namespace, strings.Join(errs, "; "))
	}
	if subject.Name == "" {
		subject = b.DefaultSubject()
	}
	base := "tcpxogen-" + b.List.Command + "-" + b.Namespace
	labels := map[string]string{"app.kubernetes.io/managed-by": ManagedBy, "tcpxogen.dev/command": b.List.Command}
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)}
	}
	subj := rbacv1.Subject{Kind: subject.Kind, Name: subject.Name, Namespace: subject.Namespace}
	if subject.Kind != rbacv1.ServiceAccountKind {
		subj.APIGroup = rbacv1.GroupName
	}

	var r Rendered
	r.Header = []string{
		fmt.Sprintf("tcpxogen %s: the permissions it needs (tcpxogen render rbac --for %s%s --namespace %s), bound to %s %s",
			b.List.Command, b.List.Command, rowFlags(b.Rows), b.Namespace, subject.Kind, subjectName(subject)),
		fmt.Sprintf("namespaced rules are granted in %s: %s", b.Namespace, b.List.Namespace),
	}
	if subject.Kind == rbacv1.ServiceAccountKind {
		r.Objects = append(r.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(subject.Name, subject.Namespace),
		})
	}
	clusterRole := func(name string, rules []boundRule) {
		if len(rules) == 0 {
			return
		}
		cr := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"}, ObjectMeta: meta(name, "")}
		for _, rule := range rules {
			cr.Rules = append(cr.Rules, rule.policyRule())
		}
		crb := &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(name, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{subj},
		}
		r.Objects = append(r.Objects, cr, crb)
		r.Header = append(r.Header, "ClusterRole "+name+":")
		r.Header = append(r.Header, ruleLines(rules)...)
	}
	var cluster []boundRule
	// namespaced are the base row's InNamespace rules by namespace, the
	// bound namespace first, then any fixed ones in order.
	namespaced := map[string][]boundRule{}
	namespaces := []string{b.Namespace}
	byRow := map[string][]boundRule{}
	for _, rule := range b.rules() {
		switch {
		case rule.row != "":
			byRow[rule.row] = append(byRow[rule.row], rule)
		case rule.Scope == InNamespace:
			ns := b.namespaceOf(rule.Rule)
			if !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
			namespaced[ns] = append(namespaced[ns], rule)
		default:
			cluster = append(cluster, rule)
		}
	}
	slices.Sort(namespaces[1:])
	clusterRole(base, cluster)
	for _, ns := range namespaces {
		rules := namespaced[ns]
		if len(rules) == 0 {
			continue
		}
		role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"}, ObjectMeta: meta(base, ns)}
		for _, rule := range rules {
			role.Rules = append(role.Rules, rule.policyRule())
		}
		rb := &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: meta(base, ns),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: base},
			Subjects:   []rbacv1.Subject{subj},
		}
		r.Objects = append(r.Objects, role, rb)
		r.Header = append(r.Header, "Role "+ns+"/"+base+":")
		r.Header = append(r.Header, ruleLines(rules)...)
	}
	for _, name := range b.Rows {
		row, _ := b.List.Row(name)
		rules := byRow[name]
		for i := range rules {
			// An optional row is a ClusterRole of its own, whatever its
			// rules' scope: its namespaces may not exist before it runs.
			rules[i].Scope = ClusterWide
		}
		clusterRole(base+"-"+name, rules)
		r.Header = append(r.Header, "  (--"+name+": "+row.What+")")
	}
	return r, nil
}

func ruleLines(rules []boundRule) []string {
	var out []string
	for i, r := range rules {
		out = append(out, fmt.Sprintf("  %d. %s: %s", i+1, r.granted(), r.For))
	}
	return out
}

func rowFlags(rows []string) string {
	var s string
	for _, r := range rows {
		s += " --" + r
	}
	return s
}

func subjectName(s Subject) string {
	if s.Namespace != "" {
		return s.Namespace + "/" + s.Name
	}
	return s.Name
}
