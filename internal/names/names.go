// Package names holds the names of what tcpxogen ships that packages on
// several layers refer to: the runtime users reference, the benchmark
// derived from it, the daemon sidecar's container, and the NCCL plugin
// installer as the components run it. It is a leaf with no imports, so a
// package below runtimes (internal/access) and one beside it
// (validators/cluster) spell each name the way the builders do: there is one
// definition, and no test holding copies equal.
package names

const (
	// Runtime is the ClusterTrainingRuntime users reference from a
	// TrainJob; its golden is runtimes/torch-distributed-tcpxo.yaml.
	Runtime = "torch-distributed-tcpxo"
	// Benchmark is the NCCL benchmark TrainingRuntime derived from Runtime,
	// the name render benchmark gives it and validate's runs start with;
	// its golden is runtimes/nccl-tests-tcpxo.yaml.
	Benchmark = "nccl-tests-tcpxo"
	// DaemonContainer is the tcpxo-daemon (RxDM), the native sidecar of the
	// runtime's worker pods.
	DaemonContainer = "tcpxo-daemon"
)

// The components (runtimes/components.yaml) as check cluster and validate
// find them on a cluster.
const (
	// ComponentsNamespace is where the components' DaemonSets run, the NCCL
	// plugin installer's among them.
	ComponentsNamespace = "kube-system"
	// AppLabel is the pod label each component's DaemonSet selects its pods
	// by; its value is the DaemonSet's name.
	AppLabel = "k8s-app"
	// InstallerDaemonSet is the NCCL plugin installer's DaemonSet.
	InstallerDaemonSet = "nccl-tcpxo-installer"
	// InstallerContainer is the installer pod's init container that runs
	// the installer image's entrypoint and installs the plugin.
	InstallerContainer = "nccl-tcpxo-installer"
)

// The gIB fabric's names (GPUDirect-RDMA with NCCL/gIB, A3 Ultra and A4).
const (
	// RuntimeRDMA is the role name of the gIB runtime (NVIDIA AICR's name
	// for it); one runtime per machine type carries it as a prefix.
	RuntimeRDMA = "torch-distributed-rdma"
	// BenchmarkRDMA is the role name of the NCCL benchmark derived from a
	// gIB runtime; one per machine type carries it as a prefix, like the
	// runtime it is derived from.
	BenchmarkRDMA = "nccl-tests-rdma"
	// InstallerDaemonSetRDMA is the gIB installer's DaemonSet, and its
	// init container, as Google's nccl-rdma-installer.yaml names them.
	InstallerDaemonSetRDMA = "nccl-rdma-installer"
)
