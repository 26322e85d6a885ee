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

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/wiring"
)

// ReplicatedJobLabel is the label JobSet puts on every pod with the name of
// its replicated job.
const ReplicatedJobLabel = "jobset.sigs.k8s.io/replicatedjob-name"

// Check compares each worker pod (replicated job "node") with the wiring of
// the benchmark's node pod template and checks that the tcpxo-daemon
// sidecar started. It fails naming every pod and what it lacks.
func Check(pods []corev1.Pod, want *corev1.PodTemplateSpec, rules []guestconfig.Rule) error {
	wantWiring := wiring.Of(want, constants.Node)
	var problems []string
	workers := 0
	for i := range pods {
		p := &pods[i]
		if p.Labels[ReplicatedJobLabel] != constants.Node {
			continue
		}
		workers++
		got := wiring.Of(&corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, constants.Node)
		for _, c := range realize.Judge(wantWiring, got, rules) {
			if c.LosesFabric() {
				problems = append(problems, fmt.Sprintf("pod %s: %s: %s", p.Name, c.Change, c.Reason))
			}
		}
		if msg := daemonStarted(p); msg != "" {
			problems = append(problems, fmt.Sprintf("pod %s: %s", p.Name, msg))
		}
	}
	if workers == 0 {
		return errors.New("no worker pods (label " + ReplicatedJobLabel + "=node) to check: the benchmark produced none, or they were deleted before the check")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("%d of the benchmark's worker pods did not run with the TCPXO wiring, so the result does not describe the shipped runtime:\n  %s", countPods(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// daemonStarted explains why the sidecar did not start, or returns "".
// Native sidecars report under initContainerStatuses; Started turns true
// once the startup probe (the daemon's health-check file) passed.
func daemonStarted(p *corev1.Pod) string {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name != runtimes.DaemonContainer {
			continue
		}
		if s.Started != nil && *s.Started {
			return ""
		}
		if s.State.Terminated != nil {
			return fmt.Sprintf("%s terminated (%s, exit %d) before it started", runtimes.DaemonContainer, s.State.Terminated.Reason, s.State.Terminated.ExitCode)
		}
		return runtimes.DaemonContainer + " never passed its startup probe"
	}
	return runtimes.DaemonContainer + " has no status: the sidecar did not run"
}

func countPods(problems []string) int {
	seen := map[string]bool{}
	for _, p := range problems {
		seen[strings.SplitN(p, ":", 2)[0]] = true
	}
	return len(seen)
}
