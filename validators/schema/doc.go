// Package schema checks Kubernetes manifests the way the API server would admit them, using
// the API server's own validation code in-process, so that a manifest tcpxogen emits is known
// to survive a real cluster unchanged.
//
// The failure it exists to catch is the silent one: a custom resource field the CRD schema does
// not know is pruned by the API server on a plain create or apply, with no error, and the wiring
// it carried is simply gone. Every such field is a [FindingPruned] finding; a manifest is only
// [Report.OK] with zero findings of any kind.
//
// # Custom resources
//
// For kinds defined by the loaded CRDs (normally the Kubeflow Trainer CRDs of the trainer module
// this binary links, see [NewTrainer]) each object goes through the same calls, in the same order,
// as a create request with fieldValidation=Strict in k8s.io/apiextensions-apiserver:
//
//  1. decoding: root metadata is strictly decoded into ObjectMeta, the object is pruned against
//     the structural schema, non-nullable nulls are dropped, embedded ObjectMeta is coerced. Every
//     field dropped here is a "pruned" finding; these are exactly the fields Strict rejects.
//  2. CRD defaulting (structural defaulting, after pruning of the defaults themselves).
//  3. create preparation: status is dropped when the CRD has a status subresource, and a
//     namespace on a cluster-scoped object is cleared. The server does both silently, so both
//     are reported as "pruned" too (Strict does not reject these two).
//  4. validation: ObjectMeta, the OpenAPI schema, embedded ObjectMeta, list-type sets and maps,
//     and the CEL rules (x-kubernetes-validations). As in the server, CEL is skipped when a
//     type, required, enum, too-long or too-many error exists, and a note saying so is added.
//
// A namespaced object without a namespace is validated as if created in "default", as kubectl
// would send it; a generateName is expanded with a fixed suffix. Neither appears in
// [Report.Defaulted], which is the object as submitted plus the CRD defaults, as the server would
// store it.
//
// # Trainer admission webhooks
//
// After schema validation, objects of trainer.kubeflow.org/v1alpha1 kinds are converted to the
// trainer Go types and passed to the validating webhooks compiled into the linked trainer module
// (github.com/kubeflow/trainer/v2/pkg/webhooks), exactly as the trainer controller's webhook
// server would call them. They run on the defaulted object because they read defaulted fields:
// on a raw manifest a replicated job's unset replicas reads as 0 and is misreported. Webhooks run
// only when schema validation found nothing invalid, as in the server, where a request the
// schema rejects never reaches admission.
//
// TrainJob admission is not run here: the trainer's TrainJob webhook validates a TrainJob against
// its referenced runtime through the full runtime framework (pkg/runtime/core), which keeps
// package-global state and needs the runtime object. That check belongs with realization, which
// runs the framework anyway; TrainJob reports say so in [Report.Unchecked]. The TrainJob mutating
// webhook (it stamps runtimePatches[].time with the current time) is not applied either.
//
// # Built-in kinds
//
// Objects of built-in kinds (for example apps/v1 DaemonSet) are not CRDs, and linking
// k8s.io/kubernetes for their server-side validation is far too heavy. They are instead strictly
// decoded into their k8s.io/api Go type, as the API server's strict decoder does: an unknown or
// misplaced field is a "pruned" finding at its path, a value of the wrong type is "invalid".
// Semantic validation and built-in defaulting are not run; reports say so in [Report.Unchecked]
// and carry no Defaulted object.
//
// Anything else (a kind neither loaded nor built in, an unserved version, a document without
// apiVersion or kind) is an "unknown-kind" finding, never a silent pass.
package schema
