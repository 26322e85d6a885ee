package realize

import (
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// The hazards trainer v2.3.0 opened in the sidecars, judged from what the
// realization did to them (each read in the v2.3.0 source; the realization
// matrix's runtime-patch-daemon-* and envinjection-* cases hold both
// versions to these verdicts):
//
//   - spec.runtimePatches may patch every container but node's command,
//     image, args, resources and env: a patch of the tcpxo-daemon init
//     container's securityContext, volumeMounts or env is admitted by the
//     webhook and lands in the pod. Without NET_ADMIN/NET_BIND_SERVICE, the
//     host /sys and /proc/sys mounts or the plugin libraries, the daemon
//     cannot set up the GPU NICs' receive path: NCCL falls back to TCP.
//     A capability the patch writes with the CAP_ prefix (CAP_NET_ADMIN) is
//     judged by the fabric rule set's capability rule (Judge,
//     fabric.CheckCapabilities): containerd drops the prefixed name, and
//     the verdict names the prefix as the cause.
//   - mlPolicy.torch.envInjection (new in v2.3.0) makes the torch plugin
//     upsert PET_* into the containers it names, sidecars included.

// Upstream references the sidecar verdicts cite.
const (
	// upstreamRuntimePatches: the RuntimePatches API and its ContainerPatch
	// (env, volumeMounts, securityContext of any container but node's env).
	upstreamRuntimePatches = "kubeflow/trainer PR 3309 (RuntimePatches API: ContainerPatch admits securityContext, volumeMounts and env of sidecars)"
	// upstreamEnvInjection: TorchMLPolicySource.envInjection, v2.3.0.
	upstreamEnvInjection = "kubeflow/trainer v2.3.0 mlPolicy.torch.envInjection (pkg/runtime/framework/plugins/torch)"
)

// sidecarPrefix starts the Path of every change inside an init container
// (wiring.Diff's naming), "initContainer tcpxo-daemon capability NET_ADMIN".
const sidecarPrefix = "initContainer "

// isSidecarChange reports whether c is a change inside an init container
// the runtime has (not one lost or added as a whole).
func isSidecarChange(c wiring.Change) bool {
	return strings.HasPrefix(c.Path, sidecarPrefix) && c.What != wiring.InitContainerLost && c.What != wiring.InitContainerAdded
}

// sidecarName returns the container a sidecar change's Path names.
func sidecarName(path string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(path, sidecarPrefix), " ")
	return name
}

// judgeSidecar judges a change inside a sidecar of the runtime: anything
// the runtime set that is lost or changed loses the fabric (the daemon runs
// as the runtime configures it, or not usefully at all); an added mount or
// capability keeps it; an added variable is a warning, except the torch
// rendezvous variables envInjection puts there, which the daemon does not
// read.
func judgeSidecar(c wiring.Change) Judged {
	name := sidecarName(c.Path)
	j := Judged{Change: c}
	patchFix := "remove the " + name + " entry from spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.spec.initContainers: the runtime's " + name + " must run as the runtime sets it"
	switch {
	case c.What == wiring.EnvAdded && strings.HasPrefix(strings.TrimPrefix(c.Path, sidecarPrefix+name+" env "), "PET_"):
		j.Severity = fabric.Note
		j.Reason = "the torch plugin injected a rendezvous variable into " + name + " because the runtime's mlPolicy.torch.envInjection names it (" + upstreamEnvInjection + "); " + name + " does not read PET_* variables"
	case c.What == wiring.EnvAdded:
		j.Severity = fabric.Warning
		j.Reason = "a variable added to " + name + " by spec.runtimePatches (" + upstreamRuntimePatches + "): the daemon's behaviour is no longer the one the runtime was checked with"
		j.Fix = patchFix
	case c.IsAddition():
		j.Severity = fabric.Note
		j.Reason = "adds to " + name + "'s wiring"
	default:
		j.Severity = fabric.Fatal
		j.Reason = sidecarLoss(c, name) + "; the trainer admits this through spec.runtimePatches (" + upstreamRuntimePatches + ")"
		j.Fix = patchFix
	}
	return j
}

// sidecarLoss says what a lost or changed element of the sidecar breaks.
func sidecarLoss(c wiring.Change, name string) string {
	switch c.What {
	case wiring.CapabilityLost:
		return name + " loses a capability it needs to configure the GPU NICs' receive path (NET_ADMIN, NET_BIND_SERVICE): NCCL falls back to TCP"
	case wiring.MountLost, wiring.MountChanged:
		return name + " loses a host mount (the plugin libraries, /sys or /proc/sys) its receive path reads: NCCL falls back to TCP"
	case wiring.EnvLost, wiring.EnvOverridden:
		return name + "'s environment, which its entrypoint and health check read, is changed"
	}
	return name + " no longer runs as the runtime configures it"
}
