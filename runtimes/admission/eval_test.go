package admission

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// evaluator runs a policy the way the API server's ValidatingAdmissionPolicy
// plugin does (validating.compilePolicy, in the plugin's own packages: its
// composition environment with the base CEL libraries of this API server
// version, its variable, condition and message compilers, its validator).
type evaluator struct {
	policy    *admissionv1.ValidatingAdmissionPolicy
	validator validating.Validator
}

func compile(t testing.TB, p *admissionv1.ValidatingAdmissionPolicy) evaluator {
	t.Helper()
	env, err := cel.NewCompositionEnv(cel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	opt := cel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	exprOpt := cel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil}
	c := cel.NewCompositedCompilerFromTemplate(env)
	var vars []cel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	c.CompileAndStoreVariables(vars, opt, environment.StoredExpressions)
	var conds, msgs []cel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		conds = append(conds, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		var m cel.ExpressionAccessor
		if v.MessageExpression != "" {
			m = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
		msgs = append(msgs, m)
	}
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		var mcs []cel.ExpressionAccessor
		for i := range p.Spec.MatchConditions {
			mcs = append(mcs, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(mcs, opt, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	// Compile errors surface as evaluation errors: fail on any, for every
	// expression, before a case can pass by erroring.
	ev := evaluator{p, validating.NewValidator(c.CompileCondition(conds, opt, environment.StoredExpressions), matcher, c.CompileCondition(nil, opt, environment.StoredExpressions), c.CompileCondition(msgs, exprOpt, environment.StoredExpressions), p.Spec.FailurePolicy)}
	return ev
}

var trainJobs = schema.GroupVersionResource{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Resource: "trainjobs"}

// decide evaluates the policy on the creation of obj and returns the
// messages of its failed validations; it fails the test on an evaluation
// error (a policy that errors is not a verdict).
func (e evaluator) decide(t testing.TB, obj *unstructured.Unstructured) []string {
	t.Helper()
	gvk := trainer.GroupVersion.WithKind(trainer.TrainJobKind)
	attrs := admission.NewAttributesRecord(obj, nil, gvk, obj.GetNamespace(), obj.GetName(), trainJobs, "", admission.Create, nil, false, nil)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedObject: obj, VersionedKind: gvk}
	res := e.validator.Validate(context.Background(), trainJobs, va, nil, nil, celconfig.RuntimeCELCostBudget, nil)
	var out []string
	for i, d := range res.Decisions {
		switch d.Evaluation {
		case validating.EvalError:
			t.Fatalf("policy %s validation %d errors: %s", e.policy.Name, i, d.Message)
		case validating.EvalDeny:
			if d.Message == "" {
				t.Fatalf("policy %s validation %d fails with no message", e.policy.Name, i)
			}
			out = append(out, d.Message)
		}
	}
	return out
}
