// Package access owns what each tcpxogen command that talks to a cluster may
// do there: one declared permission list per command (API group, resource
// with its subresource, verbs, cluster-wide or in one namespace), the guard
// that holds the command's client to that list (a request outside it is a
// bug in tcpxogen, refused before it is sent) and names, in RBAC terms, every
// permission the API server refused, and the renderer of the ClusterRole,
// Role and bindings `tcpxogen render rbac` prints from the same list, so the
// code and the role cannot drift. It does not decide what a command reads
// or writes: the commands' libraries do, and their tests hold the lists to
// the calls they make.
package access

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Scope says where a rule is granted.
type Scope int

const (
	// ClusterWide rules are granted by a ClusterRole and a
	// ClusterRoleBinding: cluster-scoped objects, or a namespaced resource
	// read in every namespace.
	ClusterWide Scope = iota
	// InNamespace rules are granted by a Role and a RoleBinding in the one
	// namespace the command is pointed at (List.Namespace says which).
	InNamespace
)

// TheNamespace stands, in a rule's ResourceNames, for the namespace the list
// is bound to: validate reads exactly the namespace it runs in.
const TheNamespace = "$NAMESPACE"

// Rule is one RBAC rule of a command, with the reason it needs it.
type Rule struct {
	Verbs []string
	// Group is the API group; "" is the core group.
	Group string
	// Resource is the resource, with its subresource after a slash
	// ("pods/log"), as RBAC names it.
	Resource string
	// ResourceNames narrows get and delete to these objects (RBAC cannot
	// narrow list, watch or create by name). TheNamespace is replaced by
	// the bound namespace.
	ResourceNames []string
	Scope         Scope
	// Namespace fixes an InNamespace rule to one namespace instead of the
	// bound one: validate reads the NCCL plugin installer's pods where the
	// installer runs, whatever namespace the benchmark runs in.
	Namespace string
	// For says what the command does with it, for the rendered role's
	// header and the message when it is refused.
	For string
}

// Permission is the rule in RBAC terms: "get pods/log",
// "create trainjobs.trainer.kubeflow.org".
func (r Rule) Permission() string {
	return strings.Join(r.Verbs, ",") + " " + qualified(r.Group, r.Resource)
}

// granted is the permission with the objects it is narrowed to: "get
// clustertrainingruntimes.trainer.kubeflow.org torch-distributed-tcpxo".
func (r Rule) granted() string {
	if len(r.ResourceNames) == 0 {
		return r.Permission()
	}
	return r.Permission() + " " + strings.Join(r.ResourceNames, ",")
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	res, sub, hasSub := strings.Cut(resource, "/")
	if hasSub {
		return res + "." + group + "/" + sub
	}
	return res + "." + group
}

// List is one command's declared permissions. Rows are alternatives a user
// asks for: the base row always, and rows such as "install-trainer" only
// when the command is to be allowed what they cover.
type List struct {
	// Command is the command's name as `render rbac --for` takes it.
	Command string
	// Namespace is what the InNamespace rules' namespace is, for messages
	// and flag help: "the namespace the benchmark runs in (--namespace)".
	Namespace string
	// DefaultNamespace is the namespace rendered when none is given.
	DefaultNamespace string
	// Rules are the base row.
	Rules []Rule
	// Rows are the optional rows, by name (render rbac --NAME).
	Rows []Row
}

// Row is an optional set of rules of a command, granted by its own
// ClusterRole so that it can be bound, and removed, on its own.
type Row struct {
	Name  string // "install-trainer"
	What  string // what a user asks for with it
	Rules []Rule
}

// Row returns the named row.
func (l List) Row(name string) (Row, bool) {
	i := slices.IndexFunc(l.Rows, func(r Row) bool { return r.Name == name })
	if i < 0 {
		return Row{}, false
	}
	return l.Rows[i], true
}

// Needs is the base row in one line, for a read-only command's --help, as
// bound to the default namespace: "list nodes; list pods in kube-system
// (--namespace); get clustertrainingruntimes.trainer.kubeflow.org
// torch-distributed-tcpxo". `render rbac` prints the same rules as a role.
func (l List) Needs() string {
	b := Binding{List: l, Namespace: l.DefaultNamespace}
	var parts []string
	for _, r := range b.rules() {
		p := r.granted()
		if r.Scope == InNamespace {
			p += " in " + b.namespaceOf(r.Rule)
			if r.Namespace == "" {
				p += " (--namespace)"
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Binding is a list bound to one namespace with some of its rows: what one
// run of the command may do.
type Binding struct {
	List      List
	Namespace string
	// Rows are the optional rows granted, by name.
	Rows []string
}

// Bind binds the list to a namespace with the named rows.
func (l List) Bind(namespace string, rows ...string) (Binding, error) {
	if namespace == "" {
		namespace = l.DefaultNamespace
	}
	for _, r := range rows {
		if _, ok := l.Row(r); !ok {
			return Binding{}, fmt.Errorf("%s has no permission row %q (it has %s)", l.Command, r, rowNames(l))
		}
	}
	return Binding{List: l, Namespace: namespace, Rows: rows}, nil
}

func rowNames(l List) string {
	if len(l.Rows) == 0 {
		return "none"
	}
	var names []string
	for _, r := range l.Rows {
		names = append(names, r.Name)
	}
	return strings.Join(names, ", ")
}

// boundRule is a rule of a binding, with the row it comes from ("" for the
// base row).
type boundRule struct {
	Rule
	row string
}

// namespaceOf is where an InNamespace rule is granted: its fixed
// namespace, or the bound one.
func (b Binding) namespaceOf(r Rule) string {
	if r.Namespace != "" {
		return r.Namespace
	}
	return b.Namespace
}

// rules returns the binding's rules with TheNamespace replaced.
func (b Binding) rules() []boundRule {
	var out []boundRule
	add := func(row string, rs []Rule) {
		for _, r := range rs {
			r.ResourceNames = slices.Clone(r.ResourceNames)
			for i, n := range r.ResourceNames {
				if n == TheNamespace {
					r.ResourceNames[i] = b.Namespace
				}
			}
			out = append(out, boundRule{Rule: r, row: row})
		}
	}
	add("", b.List.Rules)
	for _, name := range b.Rows {
		row, _ := b.List.Row(name)
		add(name, row.Rules)
	}
	return out
}

// policyRule is the rule as RBAC stores it.
func (r Rule) policyRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		Verbs:         slices.Clone(r.Verbs),
		APIGroups:     []string{r.Group},
		Resources:     []string{r.Resource},
		ResourceNames: slices.Clone(r.ResourceNames),
	}
}

// Lists are the declared lists, by command.
func Lists() map[string]List {
	return map[string]List{
		Validate.Command:     Validate,
		Discover.Command:     Discover,
		CheckCluster.Command: CheckCluster,
	}
}
