package access

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/tcpxogen/tcpxogen/internal/names"
)

func bind(t *testing.T, l List, ns string, rows ...string) Binding {
	t.Helper()
	b, err := l.Bind(ns, rows...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The binding allows what RBAC would: a namespaced rule only in the bound
// namespace (or the one it fixes), a named rule only for its names (TheNamespace replaced), a
// subresource only when named, a verb only when listed.
func TestBindingAllowsAsRBACDoes(t *testing.T) {
	b := bind(t, Validate, "bench")
	for _, c := range []struct {
		req  Request
		want bool
	}{
		{Request{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "bench", Name: "l-0"}, true},
		{Request{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "other", Name: "l-0"}, false},
		{Request{Verb: "get", Resource: "pods", Namespace: "bench", Name: "l-0"}, false},
		{Request{Verb: "get", Resource: "pods", Subresource: "exec", Namespace: "bench", Name: "l-0"}, false},
		{Request{Verb: "list", Resource: "pods", Namespace: "bench"}, true},
		// The installer's pods, in the namespace the rule fixes.
		{Request{Verb: "list", Resource: "pods", Namespace: "kube-system"}, true},
		{Request{Verb: "list", Resource: "pods", Namespace: "other"}, false},
		{Request{Verb: "list", Resource: "pods"}, false},
		{Request{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "kube-system", Name: "i-0"}, false},
		{Request{Verb: "list", Resource: "nodes"}, true},
		{Request{Verb: "get", Resource: "nodes", Name: "n"}, false},
		{Request{Verb: "list", Group: "apps", Resource: "deployments"}, true},
		{Request{Verb: "list", Group: "apps", Resource: "deployments", Namespace: "kubeflow-system"}, true},
		{Request{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "kubeflow-system"}, false},
		{Request{Verb: "get", Resource: "namespaces", Name: "bench"}, true},
		{Request{Verb: "get", Resource: "namespaces", Name: "kube-system"}, false},
		{Request{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "trainjobs.trainer.kubeflow.org"}, true},
		{Request{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "networks.networking.gke.io"}, false},
		{Request{Verb: "create", Group: "trainer.kubeflow.org", Resource: "trainjobs", Namespace: "bench"}, true},
		{Request{Verb: "create", Group: "trainer.kubeflow.org", Resource: "clustertrainingruntimes"}, false},
		{Request{Verb: "list", Resource: "secrets", Namespace: "bench"}, false},
	} {
		if got := b.Allows(c.req); got != c.want {
			t.Errorf("%s: allowed %v, want %v", c.req.Permission(), got, c.want)
		}
	}
	install := bind(t, Validate, "bench", InstallTrainer)
	for _, req := range []Request{
		{Verb: "create", Group: "trainer.kubeflow.org", Resource: "clustertrainingruntimes"},
		{Verb: "delete", Group: "trainer.kubeflow.org", Resource: "clustertrainingruntimes", Name: names.Runtime},
		{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "kubeflow-system"},
	} {
		if !install.Allows(req) {
			t.Errorf("the install row does not allow %s", req.Permission())
		}
	}
	err := b.Check(Request{Verb: "list", Resource: "secrets", Namespace: "bench"})
	if !errors.Is(err, ErrUndeclared) || !strings.Contains(err.Error(), "list secrets in namespace bench") {
		t.Errorf("Check of an undeclared request: %v", err)
	}
	if _, err := Validate.Bind("bench", "install-everything"); err == nil || !strings.Contains(err.Error(), InstallTrainer) {
		t.Errorf("binding an unknown row: %v", err)
	}
}

// Every rule of every list is rendered exactly once, in the role its scope
// and row say, bound to the subject; the namespace is substituted.
func TestRenderHoldsEveryRule(t *testing.T) {
	for name, l := range Lists() {
		t.Run(name, func(t *testing.T) {
			var rows []string
			for _, r := range l.Rows {
				rows = append(rows, r.Name)
			}
			b := bind(t, l, "bench", rows...)
			r, err := b.Render(Subject{})
			if err != nil {
				t.Fatal(err)
			}
			type granted struct {
				kind, name, namespace string
				rule                  rbacv1.PolicyRule
			}
			var got []granted
			bound := map[string]bool{}
			for _, o := range r.Objects {
				switch o := o.(type) {
				case *rbacv1.ClusterRole:
					for _, pr := range o.Rules {
						got = append(got, granted{"ClusterRole", o.Name, "", pr})
					}
				case *rbacv1.Role:
					for _, pr := range o.Rules {
						got = append(got, granted{"Role", o.Name, o.Namespace, pr})
					}
				case *rbacv1.ClusterRoleBinding:
					bound["ClusterRole "+o.RoleRef.Name] = slices.Contains(o.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: "bench", Name: "tcpxogen-" + l.Command})
				case *rbacv1.RoleBinding:
					bound["Role "+o.Namespace+"/"+o.RoleRef.Name] = slices.Contains(o.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: "bench", Name: "tcpxogen-" + l.Command})
				case *corev1.ServiceAccount:
					if o.Name != "tcpxogen-"+l.Command || o.Namespace != "bench" {
						t.Errorf("ServiceAccount %s/%s", o.Namespace, o.Name)
					}
				default:
					t.Errorf("unexpected object %T", o)
				}
			}
			base := "tcpxogen-" + l.Command + "-bench"
			var want []granted
			add := func(kind, role string, rules []Rule) {
				for _, rule := range rules {
					pr := rbacv1.PolicyRule{Verbs: rule.Verbs, APIGroups: []string{rule.Group}, Resources: []string{rule.Resource}}
					for _, n := range rule.ResourceNames {
						if n == TheNamespace {
							n = "bench"
						}
						pr.ResourceNames = append(pr.ResourceNames, n)
					}
					if rule.Scope == InNamespace && kind == "ClusterRole" && role == base {
						continue
					}
					if rule.Scope == ClusterWide && kind == "Role" {
						continue
					}
					ns := ""
					if kind == "Role" {
						// The bound namespace, unless the rule fixes one.
						ns = "bench"
						if rule.Namespace != "" {
							ns = rule.Namespace
						}
					}
					want = append(want, granted{kind, role, ns, pr})
				}
			}
			add("ClusterRole", base, l.Rules)
			add("Role", base, l.Rules)
			for _, row := range l.Rows {
				add("ClusterRole", base+"-"+row.Name, row.Rules)
			}
			// A role's rules keep the list's order; roles in other
			// namespaces follow the bound one's.
			byNamespace := func(a, b granted) int { return strings.Compare(a.namespace, b.namespace) }
			slices.SortStableFunc(want, byNamespace)
			slices.SortStableFunc(got, byNamespace)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(granted{})); diff != "" {
				t.Errorf("rendered rules (-declared +rendered):\n%s", diff)
			}
			for _, g := range got {
				key := g.kind + " " + g.name
				if g.kind == "Role" {
					key = g.kind + " " + g.namespace + "/" + g.name
				}
				if !bound[key] {
					t.Errorf("%s %s is not bound to the service account", g.kind, g.name)
				}
			}
			if !strings.Contains(strings.Join(r.Header, "\n"), l.Rules[0].For) {
				t.Errorf("the header does not say what the rules are for:\n%s", strings.Join(r.Header, "\n"))
			}
		})
	}
	if _, err := bind(t, Validate, "Not_A_Namespace").Render(Subject{}); err == nil {
		t.Error("rendered roles for an invalid namespace")
	}
}

// fakeServer answers every request 200 with an empty object, except the
// forbidden paths, which get the API server's Forbidden Status; it counts
// what reaches it.
type fakeServer struct {
	// forbidden maps a path to what the authorizer says the identity cannot
	// do there (`get resource "pods/log" in API group "" ...`).
	forbidden map[string]string
	// admissionRefused get the 403 an admission plugin answers with (the
	// namespace lifecycle's, k8s.io/apiserver plugin/pkg/admission/namespace/lifecycle).
	admissionRefused map[string]bool
	mu               sync.Mutex
	seen             []string
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if cannot, ok := s.forbidden[r.URL.Path]; ok {
		// What the authorizer answers (k8s.io/apiserver
		// responsewriters.ForbiddenStatusError), in the encoding the client
		// asked for: client-go's typed clients ask for protobuf.
		status := apierrors.NewForbidden(schema.GroupResource{Resource: "x"}, "",
			errors.New(`User "system:serviceaccount:bench:x" cannot `+cannot)).Status()
		status.APIVersion, status.Kind = "v1", "Status"
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		if !strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) || !ok {
			info, _ = runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		}
		w.Header().Set("Content-Type", info.MediaType)
		w.WriteHeader(http.StatusForbidden)
		if err := info.Serializer.Encode(&status, w); err != nil {
			panic(err)
		}
		return
	}
	if s.admissionRefused[r.URL.Path] {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"trainingruntimes.trainer.kubeflow.org \"b\" is forbidden: unable to create new content in namespace bench because it is being terminated","details":{"causes":[{"reason":"NamespaceTerminating","message":"namespace bench is being terminated","field":"metadata.namespace"}]}}`)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/log"):
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "log")
	case strings.HasSuffix(r.URL.Path, "/pods"):
		io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	default:
		io.WriteString(w, `{}`)
	}
}

// The guard, on a real client-go client: a declared request goes through,
// an undeclared one never reaches the server, and a declared one the
// server forbids is explained in RBAC terms with the command that grants
// it, while the error stays the API server's Forbidden.
func TestGuardOnAClient(t *testing.T) {
	srv := &fakeServer{forbidden: map[string]string{
		"/api/v1/namespaces/bench/pods/l-0/log": `get resource "pods/log" in API group "" in the namespace "bench"`,
		"/api/v1/nodes":                         `list resource "nodes" in API group "" at the cluster scope`,
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g := NewGuard(bind(t, Validate, "bench"))
	cfg := &rest.Config{Host: ts.URL}
	g.Wrap(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	if _, err := kube.CoreV1().Pods("bench").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("a declared request: %v", err)
	}
	_, err = kube.CoreV1().Secrets("bench").List(ctx, metav1.ListOptions{})
	if !errors.Is(err, ErrUndeclared) {
		t.Errorf("an undeclared request: %v", err)
	}
	for _, s := range srv.seen {
		if strings.Contains(s, "secrets") {
			t.Errorf("the undeclared request reached the server: %s", s)
		}
	}

	_, err = kube.CoreV1().Pods("bench").GetLogs("l-0", &corev1.PodLogOptions{}).DoRaw(ctx)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the forbidden log read: %v", err)
	}
	if got := g.Denied(); !slices.Equal(got, []string{"get pods/log l-0 in namespace bench"}) {
		t.Errorf("denied %q", got)
	}
	// The typed clients read their answers as protobuf: the refusal is
	// recognised in that encoding too.
	if _, nerr := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(nerr) {
		t.Fatalf("the forbidden node list: %v", nerr)
	}
	if got := g.Denied(); !slices.Equal(got, []string{"get pods/log l-0 in namespace bench", "list nodes (cluster-wide)"}) {
		t.Errorf("denied %q", got)
	}
	explained := g.Explain(err)
	if !apierrors.IsForbidden(explained) {
		t.Error("the explained error is no longer the API server's Forbidden")
	}
	for _, want := range []string{
		"get pods/log l-0 in namespace bench",
		`rule "get pods/log" of its role, to read the launcher's log`,
		"tcpxogen render rbac --for validate --namespace bench | kubectl apply -f -",
	} {
		if !strings.Contains(explained.Error(), want) {
			t.Errorf("the explanation lacks %q:\n%s", want, explained)
		}
	}
	if err := g.Explain(nil); err != nil {
		t.Errorf("a run that succeeded is explained as %v", err)
	}
	var none *Guard
	if err := none.Explain(io.EOF); err != io.EOF {
		t.Errorf("a nil guard changed the error: %v", err)
	}
}

// A refusal of an install-row rule points at the --install-trainer role.
func TestExplainNamesTheRow(t *testing.T) {
	g := NewGuard(bind(t, Validate, "bench", InstallTrainer))
	req := Request{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	rule, ok := g.Binding().rule(req)
	if !ok {
		t.Fatal("the install row does not declare creating webhooks")
	}
	g.record(req, rule)
	msg := g.Explain(errors.New("boom")).Error()
	for _, want := range []string{
		"create validatingwebhookconfigurations.admissionregistration.k8s.io (cluster-wide)",
		"of its install-trainer role",
		"tcpxogen render rbac --for validate --install-trainer --namespace bench",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the explanation lacks %q:\n%s", want, msg)
		}
	}
}

// A 403 that is not the authorizer's (here the namespace lifecycle
// admission plugin's, for a namespace being deleted) is not a missing
// permission: the guard does not explain it as one, and the client still
// gets the server's whole answer.
func TestGuardIgnoresAdmissionRefusals(t *testing.T) {
	path := "/apis/trainer.kubeflow.org/v1alpha1/namespaces/bench/trainingruntimes"
	srv := &fakeServer{admissionRefused: map[string]bool{path: true}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g := NewGuard(bind(t, Validate, "bench"))
	cfg := &rest.Config{Host: ts.URL}
	g.Wrap(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime", "metadata": map[string]any{"name": "b"}}}
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainingruntimes"}).Namespace("bench").Create(context.Background(), obj, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "being terminated") {
		t.Fatalf("the refused create: %v; want the server's own Forbidden, body intact", err)
	}
	if got := g.Denied(); len(got) != 0 {
		t.Errorf("an admission refusal recorded as a missing permission: %q", got)
	}
	if explained := g.Explain(err); explained != err {
		t.Errorf("an admission refusal explained as RBAC:\n%v", explained)
	}
}

// The commands whose --help says "Read-only" are granted no verb that
// writes, and the one-line summary their help prints names each rule, where
// a namespaced one is granted, and the objects a rule is narrowed to.
func TestReadOnlyListsNeedOnlyReads(t *testing.T) {
	reads := []string{"get", "list", "watch"}
	for _, l := range []List{Discover, CheckCluster} {
		t.Run(l.Command, func(t *testing.T) {
			if len(l.Rows) > 0 {
				t.Errorf("optional rows %s: a read-only command's help prints only its base row", rowNames(l))
			}
			needs := strings.Split(l.Needs(), "; ")
			if len(needs) != len(l.Rules) {
				t.Fatalf("Needs() = %q: %d parts for %d rules", l.Needs(), len(needs), len(l.Rules))
			}
			for i, r := range l.Rules {
				for _, v := range r.Verbs {
					if !slices.Contains(reads, v) {
						t.Errorf("rule %s: verb %q writes", r.Permission(), v)
					}
				}
				if !strings.HasPrefix(needs[i], r.Permission()) {
					t.Errorf("part %d %q does not name %s", i, needs[i], r.Permission())
				}
				for _, name := range r.ResourceNames {
					if !strings.Contains(needs[i], name) {
						t.Errorf("part %q does not name the object %s it is narrowed to", needs[i], name)
					}
				}
				if in := strings.Contains(needs[i], " in "); in != (r.Scope == InNamespace) {
					t.Errorf("part %q: says a namespace %v, rule scope namespaced %v", needs[i], in, r.Scope == InNamespace)
				}
			}
		})
	}
}
