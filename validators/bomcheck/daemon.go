package bomcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// checkRetiredFlags holds every daemon container's arguments to the retired
// daemon flags of bom/releases.yaml that apply to the pinned daemon (all of
// them when its tag does not read as a release).
func checkRetiredFlags(_ context.Context, t *Tree) Result {
	if r := need([]string{bom.ReleasesRepoPath}, t.ReleasesErr); r != nil {
		return *r
	}
	if len(t.Releases.RetiredDaemonFlags) == 0 {
		return Result{Status: Empty, Message: "no retired daemon flags in " + bom.ReleasesRepoPath + ": nothing to hold the daemon's arguments to", Files: []string{bom.ReleasesRepoPath}}
	}
	files := ManifestFiles
	var problems []string
	daemonRepo, daemonTag := "", ""
	if t.BOM != nil {
		daemonRepo = t.BOM.Images.Daemon.Repository()
	}
	if t.Generated != nil {
		daemonTag = t.Generated.DaemonVersion
	}
	retired := t.Releases.RetiredDaemonFlagsFor(daemonTag)
	n, fatal := 0, false
	for _, m := range t.Manifests {
		for _, o := range m.Objects {
			walkContainers(o.Object, func(c map[string]any, where string) {
				img, _ := c["image"].(string)
				if c["name"] != names.DaemonContainer && (daemonRepo == "" || repository(img) != daemonRepo) {
					return
				}
				n++
				for _, arg := range append(stringList(c["command"]), stringList(c["args"])...) {
					for _, df := range retired {
						if df.In(arg) {
							fatal = fatal || df.Fatal
							problems = append(problems, fmt.Sprintf("%s %s/%s %s: %s is %s", m.Path, o.GetKind(), o.GetName(), where, excerpt.Quote(arg), df.Note))
						}
					}
				}
			})
		}
	}
	if len(problems) > 0 {
		fix := "remove the retired flag from the daemon builder (runtimes/wiring.go, whose only daemon flag is " + runtimes.DaemonHops + ") and " + regenerate
		if fatal {
			fix = "remove the rejected flag from the daemon builder (runtimes/wiring.go, whose only daemon flag is " + runtimes.DaemonHops + ") and " + regenerate
		}
		return fail(files, fix, "%s", strings.Join(problems, "; "))
	}
	return pass("%d daemon containers, no retired or rejected flags (daemon %s)", n, daemonTag)
}

// stringList is the strings of a YAML list (a command or args).
func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkDaemonInvocation fails when the shipped daemon container would not
// run the script the daemon image carries: a command that execs the script
// directly needs its exec bit, which the published image does not set, so
// the pod would fail with "permission denied" and never reach the fabric.
func checkDaemonInvocation(_ context.Context, t *Tree) Result {
	files := []string{runtimes.GoldenRuntime, generated.FactsFile}
	if r := need(files, t.GeneratedErr); r != nil {
		return *r
	}
	pod, err := shippedPod(t)
	if err != nil {
		return fail(files, regenerate, "%v", err)
	}
	i := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == names.DaemonContainer })
	if i < 0 {
		return fail(files, regenerate, "%s has no %s init container", runtimes.GoldenRuntime, names.DaemonContainer)
	}
	g := t.Generated
	if why := invocationProblem(pod.Spec.InitContainers[i].Command, g.DaemonEntrypoint, g.DaemonEntryScript, g.DaemonEntryScriptMode); why != "" {
		return fail(files, "derive the daemon command from the generated DaemonEntrypoint (the image's own) and "+regenerate, "%s %s: %s", runtimes.GoldenRuntime, names.DaemonContainer, why)
	}
	return pass("%q runs %s (mode %04o in the image)", pod.Spec.InitContainers[i].Command, g.DaemonEntryScript, g.DaemonEntryScriptMode)
}

// invocationProblem says why command would not run script, or returns "".
// An empty command runs the image's entrypoint, which does.
func invocationProblem(command, entrypoint []string, script string, mode int) string {
	switch {
	case len(command) == 0, slices.Equal(command, entrypoint):
		return ""
	case command[0] == script && mode&0o111 == 0:
		return fmt.Sprintf("the command execs %s, which the daemon image carries with mode %04o (no exec bit): the container would fail with \"permission denied\"; run it as the image does, %q", script, mode, entrypoint)
	case command[0] == script:
		return ""
	case len(command) > 1 && facts.IsInterpreter(command[0]) && command[1] == script:
		return ""
	}
	return fmt.Sprintf("the command %q does not run %s, the script the daemon image's entrypoint %q runs", command, script, entrypoint)
}
