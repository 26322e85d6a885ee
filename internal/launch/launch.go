// Package launch holds the upstream facts the launch rules rest on: the
// rendezvous variables trainer's torch plugin injects, and the upstream
// issues the launch verdicts cite. The realization engine (validators/realize)
// judges launches with them and the admission policies (runtimes/admission)
// state the same rules inside the API server, so both read them here rather
// than the policies linking the whole engine for a few strings.
package launch

import "github.com/kubeflow/trainer/v2/pkg/constants"

// RendezvousEnv are the variables trainer's torch plugin injects into the
// node container for torchrun (EnforceMLPolicy in
// pkg/runtime/framework/plugins/torch/torch.go, the same five in v2.2.0 and
// v2.3.0; torchrun reads PET_<FLAG> as its --<flag>). Without them torchrun
// runs as a single-node job with its own defaults and the nodes never meet.
var RendezvousEnv = []string{
	constants.TorchEnvNumNodes,
	constants.TorchEnvNumProcPerNode,
	constants.TorchEnvNodeRank,
	constants.TorchEnvMasterAddr,
	constants.TorchEnvMasterPort,
}

const (
	// UpstreamNoTrainer: the torch plugin injects PET_* only when
	// spec.trainer is set.
	UpstreamNoTrainer = "kubeflow/trainer issue 4076 (open; fix proposed in PR 4082)"
	// UpstreamRawOverride: the plugins size the launch from the raw
	// resourcesPerNode, not from the merged node resources (v2.3.0 on).
	UpstreamRawOverride = "kubeflow/trainer PR 3974 (open)"
	// UpstreamReplace: resourcesPerNode replaces the node container's
	// resources instead of merging (v2.2.0; v2.3.0 merges).
	UpstreamReplace = "kubeflow/trainer issue 3551 (closed by PR 3602, which makes v2.3.0 merge instead)"
)
