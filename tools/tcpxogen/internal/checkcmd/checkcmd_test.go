package checkcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
	"github.com/tcpxogen/tcpxogen/validators/realize"
)

func runCheck(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"check"}, args...), cli.Streams{Out: &o, Err: &e}, Commands(nil))
	return code, o.String() + e.String()
}

func TestCheckRealTree(t *testing.T) {
	code, out := runCheck(t)
	n := len(bomcheck.Checks())
	if code != cli.ExitOK || !strings.Contains(out, fmt.Sprintf("%d checks: %d passed, 0 failed, 0 with nothing to compare", n, n)) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A tree whose data files load but whose other files are missing fails its
// checks (exit 1); a tree whose data files are missing or malformed is bad
// input (exit 2), as extract says, after the report of what could run.
func TestCheckBrokenTreeExits1(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/tcpxogen/tcpxogen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCheck(t, "--root", root)
	if code != cli.ExitUsage || !strings.Contains(out, "FAIL") || !strings.Contains(out, "cannot run") || !strings.Contains(out, "bom.yaml") {
		t.Fatalf("no data files: exit %d, want 2:\n%s", code, out)
	}
	if err := os.Mkdir(filepath.Join(root, "bom"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out = runCheck(t, "--root", root)
	if code != cli.ExitFailure || !strings.Contains(out, "cannot run") {
		t.Fatalf("data files only: exit %d, want 1:\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(bom.RepoPath)), []byte("images: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runCheck(t, "--root", root)
	if code != cli.ExitUsage || !strings.Contains(out, "bom.yaml:") {
		t.Fatalf("malformed BOM: exit %d, want 2:\n%s", code, out)
	}
}

func TestCheckUsage(t *testing.T) {
	if code, _ := runCheck(t, "--bogus"); code != cli.ExitUsage {
		t.Fatalf("bad flag exit %d", code)
	}
}

func TestCheckTrainJob(t *testing.T) {
	linked := realize.TrainerVersion()
	merges := func(v string) bool {
		b, ok := realize.BehaviorOf(v)
		if !ok {
			t.Fatalf("no behaviour recorded for trainer %s", v)
		}
		return b.ResourcesPerNodeMerges
	}
	// Each case runs on the linked trainer (--trainer names it, so a run
	// under either modfile realizes in-process); the other version's
	// binary is tools/tcpxogen's TestTrainerSiblings.
	for _, tc := range []struct {
		file string
		code int
		want []string
	}{
		{file: "trainjob-env-debug.yaml", code: cli.ExitOK, want: []string{
			"trainer " + linked + ": realized in-process by ",
			"note  env overridden: env NCCL_DEBUG (WARN -> INFO): your value wins", "0 lose the fabric; launch ok",
			"ok    launch on trainer " + linked + ": ", "torchrun starts one process per visible GPU, 8 here",
		}},
		{file: "trainjob-cpu-only.yaml", code: cli.ExitFailure, want: []string{
			"FAIL  resource lost: limits nvidia.com/gpu (8 -> <none>)", "FAIL  env overridden: env NCCL_SOCKET_IFNAME (eth0 -> eth1)",
			"would lose the GPUDirect-TCPXO fabric",
		}},
		{file: "trainjob-patch-resources.yaml", code: cli.ExitFailure, want: []string{"FAIL  schema: line 22: pruned", "resources", "vanishes silently"}},
		{
			// Issue 4076's shape: wiring intact, no rendezvous, on every version.
			file: "trainjob-bare.yaml", code: cli.ExitFailure,
			want: []string{
				"0 wiring change(s) listed above, 0 lose the fabric",
				"FAIL  launch on trainer " + linked + ": rendezvous: the node container has no PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT",
				"upstream: kubeflow/trainer issue 4076", "fix: add `spec.trainer: {}`",
			},
		},
		{
			// PR 3974's shape: processes sized by the CPU override.
			file: "trainjob-resources-cpu-memory.yaml", code: cli.ExitFailure,
			want: map[bool][]string{
				true: {
					"FAIL  launch on trainer " + linked + ": processes per node: PET_NPROC_PER_NODE=16 on a node container with nvidia.com/gpu: 8: torchrun would start 16 processes for 8 GPUs",
					"upstream: kubeflow/trainer PR 3974", "or set spec.trainer.numProcPerNode: 8",
				},
				false: {"launch on trainer " + linked + ": processes per node: PET_NPROC_PER_NODE=16 on a node container with no nvidia.com/gpu"},
			}[merges(linked)],
		},
		{
			// The process-count collapse: memory only. Where resourcesPerNode
			// merges the pod keeps its GPUs and runs one process; where it
			// replaces, the GPUs are gone too.
			file: "trainjob-memory-only.yaml", code: cli.ExitFailure,
			want: map[bool][]string{
				true: {
					"FAIL  launch on trainer " + linked + ": processes per node: PET_NPROC_PER_NODE=1 on a node container with nvidia.com/gpu: 8",
					"a memory-only override", "upstream: kubeflow/trainer PR 3974", `fix: restate the GPUs in spec.trainer.resourcesPerNode (nvidia.com/gpu: "8"`,
				},
				false: {"FAIL  resource lost: limits nvidia.com/gpu (8 -> <none>)", "a memory-only override", "upstream: kubeflow/trainer issue 3551"},
			}[merges(linked)],
		},
		// Its fix: the override restates the GPUs, on every version.
		{file: "trainjob-memory-gpus.yaml", code: cli.ExitOK, want: []string{"0 lose the fabric; launch ok", "8 here (nvidia.com/gpu: 8)"}},
		{file: "trainjob-patch-daemon-caps.yaml", code: cli.ExitFailure, want: []string{
			"FAIL  capability lost: initContainer tcpxo-daemon capability NET_ADMIN: tcpxo-daemon loses a capability", "kubeflow/trainer PR 3309",
			"fix: remove the tcpxo-daemon entry from spec.runtimePatches", "1 lose the fabric; launch ok",
		}},
		{
			// The fix for the CPU shape: passes where resourcesPerNode
			// merges; where it replaces, the GPUs are gone whatever
			// numProcPerNode says.
			file: "trainjob-cpu-memory-nproc-8.yaml",
			code: map[bool]int{true: cli.ExitOK, false: cli.ExitFailure}[merges(linked)],
		},
		{
			file: "trainjob-cpu-memory-gpus-nproc-8.yaml", code: cli.ExitOK,
			want: []string{"0 lose the fabric; launch ok", "PET_NPROC_PER_NODE=8: one process per GPU (nvidia.com/gpu: 8)"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			code, out := runCheck(t, "trainjob", "--trainer", linked, "-v", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			checkQuietOutput(t, path, code, out)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			checkEveryChangeListed(t, out)
		})
	}
}

// TestCheckTrainJobTrainerFlag: an unsupported version is bad usage (exit
// 2); a version whose binary is not next to this one (the test binary has
// no sibling) fails (exit 1) naming the make target, after realizing the
// versions it can; never a silent fallback.
func TestCheckTrainJobTrainerFlag(t *testing.T) {
	path := filepath.Join("testdata", "trainjob-env-debug.yaml")
	if code, out := runCheck(t, "trainjob", "--trainer", "v2.1.0", path); code != cli.ExitUsage || !strings.Contains(out, "not a supported trainer version") {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	linked := realize.TrainerVersion()
	code, out := runCheck(t, "trainjob", "--trainer", "all", path)
	if code != cli.ExitFailure || !strings.Contains(out, "trainer "+linked+": realized in-process") || !strings.Contains(out, "which does not exist") || !strings.Contains(out, "build it with `make bin/tcpxogen") {
		t.Fatalf("exit %d, want 1 naming the missing binary's make target:\n%s", code, out)
	}
}

// checkQuietOutput holds the default output to the -v one: the same exit,
// every FAIL and warn line with what follows it (fix, cause, upstream), one
// verdict line per document, no "ok" line and none of the trainer's own
// rendezvous variables reported as a wiring change.
func checkQuietOutput(t *testing.T, path string, verboseCode int, verbose string) {
	t.Helper()
	code, out := runCheck(t, "trainjob", path)
	if code != verboseCode {
		t.Fatalf("exit %d without -v, %d with it:\n%s", code, verboseCode, out)
	}
	act := false
	for _, l := range strings.Split(verbose, "\n") {
		_, rest, ok := strings.Cut(l, "] ")
		if !ok {
			continue
		}
		tag := strings.TrimSpace(rest[:min(len(rest), 5)])
		switch {
		case tag == "FAIL" || tag == "warn":
			act = true
		case tag != "":
			act = false
		}
		if act && !strings.Contains(l, " wiring change(s) listed above") && !strings.Contains(out, l) {
			t.Errorf("without -v the output lacks %q:\n%s", l, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "] ok ") || strings.Contains(l, "env added: env PET_") {
			t.Errorf("without -v the output has %q:\n%s", l, out)
		}
	}
	if n, docs := strings.Count(out, " wiring change(s) listed above"), strings.Count(verbose, " wiring change(s) listed above"); n != docs {
		t.Errorf("%d verdict lines without -v, %d documents:\n%s", n, docs, out)
	}
	checkEveryChangeListed(t, out)
}

// changeVocabulary is every Change.What, as a line about a change starts.
var changeVocabulary = []string{
	wiring.AnnotationLost, wiring.AnnotationChanged, wiring.AnnotationAdded,
	wiring.InitContainerLost, wiring.InitContainerChanged, wiring.InitContainerAdded,
	wiring.VolumeLost, wiring.VolumeChanged, wiring.VolumeAdded, wiring.NodeContainerLost,
	wiring.EnvLost, wiring.EnvOverridden, wiring.EnvAdded, wiring.MountLost, wiring.MountChanged, wiring.MountAdded,
	wiring.CapabilityLost, wiring.CapabilityAdded, wiring.ResourceLost, wiring.ResourceChanged, wiring.ResourceAdded,
}

var summaryRE = regexp.MustCompile(`^(\[doc \d+ [^]]+\]) +trainer [^:]+: (\d+) wiring change\(s\) listed above`)

// checkEveryChangeListed holds each document's summary count to the change
// lines printed for it: a counted change is a shown change.
func checkEveryChangeListed(t *testing.T, out string) {
	t.Helper()
	lines := map[string]int{}
	summaries := 0
	for _, l := range strings.Split(out, "\n") {
		if m := summaryRE.FindStringSubmatch(l); m != nil {
			summaries++
			if n, err := strconv.Atoi(m[2]); err != nil || n != lines[m[1]] {
				t.Errorf("%s: summary counts %s change(s), %d listed:\n%s", m[1], m[2], lines[m[1]], out)
			}
			continue
		}
		label, rest, ok := strings.Cut(l, "] ")
		if !ok {
			continue
		}
		text := strings.TrimSpace(rest[min(len(rest), 5):])
		if slices.ContainsFunc(changeVocabulary, func(w string) bool { return strings.HasPrefix(text, w+": ") }) {
			lines[label+"]"]++
		}
	}
	if summaries == 0 && strings.Contains(out, "[doc ") {
		t.Errorf("no summary line:\n%s", out)
	}
}

// TestCheckTrainJobEveryDocument: a file's every TrainJob is judged, each
// under its own label, and one bad document fails the file (issue 10's
// reproduction: a good TrainJob, then the guide's NCCL_SOCKET_IFNAME
// pitfall).
func TestCheckTrainJobEveryDocument(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: wrong-socket-ifname, namespace: team-a}\n" +
		"spec:\n  runtimeRef: {name: torch-distributed-tcpxo}\n  trainer:\n    env: [{name: NCCL_SOCKET_IFNAME, value: eth1}]\n"
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		content string
		code    int
		want    []string
		lacks   []string
	}{
		"good then bad": {string(good) + "---\n" + bad, cli.ExitFailure, []string{
			"[doc 1 team-a/llama] note  env overridden: env NCCL_DEBUG",
			"[doc 2 team-a/wrong-socket-ifname] FAIL  env overridden: env NCCL_SOCKET_IFNAME (eth0 -> eth1)",
			"1 of 2 TrainJob document(s) fail: [doc 2 team-a/wrong-socket-ifname] would lose the GPUDirect-TCPXO fabric",
		}, []string{"[doc 1 team-a/llama] FAIL"}},
		"bad then good": {bad + "---\n" + string(good), cli.ExitFailure, []string{
			"[doc 1 team-a/wrong-socket-ifname] FAIL  env overridden", "[doc 2 team-a/llama] note  env overridden",
		}, nil},
		"two good": {string(good) + "\n---\n" + strings.ReplaceAll(string(good), "name: llama", "name: llama-2"), cli.ExitOK, []string{
			"[doc 1 team-a/llama] ", "[doc 2 team-a/llama-2] ",
		}, []string{"FAIL"}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCheck(t, "trainjob", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.lacks {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			checkEveryChangeListed(t, out)
		})
	}
}

func TestCheckTrainJobBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("testdata", "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	otherRuntime := "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x}\nspec: {runtimeRef: {name: torch-distributed}}\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no file":             {[]string{"trainjob"}, ""},
		"missing file":        {[]string{"trainjob", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		"empty file":          {[]string{"trainjob", write("empty.yaml", "# nothing\n")}, "holds no YAML document"},
		"other runtime":       {[]string{"trainjob", write("other.yaml", otherRuntime)}, "document 1 (TrainJob \"x\") references \"ClusterTrainingRuntime\" \"torch-distributed\""},
		"not a job":           {[]string{"trainjob", write("pod.yaml", pod)}, "document 1 is a \"Pod\""},
		"pod after a job":     {[]string{"trainjob", write("job-pod.yaml", string(good)+"---\n"+pod)}, "document 2 is a \"Pod\""},
		"runtime after jobs":  {[]string{"trainjob", write("job-other.yaml", string(good)+"---\n"+strings.ReplaceAll(string(good), "name: llama", "name: llama-2")+"---\n"+otherRuntime)}, "document 3 (TrainJob \"x\")"},
		"TrainingRuntime ref": {[]string{"trainjob", write("kind.yaml", strings.Replace(string(good), "name: torch-distributed-tcpxo", "{name: torch-distributed-tcpxo, kind: TrainingRuntime}", 1))}, "references \"TrainingRuntime\""},
		"not YAML":            {[]string{"trainjob", write("bad.yaml", "kind: [\n")}, "bad.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := runCheck(t, tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(out, "[doc ") {
				t.Errorf("verdicts printed before the file was refused:\n%s", out)
			}
		})
	}
}

// TestCheckTrainJobFabricRules: issue 10's reproductions. Additions count
// (NCCL_NET=Socket, NCCL_NET_PLUGIN=none exited 0 before), an enforced
// guest-config variable cannot be overridden, a logging one can.
func TestCheckTrainJobFabricRules(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		env  string
		code int
		want []string
	}{
		"transport added":                 {"NCCL_NET\n        value: Socket", cli.ExitFailure, []string{"FAIL  env added: env NCCL_NET", "NCCL_NET"}},
		"plugin disabled":                 {"NCCL_NET_PLUGIN\n        value: none", cli.ExitFailure, []string{"FAIL  env added: env NCCL_NET_PLUGIN"}},
		"enforced overridden":             {"NCCL_PROTO\n        value: Simple", cli.ExitFailure, []string{"FAIL  env overridden: env NCCL_PROTO", "enforces"}},
		"enforced removed by a ConfigMap": {"NCCL_MIN_NCHANNELS\n        valueFrom: {configMapKeyRef: {name: tuning, key: channels}}", cli.ExitFailure, []string{"NCCL_MIN_NCHANNELS"}},
		"logging tuned":                   {"NCCL_DEBUG_SUBSYS\n        value: INIT,NET", cli.ExitOK, []string{"note  env overridden: env NCCL_DEBUG_SUBSYS"}},
		"unrelated added":                 {"WANDB_PROJECT\n        value: llama", cli.ExitOK, []string{"env added: env WANDB_PROJECT"}},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(string(good), "NCCL_DEBUG\n        value: INFO", tc.env, 1)
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCheck(t, "trainjob", "-v", path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			checkQuietOutput(t, path, code, out)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestCheckTrainJobManyFiles: one run judges every file named, each with
// its verdict; the worst outcome decides the exit (bad input 2, a failing
// TrainJob 1).
func TestCheckTrainJobManyFiles(t *testing.T) {
	good := filepath.Join("testdata", "trainjob-env-debug.yaml")
	bad := filepath.Join("testdata", "trainjob-cpu-only.yaml")
	notYAML := filepath.Join(t.TempDir(), "not-a-trainjob.yaml")
	if err := os.WriteFile(notYAML, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		files    []string
		code     int
		verdicts int
	}{
		{[]string{good, good, good}, cli.ExitOK, 3},
		{[]string{good, bad, good}, cli.ExitFailure, 3},
		{[]string{good, notYAML, bad}, cli.ExitUsage, 2},
	} {
		code, out := runCheck(t, append([]string{"trainjob"}, tc.files...)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d:\n%s", tc.files, code, tc.code, out)
		}
		if n := strings.Count(out, " wiring change(s) listed above"); n != tc.verdicts {
			t.Errorf("%v: %d verdict lines, want %d:\n%s", tc.files, n, tc.verdicts, out)
		}
	}
}

// TestTrainJobManyFilesNameTheFile: over several files every line about a
// document names its file, the passing one's verdict too, and how the
// trainer was realized is said once (issue 38: a run over a directory could
// not tell which file passed).
func TestTrainJobManyFilesNameTheFile(t *testing.T) {
	pass, fail := "testdata/trainjob-env-debug.yaml", "testdata/trainjob-bare.yaml"
	code, out := runCheck(t, "trainjob", pass, fail)
	if code != cli.ExitFailure {
		t.Fatalf("exit %d, want 1 (one file fails):\n%s", code, out)
	}
	if n := strings.Count(out, "realized in-process by"); n != 1 {
		t.Errorf("the realization is named %d times, want once:\n%s", n, out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		switch {
		case strings.HasPrefix(line, "["+pass+" doc 1 "):
			seen[pass] = true
		case strings.HasPrefix(line, "["+fail+" doc 1 "):
			seen[fail] = true
		default:
			t.Errorf("a document line without its file: %q", line)
		}
	}
	if !seen[pass] || !seen[fail] {
		t.Errorf("lines of %v only, want both files (the passing one's verdict too):\n%s", seen, out)
	}
	// One file keeps the short label.
	_, out = runCheck(t, "trainjob", fail)
	if !strings.Contains(out, "\n[doc 1 team-a/bare] FAIL") {
		t.Errorf("a single file's lines should keep [doc N ns/name]:\n%s", out)
	}
}
