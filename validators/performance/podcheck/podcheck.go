// Package podcheck asserts that the pods a benchmark actually produced
// carried the wiring. A bandwidth number from pods without the wiring
// describes something else (on a permissive cluster an admission webhook or
// a mutated template can strip it), so such a run fails even if the number
// passes.
package podcheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

// ReplicatedJobLabel is the label JobSet puts on every pod with the name of
// its replicated job.
const ReplicatedJobLabel = "jobset.sigs.k8s.io/replicatedjob-name"

// Check compares each worker pod (replicated job "node") with the wiring of
// the benchmark's node pod template and checks that the tcpxo-daemon
// sidecar started. It fails naming every pod and what it lacks. It is
// CheckFabric of TCPXO.
func Check(pods []corev1.Pod, want *corev1.PodTemplateSpec, rules []guestconfig.Rule) error {
	return CheckFabric(fabric.TCPXO, pods, want, rules)
}

// CheckFabric is Check for the benchmark of fabric f: the changes are
// judged by f's rule set, and the tcpxo-daemon start check is TCPXO's only
// (gIB has no sidecar: its pods carry the wiring alone).
func CheckFabric(f fabric.Fabric, pods []corev1.Pod, want *corev1.PodTemplateSpec, rules []guestconfig.Rule) error {
	if f.Rules() == nil {
		return fmt.Errorf("fabric %q has no rule set: pass one of the registry's fabrics (internal/fabric)", f.Name)
	}
	tcpxo := f.Name == fabric.TCPXO.Name
	wantWiring := wiring.Of(serverDefaulted(want), constants.Node)
	var problems []string
	workers := 0
	for i := range pods {
		p := &pods[i]
		if p.Labels[ReplicatedJobLabel] != constants.Node {
			continue
		}
		workers++
		// Defaulted too: idempotent on a pod from a server, and a pod built
		// from the template elsewhere compares the same.
		got := wiring.Of(serverDefaulted(&corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}), constants.Node)
		for _, c := range realize.JudgeWith(f.Rules(), wantWiring, got, rules) {
			if c.LosesFabric() {
				problems = append(problems, fmt.Sprintf("pod %s: %s: %s", p.Name, c.Change, c.Reason))
			}
		}
		if msg := daemonStarted(p); tcpxo && msg != "" {
			problems = append(problems, fmt.Sprintf("pod %s: %s", p.Name, msg))
		}
	}
	if workers == 0 {
		return errors.New("no worker pods (label " + ReplicatedJobLabel + "=node) to check: the benchmark produced none, or they were deleted before the check")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		wiringName := f.Title
		if tcpxo {
			wiringName = "TCPXO" // the words TCPXO's reports have always used
		}
		return fmt.Errorf("%d of the benchmark's worker pods did not run with the %s wiring, so the result does not describe the shipped runtime:\n  %s", countPods(problems), wiringName, strings.Join(problems, "\n  "))
	}
	return nil
}

// serverDefaulted returns a copy of want with the defaults the API server
// sets on every pod it stores (k8s.io/kubernetes/pkg/apis/core/v1
// defaults.go) in the fields the wiring compares: a hostPath volume's type
// becomes "" (HostPathUnset), a secret, configMap, downwardAPI or projected
// volume gets defaultMode 0644. A template read from a custom resource (a
// runtime, a JobSet) carries none of them, so without this every live pod
// would differ from it in every such volume. Found by the e2e suite, whose
// pods come from a real API server.
func serverDefaulted(want *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if want == nil {
		return nil
	}
	out := want.DeepCopy()
	mode := int32(corev1.SecretVolumeSourceDefaultMode)
	for i := range out.Spec.Volumes {
		v := &out.Spec.Volumes[i].VolumeSource
		switch {
		case v.HostPath != nil && v.HostPath.Type == nil:
			v.HostPath.Type = new(corev1.HostPathUnset)
		case v.Secret != nil && v.Secret.DefaultMode == nil:
			v.Secret.DefaultMode = &mode
		case v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil:
			v.ConfigMap.DefaultMode = &mode
		case v.DownwardAPI != nil && v.DownwardAPI.DefaultMode == nil:
			v.DownwardAPI.DefaultMode = &mode
		case v.Projected != nil && v.Projected.DefaultMode == nil:
			v.Projected.DefaultMode = &mode
		}
	}
	return out
}

// daemonStarted explains why the sidecar did not start, or returns "".
// Native sidecars report under initContainerStatuses; Started turns true
// once the startup probe (the daemon's health-check file) passed.
func daemonStarted(p *corev1.Pod) string {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name != names.DaemonContainer {
			continue
		}
		if s.Started != nil && *s.Started {
			return ""
		}
		if s.State.Terminated != nil {
			return fmt.Sprintf("%s terminated (%s, exit %d) before it started", names.DaemonContainer, s.State.Terminated.Reason, s.State.Terminated.ExitCode)
		}
		return names.DaemonContainer + " never passed its startup probe"
	}
	return names.DaemonContainer + " has no status: the sidecar did not run"
}

func countPods(problems []string) int {
	seen := map[string]bool{}
	for _, p := range problems {
		seen[strings.SplitN(p, ":", 2)[0]] = true
	}
	return len(seen)
}
