package access

import (
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
)

// The API groups the lists name.
const (
	groupCore        = ""
	groupApps        = "apps"
	groupRBAC        = "rbac.authorization.k8s.io"
	groupCRDs        = "apiextensions.k8s.io"
	groupAdmission   = "admissionregistration.k8s.io"
	groupTrainer     = "trainer.kubeflow.org"
	groupGKENetworks = "networking.gke.io"
	groupResource    = "resource.k8s.io"
)

// dranet are the reads that tell a managed DRANET pool by what its driver
// publishes (validators/cluster ReadDRANET): the DeviceClass GKE creates for
// it, whose selectors name the driver, and the ResourceSlices, in which the
// driver lists each node's devices.
var dranet = []Rule{
	{Verbs: []string{"get"}, Group: groupResource, Resource: "deviceclasses", ResourceNames: []string{fabric.DRANETDeviceClass}, Scope: ClusterWide,
		For: "read managed DRANET's DeviceClass, whose selectors name its driver"},
	{Verbs: []string{"list"}, Group: groupResource, Resource: "resourceslices", Scope: ClusterWide,
		For: "find the target nodes DRANET's driver publishes devices on, which no multi-network runtime may use"},
}

// trainerCRDs are the CRDs validate reads by name to tell whether Kubeflow
// Trainer is installed (lifecycle's trainer parts) and whose schema it
// defaults the rendered runtime with.
var trainerCRDs = []string{
	"trainjobs.trainer.kubeflow.org",
	"trainingruntimes.trainer.kubeflow.org",
	"clustertrainingruntimes.trainer.kubeflow.org",
	"jobsets.jobset.x-k8s.io",
}

// InstallTrainer is validate's row for the trainer lifecycle's install
// policy (the recipe does not declare Kubeflow Trainer and the cluster has
// none): validate then creates and deletes the pinned trainer's every kind.
const InstallTrainer = "install-trainer"

// Validate is `tcpxogen validate`. Its base row is every run's: the
// preflight reads (trainer, GPU pool and check cluster's checks, namespace,
// shipped runtime) and the
// benchmark's objects in --namespace. The install-trainer row is only for
// the install policy; it creates ClusterRoles and webhooks, so binding it
// is as good as cluster-admin, which is why it is a role of its own. Every
// kind validate creates it may also get: a create whose answer is lost (a
// timeout under load) is settled by reading the object back, so the cleanup
// record has no gap (lifecycle's ErrUnconfirmed).
var Validate = List{
	Command:          "validate",
	Namespace:        "the namespace the benchmark runs in (validate --namespace)",
	DefaultNamespace: "default",
	Rules: []Rule{
		{Verbs: []string{"get"}, Group: groupCRDs, Resource: "customresourcedefinitions", ResourceNames: trainerCRDs, Scope: ClusterWide,
			For: "tell whether Kubeflow Trainer is installed, and default the rendered runtime with the cluster's ClusterTrainingRuntime schema"},
		{Verbs: []string{"list"}, Group: groupApps, Resource: "deployments", Scope: ClusterWide,
			For: "find the trainer's and JobSet's controller Deployments, in whatever namespace they run"},
		{Verbs: []string{"list"}, Group: groupCore, Resource: "nodes", Scope: ClusterWide,
			For: "check the GPU pool is one homogeneous pool of the recipe's machine type (A3 Mega; for gIB A3 Ultra or A4) on the recipe's networks, and each node's GPU-NIC topology"},
		dranet[0], dranet[1],
		{Verbs: []string{"list"}, Group: groupGKENetworks, Resource: "networks", Scope: ClusterWide,
			For: "check the recipe's GPU-NIC Networks are Ready Device networks (as check cluster does)"},
		{Verbs: []string{"list"}, Group: groupGKENetworks, Resource: "gkenetworkparamsets", Scope: ClusterWide,
			For: "check each GPU-NIC Network's GKENetworkParamSet is Ready (as check cluster does)"},
		{Verbs: []string{"list"}, Group: groupCore, Resource: "pods", Scope: InNamespace, Namespace: names.ComponentsNamespace,
			For: "check the NCCL plugin installer's pod on each GPU node (nccl-tcpxo-installer; for gIB nccl-rdma-installer) runs the pinned installer (as check cluster does)"},
		{Verbs: []string{"get"}, Group: groupCore, Resource: "namespaces", ResourceNames: []string{TheNamespace}, Scope: ClusterWide,
			For: "check the benchmark's namespace exists"},
		{Verbs: []string{"get"}, Group: groupTrainer, Resource: "clustertrainingruntimes", ResourceNames: shippedRuntimes(), Scope: ClusterWide,
			For: "read the deployed runtime of the recipe's fabric and machine type (" + strings.Join(shippedRuntimes(), ", ") + ") the benchmark is derived from"},
		{Verbs: []string{"create", "get", "delete"}, Group: groupTrainer, Resource: "trainingruntimes", Scope: InNamespace,
			For: "create the derived benchmark runtime, read it back when a create gets no answer, and delete it afterwards"},
		{Verbs: []string{"create", "get", "delete"}, Group: groupTrainer, Resource: "trainjobs", Scope: InNamespace,
			For: "create the benchmark TrainJob, follow its status, and delete it afterwards"},
		{Verbs: []string{"list"}, Group: groupCore, Resource: "pods", Scope: InNamespace,
			For: "find the benchmark's launcher and worker pods, and check the workers carried the wiring"},
		{Verbs: []string{"get"}, Group: groupCore, Resource: "pods/log", Scope: InNamespace,
			For: "read the launcher's log, the nccl-tests output that is judged"},
	},
	Rows: []Row{{
		Name: InstallTrainer,
		What: "install the pinned Kubeflow Trainer for the run and tear it down (the recipe does not declare it and the cluster has none): CRDs, webhooks, cluster roles; as powerful as cluster-admin",
		Rules: []Rule{
			{Verbs: []string{"create"}, Group: groupTrainer, Resource: "clustertrainingruntimes", Scope: ClusterWide,
				For: "apply the shipped runtime as the recipe renders it on the trainer just installed"},
			{Verbs: []string{"get", "delete"}, Group: groupTrainer, Resource: "clustertrainingruntimes", ResourceNames: shippedRuntimes(), Scope: ClusterWide,
				For: "delete the shipped runtime it applied (reading it back first when its create got no answer)"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCore, Resource: "namespaces", Scope: ClusterWide,
				For: "create and delete the trainer's namespace"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCRDs, Resource: "customresourcedefinitions", Scope: ClusterWide,
				For: "create and delete the trainer's and JobSet's CRDs"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupAdmission, Resource: "mutatingwebhookconfigurations", Scope: ClusterWide,
				For: "create and delete the trainer's and JobSet's mutating webhooks"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupAdmission, Resource: "validatingwebhookconfigurations", Scope: ClusterWide,
				For: "create and delete the trainer's and JobSet's validating webhooks"},
			{Verbs: []string{"create", "get", "delete", "escalate", "bind"}, Group: groupRBAC, Resource: "clusterroles", Scope: ClusterWide,
				For: "create and delete the controllers' ClusterRoles, which grant what validate itself does not hold (escalate) and are bound (bind)"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupRBAC, Resource: "clusterrolebindings", Scope: ClusterWide,
				For: "bind the controllers' ClusterRoles to their service accounts"},
			{Verbs: []string{"create", "get", "delete", "escalate", "bind"}, Group: groupRBAC, Resource: "roles", Scope: ClusterWide,
				For: "create and delete the controllers' Roles in the trainer's namespace (which does not exist before the install, so no Role there can grant this)"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupRBAC, Resource: "rolebindings", Scope: ClusterWide,
				For: "bind the controllers' Roles"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCore, Resource: "serviceaccounts", Scope: ClusterWide,
				For: "create and delete the controllers' service accounts"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCore, Resource: "services", Scope: ClusterWide,
				For: "create and delete the controllers' webhook Services"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCore, Resource: "configmaps", Scope: ClusterWide,
				For: "create and delete the controllers' configuration"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupCore, Resource: "secrets", Scope: ClusterWide,
				For: "create and delete the webhooks' certificate Secrets"},
			{Verbs: []string{"create", "get", "delete"}, Group: groupApps, Resource: "deployments", Scope: ClusterWide,
				For: "create and delete the trainer's and JobSet's controller Deployments"},
		},
	}},
}

// shippedRuntimes are the ClusterTrainingRuntimes every fabric ships, by
// name: check cluster reads the one of the pool's fabric and machine type.
func shippedRuntimes() []string {
	var out []string
	for _, f := range fabric.Fabrics() {
		out = append(out, f.ShippedRuntimes()...)
	}
	return out
}

// shippedBenchmarks are the benchmark TrainingRuntimes `render benchmark`
// names, every fabric's and machine type's.
func shippedBenchmarks() []string {
	var out []string
	for _, f := range fabric.Fabrics() {
		for _, mt := range f.MachineTypes {
			if n := f.ShippedBenchmark(mt.Name); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// readNetworks are what `discover` reads: the GPU nodes, whether managed
// DRANET serves them, and GKE's multi-network objects.
var readNetworks = []Rule{
	{Verbs: []string{"list"}, Group: groupCore, Resource: "nodes", Scope: ClusterWide,
		For: "read the GPU nodes: their advertised networks and NIC annotations"},
	dranet[0], dranet[1],
	{Verbs: []string{"list"}, Group: groupGKENetworks, Resource: "networks", Scope: ClusterWide,
		For: "read GKE's multi-network Networks (the GPU-NIC networks)"},
	{Verbs: []string{"list"}, Group: groupGKENetworks, Resource: "gkenetworkparamsets", Scope: ClusterWide,
		For: "read GKE's GKENetworkParamSets (which VPC and subnet each Network is)"},
}

// Discover is `tcpxogen discover`: read-only, exactly what it reads.
var Discover = List{
	Command:          "discover",
	Namespace:        "the namespace the NCCL plugin installer runs in",
	DefaultNamespace: names.ComponentsNamespace,
	Rules:            readNetworks,
}

// CheckCluster is `tcpxogen check cluster`: discover's reads, the
// installer's pods, the deployed runtimes, and the TrainJobs of the shipped
// runtimes with their runtime snapshots.
//
// The snapshots are ConfigMaps named <trainjob>-runtime-snapshot in each
// TrainJob's namespace (trainer v2.3.0, pkg/runtime/core/snapshot.go).
// RBAC's resourceNames match whole names only, no prefix or suffix, and the
// TrainJobs' namespaces are known only once they are listed, so no Role or
// resourceNames can narrow that read: the narrowest rule the API allows is
// get configmaps cluster-wide, without list or watch, so the command can
// read a ConfigMap only by the name it derives from a TrainJob and
// enumerates none. The benchmark TrainingRuntime is read by name in the
// namespaces its TrainJobs run in, which get can be narrowed to.
var CheckCluster = List{
	Command:          "check-cluster",
	Namespace:        "the namespace the NCCL plugin installer runs in",
	DefaultNamespace: names.ComponentsNamespace,
	Rules: append(slices.Clone(readNetworks),
		Rule{Verbs: []string{"list"}, Group: groupCore, Resource: "pods", Scope: InNamespace,
			For: "read the installer's pods and their images"},
		Rule{Verbs: []string{"get"}, Group: groupTrainer, Resource: "clustertrainingruntimes", ResourceNames: shippedRuntimes(), Scope: ClusterWide,
			For: "read the deployed runtime of the pool's fabric and machine type (" + strings.Join(shippedRuntimes(), ", ") + "): its " + names.DaemonContainer + " (TCPXO), its labels and its wiring"},
		Rule{Verbs: []string{"list"}, Group: groupTrainer, Resource: "trainjobs", Scope: ClusterWide,
			For: "find the TrainJobs of the pool's shipped runtime and benchmark in every namespace"},
		Rule{Verbs: []string{"get"}, Group: groupCore, Resource: "configmaps", Scope: ClusterWide,
			For: "read each such TrainJob's runtime snapshot (the ConfigMap <trainjob>-runtime-snapshot in its namespace), by name"},
		Rule{Verbs: []string{"get"}, Group: groupTrainer, Resource: "trainingruntimes", ResourceNames: shippedBenchmarks(), Scope: ClusterWide,
			For: "read the deployed benchmark (" + strings.Join(shippedBenchmarks(), ", ") + ") in the namespaces its TrainJobs run in"}),
}
