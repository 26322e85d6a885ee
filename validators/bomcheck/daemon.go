package bomcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// daemonFlags are tcpxo-daemon flags a release retired or rejects, from
// the daemon release (from, "" for every pinned one) that does. Sources:
// Google's release notes for --num_nics; the round-3 facts (NVCRE's
// catalog, daemon >= v1.0.21) for the others.
var daemonFlags = []struct {
	flag, from string
	// fatal: the daemon exits at start on it, not merely ignores it.
	fatal bool
	note  string
}{
	{"--num_nics", "", false, "retired in installer v1.0.14 / daemon v1.0.20 (accepted, no effect)"},
	{"--uid", "v1.0.21", false, "retired from daemon v1.0.21 (the daemon logs an error; the flag has no effect)"},
	{"--alsologtostderr", "v1.0.21", false, "retired from daemon v1.0.21 (the daemon logs an error; the flag has no effect)"},
	{"--enforce_kernel_ipv6_support", "v1.0.21", true, "rejected from daemon v1.0.21: the daemon exits before its receive path starts, so the pod never reaches the fabric"},
}

// daemonAtLeast reports whether the pinned daemon tag is at least from. An
// unreadable tag applies every rule: a flag is refused rather than let by.
func daemonAtLeast(pinned, from string) bool {
	if from == "" {
		return true
	}
	var a, b [3]int
	if _, err := fmt.Sscanf(pinned, "v%d.%d.%d", &a[0], &a[1], &a[2]); err != nil {
		return true
	}
	if _, err := fmt.Sscanf(from, "v%d.%d.%d", &b[0], &b[1], &b[2]); err != nil {
		return true
	}
	return slices.Compare(a[:], b[:]) >= 0
}

func checkRetiredFlags(_ context.Context, t *Tree) Result {
	files := ManifestFiles
	var problems []string
	daemonRepo, daemonTag := "", ""
	if t.BOM != nil {
		daemonRepo = t.BOM.Images.Daemon.Repository()
	}
	if t.Generated != nil {
		daemonTag = t.Generated.DaemonVersion
	}
	n, fatal := 0, false
	for _, m := range t.Manifests {
		for _, o := range m.Objects {
			walkContainers(o.Object, func(c map[string]any, where string) {
				img, _ := c["image"].(string)
				if c["name"] != runtimes.DaemonContainer && (daemonRepo == "" || repository(img) != daemonRepo) {
					return
				}
				n++
				for _, arg := range append(stringList(c["command"]), stringList(c["args"])...) {
					for _, df := range daemonFlags {
						if !daemonAtLeast(daemonTag, df.from) {
							continue
						}
						if arg == df.flag || strings.HasPrefix(arg, df.flag+"=") || strings.Contains(arg, " "+df.flag) {
							fatal = fatal || df.fatal
							problems = append(problems, fmt.Sprintf("%s %s/%s %s: %s is %s", m.Path, o.GetKind(), o.GetName(), where, excerpt.Quote(arg), df.note))
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
	i := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == runtimes.DaemonContainer })
	if i < 0 {
		return fail(files, regenerate, "%s has no %s init container", runtimes.GoldenRuntime, runtimes.DaemonContainer)
	}
	g := t.Generated
	if why := invocationProblem(pod.Spec.InitContainers[i].Command, g.DaemonEntrypoint, g.DaemonEntryScript, g.DaemonEntryScriptMode); why != "" {
		return fail(files, "derive the daemon command from the generated DaemonEntrypoint (the image's own) and "+regenerate, "%s %s: %s", runtimes.GoldenRuntime, runtimes.DaemonContainer, why)
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
