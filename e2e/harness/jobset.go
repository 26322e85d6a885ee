package harness

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// jobSetDefaultingPath is where JobSet's webhook configuration sends
// JobSet creations for defaulting.
const jobSetDefaultingPath = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"

// jobSetDefaulter is JobSet v0.11.1's JobSet defaulting webhook
// (pkg/webhooks/jobset_webhook.go, Default), copied because that package
// does not compile against controller-runtime v0.23.3 (the signature of
// ctrl.NewWebhookManagedBy changed). Its validating webhook only guards
// exclusive placement and immutable fields; no scenario relies on it.
type jobSetDefaulter struct{}

const defaultRuleNameFmt = "failurePolicyRule%v"

func (jobSetDefaulter) Default(_ context.Context, obj runtime.Object) error {
	js, ok := obj.(*jobset.JobSet)
	if !ok {
		return fmt.Errorf("JobSet defaulter got %T", obj)
	}
	if js.Spec.SuccessPolicy == nil {
		js.Spec.SuccessPolicy = &jobset.SuccessPolicy{Operator: jobset.OperatorAll}
	}
	if js.Spec.StartupPolicy == nil {
		js.Spec.StartupPolicy = &jobset.StartupPolicy{StartupPolicyOrder: jobset.AnyOrder}
	}
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Template.Spec.CompletionMode == nil {
			js.Spec.ReplicatedJobs[i].Template.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}
		if js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.RestartPolicy == "" {
			js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}
	}
	if js.Spec.Network == nil {
		js.Spec.Network = &jobset.Network{}
	}
	if js.Spec.Network.EnableDNSHostnames == nil {
		js.Spec.Network.EnableDNSHostnames = ptr.To(true)
	}
	if js.Spec.Network.PublishNotReadyAddresses == nil {
		js.Spec.Network.PublishNotReadyAddresses = ptr.To(true)
	}
	if js.Spec.FailurePolicy != nil {
		for i := range js.Spec.FailurePolicy.Rules {
			rule := &js.Spec.FailurePolicy.Rules[i]
			if len(rule.Name) == 0 {
				rule.Name = fmt.Sprintf(defaultRuleNameFmt, i)
			}
		}
	}
	for i, policy := range js.Spec.VolumeClaimPolicies {
		if policy.RetentionPolicy == nil {
			js.Spec.VolumeClaimPolicies[i].RetentionPolicy = &jobset.VolumeRetentionPolicy{
				WhenDeleted: ptr.To(jobset.RetentionPolicyDelete),
			}
		}
	}
	return nil
}
