package access

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// Request is one API request as the authorizer sees it.
type Request struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

// Permission is the request in RBAC terms: "get pods/log in namespace ns",
// "list nodes (cluster-wide)".
func (r Request) Permission() string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	s := r.Verb + " " + qualified(r.Group, res)
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Namespace != "" {
		return s + " in namespace " + r.Namespace
	}
	return s + " (cluster-wide)"
}

func (r Request) policyRule() rbacv1.PolicyRule {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	pr := rbacv1.PolicyRule{Verbs: []string{r.Verb}, APIGroups: []string{r.Group}, Resources: []string{res}}
	if r.Name != "" {
		pr.ResourceNames = []string{r.Name}
	}
	return pr
}

// discovery are the non-resource paths client-go reads to map kinds to
// resources and to reach the server. Every authenticated user may read
// them (the bootstrap ClusterRoles system:discovery and
// system:public-info-viewer), so no list declares them and no role renders
// them.
var discovery = rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version", "/version/"}}

// ErrUndeclared is wrapped when a command makes a request its declared list
// does not hold: a bug in tcpxogen, refused before it reaches the server.
var ErrUndeclared = errors.New("request outside the command's declared permissions")

// rule finds the binding's rule that allows req, by RBAC's own rule
// comparison: a ClusterWide rule anywhere, an InNamespace rule only in its
// namespace (the bound one, unless the rule fixes another).
func (b Binding) rule(req Request) (boundRule, bool) {
	want := []rbacv1.PolicyRule{req.policyRule()}
	for _, r := range b.rules() {
		if r.Scope == InNamespace && req.Namespace != b.namespaceOf(r.Rule) {
			continue
		}
		if ok, _ := rbacvalidation.Covers([]rbacv1.PolicyRule{r.policyRule()}, want); ok {
			return r, true
		}
	}
	return boundRule{}, false
}

// Allows reports whether the binding declares req.
func (b Binding) Allows(req Request) bool {
	_, ok := b.rule(req)
	return ok
}

// Check returns an error wrapping ErrUndeclared when the binding does not
// declare req.
func (b Binding) Check(req Request) error {
	if b.Allows(req) {
		return nil
	}
	return fmt.Errorf("tcpxogen %s tried to %s, which its declared permissions (%s's list in tcpxogen's access package, rendered by `tcpxogen render rbac --for %s`) do not hold; this is a bug in tcpxogen, please report it: %w",
		b.List.Command, req.Permission(), b.List.Command, b.List.Command, ErrUndeclared)
}

// Guard holds one run's client to a binding and records what the API
// server refused.
type Guard struct {
	mu      sync.Mutex
	binding Binding
	denied  []denial
}

type denial struct {
	req  Request
	rule boundRule
}

// NewGuard guards a run bound as b.
func NewGuard(b Binding) *Guard { return &Guard{binding: b} }

// SetBinding rebinds the guard: to the namespace once the command knows it,
// or to an optional row once the command has decided to use it.
func (g *Guard) SetBinding(b Binding) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.binding = b
}

// Binding is what the guard allows now.
func (g *Guard) Binding() Binding {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.binding
}

// Wrap makes every request through cfg pass the guard: an undeclared
// request is refused (ErrUndeclared) without being sent, and a request the
// API server forbids is recorded for Explain.
func (g *Guard) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &guardedTransport{g: g, next: rt} })
}

var requestInfo = &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

type guardedTransport struct {
	g    *Guard
	next http.RoundTripper
}

func (t *guardedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b := t.g.Binding()
	info, err := requestInfo.NewRequestInfo(r)
	if err != nil {
		return nil, fmt.Errorf("tcpxogen %s: %s %s is not an API request its guard can read: %w", b.List.Command, r.Method, r.URL.Path, err)
	}
	if !info.IsResourceRequest {
		want := rbacv1.PolicyRule{Verbs: []string{info.Verb}, NonResourceURLs: []string{info.Path}}
		if ok, _ := rbacvalidation.Covers([]rbacv1.PolicyRule{discovery}, []rbacv1.PolicyRule{want}); !ok {
			return nil, fmt.Errorf("tcpxogen %s tried to %s %s, which is neither API discovery nor a declared permission; this is a bug in tcpxogen, please report it: %w", b.List.Command, info.Verb, info.Path, ErrUndeclared)
		}
		return t.next.RoundTrip(r)
	}
	req := Request{Verb: info.Verb, Group: info.APIGroup, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
	rule, ok := b.rule(req)
	if !ok {
		return nil, b.Check(req)
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusForbidden && authorizerRefused(resp, info.Verb) {
		t.g.record(req, rule)
	}
	return resp, err
}

// maxStatusBody bounds how much of a 403's body is read to tell who refused
// the request; an API server's Status is a few hundred bytes.
const maxStatusBody = 64 << 10

// authorizerRefused tells an authorization refusal, which a role can
// grant, from the other 403s the API server sends: admission refusals (a
// namespace being terminated, a webhook or policy that denies, a quota), for
// which suggesting RBAC would mislead. The authorizer's refusal is the one
// whose message is k8s.io/apiserver's forbiddenMessage (responsewriters):
// `User "NAME" cannot VERB resource ...` (or `path`). The body is read
// bounded and put back for the client.
func authorizerRefused(resp *http.Response, verb string) bool {
	if resp.Body == nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	// JSON or protobuf, whichever the client asked for (client-go's typed
	// clients ask for protobuf).
	var status metav1.Status
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(head, nil, &status); err != nil {
		return false
	}
	return authorizerMessage.MatchString(status.Message) && strings.Contains(status.Message, " cannot "+verb+" ")
}

var authorizerMessage = regexp.MustCompile(`User ".*" cannot [a-z]+ (resource|path) "`)

func (g *Guard) record(req Request, rule boundRule) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.ContainsFunc(g.denied, func(d denial) bool { return d.req == req }) {
		g.denied = append(g.denied, denial{req: req, rule: rule})
	}
}

// Denied returns the permissions the API server refused so far, in RBAC
// terms, in the order first refused.
func (g *Guard) Denied() []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, d := range g.denied {
		out = append(out, d.req.Permission())
	}
	return out
}

// DeniedError is a run's error together with what the API server refused
// during it, which is why it failed.
type DeniedError struct {
	Err error
	// Message names the missing permissions and the command granting them.
	Message string
}

func (e *DeniedError) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Err.Error() + "\n" + e.Message
}
func (e *DeniedError) Unwrap() error { return e.Err }

// Explain adds to err what the API server refused during the run, each
// refusal in RBAC terms with the rule of the command's role it needs and the
// `render rbac` command that grants it; err is returned as it is when
// nothing was refused or the run succeeded regardless. A nil Guard explains
// nothing.
func (g *Guard) Explain(err error) error {
	if g == nil {
		return err
	}
	g.mu.Lock()
	denied, b := slices.Clone(g.denied), g.binding
	g.mu.Unlock()
	if len(denied) == 0 || err == nil {
		return err
	}
	var lines []string
	rows := slices.Clone(b.Rows)
	for _, d := range denied {
		where := "its role"
		if d.rule.row != "" {
			where = "its " + d.rule.row + " role"
		}
		lines = append(lines, fmt.Sprintf("  %s: rule %q of %s, to %s", d.req.Permission(), d.rule.Permission(), where, d.rule.For))
	}
	cmd := "tcpxogen render rbac --for " + b.List.Command
	for _, r := range rows {
		cmd += " --" + r
	}
	cmd += " --namespace " + b.Namespace
	msg := fmt.Sprintf("the API server refused %d permission(s) tcpxogen %s needs; the identity it runs as lacks them (the role is missing a rule, or is not bound to it):\n%s\ngrant them with: %s | kubectl apply -f -",
		len(denied), b.List.Command, strings.Join(lines, "\n"), cmd)
	return &DeniedError{Err: err, Message: msg}
}
