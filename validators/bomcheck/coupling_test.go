package bomcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/pipeline/docgen"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/deploy"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func realRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// copyRepo copies what the check reads into a scratch tree.
func copyRepo(t *testing.T) string {
	t.Helper()
	src, dst := realRoot(t), t.TempDir()
	rels := []string{"go.mod", bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath, generated.FactsFile, runtimes.GoldenRuntime, runtimes.GoldenComponents, benchmark.GoldenPath, docgen.CompatDoc, emit.FixtureGolden, admission.GoldenPath, admission.GoldenEnforcePath, admission.GoldenGIBPath, admission.GoldenGIBEnforcePath, generated.GIBFactsFile}
	rels = append(rels, gibManifests()...)
	rels = append(rels, DocFiles...)
	compat, _ := filepath.Glob(filepath.Join(src, "validators/realize/testdata/compat-*.json"))
	for _, p := range compat {
		rel, _ := filepath.Rel(src, p)
		rels = append(rels, rel)
	}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dst, rel, string(data))
	}
	for _, tree := range append([]string{extract.TestdataDir, extract.DaemonTestdataDir, extract.GIBTestdataDir, extract.GIBDiagnosticTestdataDir}, deploy.GoldenDirs()...) {
		copyDir(src, dst, filepath.Join(src, tree))
	}
	return dst
}

// copyDir copies the tree under src/tree to the same place under dst, modes
// and symlinks kept.
func copyDir(src, dst, tree string) {
	filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		os.MkdirAll(filepath.Dir(target), 0o755)
		if d.Type()&fs.ModeSymlink != 0 {
			link, _ := os.Readlink(p)
			return os.Symlink(link, target)
		}
		data, _ := os.ReadFile(p)
		info, _ := d.Info()
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new exactly once in a file, failing loudly when
// the fixture drifted and the edit would silently do nothing.
func edit(t *testing.T, root, rel, old, new string) {
	t.Helper()
	body := read(t, root, rel)
	if strings.Count(body, old) < 1 {
		t.Fatalf("%s does not contain %q", rel, old)
	}
	write(t, root, rel, strings.Replace(body, old, new, 1))
}

func check(t *testing.T, root string) Report {
	t.Helper()
	return Run(context.Background(), root, Options{Reproduce: pipeline.Reproduce})
}

func result(rep Report, id string) Result {
	for _, r := range rep.Results {
		if r.ID == id {
			return r
		}
	}
	return Result{}
}

func assertPasses(t *testing.T, rep Report) {
	t.Helper()
	if rep.Failed() {
		var b bytes.Buffer
		rep.Write(&b, "bom-check")
		t.Fatalf("bom-check failed on a consistent tree:\n%s", b.String())
	}
}

func assertCheckPasses(t *testing.T, rep Report, id string, fragments ...string) {
	t.Helper()
	r := result(rep, id)
	if r.Status != Pass {
		t.Fatalf("check %s: %v %q (fix: %s); want it to pass", id, r.Status, r.Message, r.Fix)
	}
	for _, f := range fragments {
		if !strings.Contains(r.Message, f) {
			t.Errorf("check %s: %q lacks %q", id, r.Message, f)
		}
	}
}

func assertFails(t *testing.T, rep Report, id string, fragments ...string) {
	t.Helper()
	r := result(rep, id)
	if r.Status != Fail {
		var b bytes.Buffer
		rep.Write(&b, "bom-check")
		t.Fatalf("check %s did not fail:\n%s", id, b.String())
	}
	text := r.Message + " " + strings.Join(r.Files, " ") + " " + r.Fix
	for _, f := range fragments {
		if !strings.Contains(text, f) {
			t.Errorf("check %s: %q lacks %q", id, text, f)
		}
	}
}

func TestRealTreePasses(t *testing.T) {
	rep := check(t, realRoot(t))
	assertPasses(t, rep)
	if len(rep.Results) != len(Checks()) {
		t.Fatalf("%d results for %d checks", len(rep.Results), len(Checks()))
	}
	if rep.Substitute == "" {
		t.Error("the committed reconstruction data must be reported as a substitute")
	}
}

func fakeDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

const installerRepo = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev"
const daemonRepo = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev"

// bump pins installer v1.0.14 (and optionally its daemon v1.0.20). The
// facts file gives no v1.0.14 digests, so the test uses stand-ins: bom-check
// never resolves digests (release-check does).
func bump(t *testing.T, root string, daemonToo bool) {
	t.Helper()
	b := read(t, root, bom.RepoPath)
	b = strings.Replace(b, installerRepo+":v1.0.15@sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4", installerRepo+":v1.0.14@"+fakeDigest("installer v1.0.14"), 1)
	b = strings.Replace(b, "version: v1.0.15", "version: v1.0.14", 1)
	if daemonToo {
		b = strings.Replace(b, daemonRepo+":v1.0.21@sha256:8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d", daemonRepo+":v1.0.20@"+fakeDigest("daemon v1.0.20"), 1)
		b = strings.Replace(b, "version: v1.0.21", "version: v1.0.20", 1)
	}
	write(t, root, bom.RepoPath, b)
}

// regenerateTree does in-process what `go generate ./...` does: extract from
// the recorded source, then render the goldens against the fresh pins.
func regenerateTree(t *testing.T, root string) error {
	t.Helper()
	b, _, err := bom.LoadAll(filepath.Join(root, bom.RepoPath), filepath.Join(root, bom.ReleasesRepoPath))
	if err != nil {
		return err
	}
	spec, _ := extract.ParseSource(extract.SourceTestdata)
	res, err := extract.Run(context.Background(), extract.Config{Root: root, BOM: b, Source: spec})
	if err != nil {
		return err
	}
	code, err := emit.Go("tcpxo", res.Facts)
	if err != nil {
		return err
	}
	write(t, root, generated.FactsFile, string(code))
	in, err := shipped.LoadInputs(root)
	if err != nil {
		return err
	}
	in.Facts = *res.Facts
	rendered, err := pipeline.Render(root, in)
	if err != nil {
		return err
	}
	set := atomicfile.Set{}
	for rel, data := range rendered {
		set[filepath.Join(root, rel)] = data
	}
	_, err = set.Commit(0o644)
	return err
}

func TestScenarioBumpWithoutRegenerating(t *testing.T) {
	root := copyRepo(t)
	bump(t, root, true)
	rep := check(t, root)
	assertFails(t, rep, "generated-matches-bom", "v1.0.15", "v1.0.14", generated.FactsFile, bom.RepoPath, "go generate")
	assertFails(t, rep, "images-pinned-from-bom", "tcpgpudmarxd-dev:v1.0.21")
	if err := regenerateTree(t, root); err != nil {
		t.Fatal(err)
	}
	rep = check(t, root)
	assertPasses(t, rep)
	if !strings.Contains(read(t, root, runtimes.GoldenRuntime), "tcpgpudmarxd-dev:v1.0.20@") {
		t.Fatal("regenerated runtime does not pin the bumped daemon")
	}
}

func TestScenarioBumpKeepingDaemon(t *testing.T) {
	root := copyRepo(t)
	bump(t, root, false)
	if err := regenerateTree(t, root); err == nil || !strings.Contains(err.Error(), "v1.0.20") {
		t.Fatalf("regenerating with an unpaired daemon must fail naming the published pair, got %v", err)
	}
	rep := check(t, root)
	assertFails(t, rep, "daemon-is-published-pair", "v1.0.21", "v1.0.20", bom.ReleasesRepoPath)
}

func TestScenarioHandEditedGolden(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, runtimes.GoldenRuntime)
	edit(t, root, runtimes.GoldenRuntime, "value: WARN", "value: INFO")
	rep := check(t, root)
	assertFails(t, rep, "shipped-env-is-profile-plus-overrides", "env overridden: env NCCL_DEBUG (WARN -> INFO)", runtimes.GoldenRuntime)
	assertFails(t, rep, "generated-output-reproducible", runtimes.GoldenRuntime)
	write(t, root, runtimes.GoldenRuntime, orig)
	assertPasses(t, check(t, root))
}

func TestScenarioHandEditedGenerated(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, generated.FactsFile, `Value: "WARN"`, `Value: "INFO"`)
	rep := check(t, root)
	assertFails(t, rep, "generated-output-reproducible", generated.FactsFile, "hand-edited")
	if err := regenerateTree(t, root); err != nil {
		t.Fatal(err)
	}
	assertPasses(t, check(t, root))
}

func TestScenarioStaleOverride(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, bom.OverridesRepoPath)
	write(t, root, bom.OverridesRepoPath, orig+"  - name: NCCL_DEBUG\n    action: add\n    value: WARN\n    reason: copied from old notes\n")
	rep := check(t, root)
	assertFails(t, rep, "shipped-env-is-profile-plus-overrides", "NCCL_DEBUG", "now exports", bom.OverridesRepoPath)
	write(t, root, bom.OverridesRepoPath, orig)
	assertPasses(t, check(t, root))
}

func TestScenarioImageWithoutDigest(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, runtimes.GoldenComponents)
	edit(t, root, runtimes.GoldenComponents, "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830", "gke.gcr.io/pause:3.8")
	assertFails(t, check(t, root), "images-pinned-from-bom", "gke.gcr.io/pause:3.8", "not pinned by digest", runtimes.GoldenComponents)
	write(t, root, runtimes.GoldenComponents, orig)
	assertPasses(t, check(t, root))
}

func TestScenarioDaemonPinnedInOneManifestOnly(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, runtimes.GoldenRuntime)
	other := daemonRepo + ":v1.0.21@" + fakeDigest("another build")
	edit(t, root, runtimes.GoldenRuntime, daemonRepo+":v1.0.21@sha256:8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d", other)
	assertFails(t, check(t, root), "images-pinned-from-bom", other, "the BOM's daemon is", runtimes.GoldenRuntime)
	write(t, root, runtimes.GoldenRuntime, orig)
	assertPasses(t, check(t, root))
}

// Each remaining check is made to fail once.

func TestProfileFileMissingFails(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, generated.FactsFile, "\t\t\"a3plus_tuner_config.textproto\",\n", "")
	assertFails(t, check(t, root), "profile-files-shipped", "a3plus_tuner_config.textproto")
}

func TestUndecidedPublishedDifferenceFails(t *testing.T) {
	root := copyRepo(t)
	body := read(t, root, bom.OverridesRepoPath)
	i := strings.Index(body, "  - name: NCCL_NVLS_ENABLE")
	write(t, root, bom.OverridesRepoPath, body[:i])
	assertFails(t, check(t, root), "published-differences-decided", `NCCL_NVLS_ENABLE: published "1", profile unset`, bom.OverridesRepoPath)
}

func TestRetiredDaemonFlagFails(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, runtimes.GoldenRuntime, "- --num_hops=2", "- --num_hops=2\n                  - --num_nics=8")
	assertFails(t, check(t, root), "no-retired-daemon-flags", "--num_nics=8", "retired")
}

// The round-3 facts (NVCRE's catalog, daemon >= v1.0.21): --uid and
// --alsologtostderr are retired (an error is logged, no effect);
// --enforce_kernel_ipv6_support is rejected and the daemon exits before its
// receive path. The pinned daemon is v1.0.21, so each fails the check.
func TestDaemonFlagsOfV1021Fail(t *testing.T) {
	if tcpxo.DaemonVersion != "v1.0.21" {
		t.Skipf("the pinned daemon is %s; these cases are written for v1.0.21", tcpxo.DaemonVersion)
	}
	for _, tc := range []struct{ arg, want, fix string }{
		{"--uid=1000", "retired from daemon v1.0.21", "remove the retired flag"},
		{"--alsologtostderr", "the daemon logs an error; the flag has no effect", "remove the retired flag"},
		{"--enforce_kernel_ipv6_support=false", "the daemon exits before its receive path", "remove the rejected flag"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, runtimes.GoldenRuntime, "- --num_hops=2", "- --num_hops=2\n                  - "+tc.arg)
			assertFails(t, check(t, root), "no-retired-daemon-flags", tc.arg, tc.want, tc.fix, "--num_hops=2")
		})
	}
}

// The retired flags are release data: a flag added to bom/releases.yaml is
// enforced on the shipped daemon, and a malformed entry stops the check
// with the file, line and fix instead of letting every flag by.
func TestRetiredDaemonFlagsAreReleaseData(t *testing.T) {
	root := copyRepo(t)
	body := read(t, root, bom.ReleasesRepoPath)
	write(t, root, bom.ReleasesRepoPath, body+"  - {flag: --num_hops, from: v1.0.21, fatal: false, note: retired in this test, source: the test}\n")
	assertFails(t, check(t, root), "no-retired-daemon-flags", `"--num_hops=2" is retired in this test`, "remove the retired flag")

	root = copyRepo(t)
	edit(t, root, bom.ReleasesRepoPath, "    fatal: true\n", "")
	assertFails(t, check(t, root), "no-retired-daemon-flags", "cannot run", bom.ReleasesRepoPath+":", "retiredDaemonFlags[3].fatal is missing: say whether the daemon exits at start on the flag")
}

func TestTrainerVersionMismatchFails(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, "go.mod", "github.com/kubeflow/trainer/v2 v2.2.0", "github.com/kubeflow/trainer/v2 v2.3.0")
	assertFails(t, check(t, root), "trainer-version-matches-gomod", "v2.2.0", "v2.3.0", "go.mod")
}

func TestBenchmarkWiringDriftFails(t *testing.T) {
	root := copyRepo(t)
	orig := read(t, root, benchmark.GoldenPath)
	edit(t, root, benchmark.GoldenPath, "- name: NCCL_PROTO\n                    value: Simple,LL128", "- name: NCCL_PROTO\n                    value: Simple")
	assertFails(t, check(t, root), "benchmark-wiring-matches", "NCCL_PROTO", benchmark.GoldenPath)
	write(t, root, benchmark.GoldenPath, orig)
	os.Remove(filepath.Join(root, benchmark.GoldenPath))
	if r := result(check(t, root), "benchmark-wiring-matches"); r.Status != Empty {
		t.Fatalf("without a benchmark manifest the check must say it has nothing to compare, got %+v", r)
	}
}

// The gIB benchmark of each machine type is held to the gIB runtime it is
// derived from: an env value, a mount or the machine's affinity drifted in
// the benchmark fails, naming both goldens.
func TestGIBBenchmarkWiringDriftFails(t *testing.T) {
	for _, tc := range []struct {
		name, mt, from, to, want string
	}{
		// The first of each is the node container's (the launcher follows).
		{"env value", "a4-highgpu-8g", "- name: NCCL_IB_TC\n                    value: \"52\"", "- name: NCCL_IB_TC\n                    value: \"41\"", "NCCL_IB_TC"},
		{"tuner config of the other machine", "a3-ultragpu-8g", "value: /usr/local/gib/configs/tuner_config_a3u.txtpb", "value: /usr/local/gib/configs/tuner_config_a4.txtpb", "NCCL_TUNER_CONFIG_PATH"},
		{"payload mount", "a4-highgpu-8g", "                  - mountPath: /usr/local/gib\n                    name: gib\n                    readOnly: true\n", "", "/usr/local/gib"},
		{"affinity", "a3-ultragpu-8g", "                          - nvidia-h200-141gb", "                          - nvidia-h100-80gb", "nvidia-h100-80gb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyRepo(t)
			rel := runtimes.GoldenRDMABenchmark(tc.mt)
			edit(t, root, rel, tc.from, tc.to)
			assertFails(t, check(t, root), "benchmark-wiring-matches", tc.want, rel, runtimes.GoldenRDMARuntime(tc.mt))
		})
	}
}

func TestBenchmarkImageIsTheBOMInstaller(t *testing.T) {
	root := copyRepo(t)
	b, err := bom.Load(filepath.Join(root, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	edit(t, root, benchmark.GoldenPath, b.Images.Installer.Reference, "registry.example/nccl-tests:latest")
	assertFails(t, check(t, root), "images-pinned-from-bom", "registry.example/nccl-tests:latest", "not pinned by digest")
}

func TestDaemonInvocationMustRunTheImageScript(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, runtimes.GoldenRuntime, "                  command:\n                  - bash\n                  - /fts/entrypoint_rxdm_container.sh\n", "                  command:\n                  - /fts/entrypoint_rxdm_container.sh\n")
	assertFails(t, check(t, root), "daemon-invocation-runs-image-script", "mode 0644", "permission denied")
	root = copyRepo(t)
	edit(t, root, runtimes.GoldenRuntime, "                  - /fts/entrypoint_rxdm_container.sh\n", "                  - /fts/other.sh\n")
	assertFails(t, check(t, root), "daemon-invocation-runs-image-script", "does not run /fts/entrypoint_rxdm_container.sh")
}

func TestWorkerCUDAMajorMustMatchInstaller(t *testing.T) {
	root := copyRepo(t)
	edit(t, root, bom.RepoPath, "    cudaMajor: 12\n", "    cudaMajor: 13\n")
	assertFails(t, check(t, root), "worker-cuda-matches-installer", "libnccl-net.so needs libcudart.so.12, but the worker declares CUDA 13", "libcudart.so.12")
	// CUDA_VERSION is a recorded fact, not the rule.
	root = copyRepo(t)
	edit(t, root, generated.FactsFile, `CUDAVersion = "12.8.0"`, `CUDAVersion = "13.2.0"`)
	assertCheckPasses(t, check(t, root), "worker-cuda-matches-installer", "worker CUDA 12: libnccl-net.so needs libcudart.so.12")
	// The generated needs decide: a plugin needing libcudart.so.13 fails the CUDA 12 worker.
	root = copyRepo(t)
	edit(t, root, generated.FactsFile, `"libcudart.so.12"`, `"libcudart.so.13"`)
	assertFails(t, check(t, root), "worker-cuda-matches-installer", "needs libcudart.so.13, but the worker declares CUDA 12")
	// No libcudart needed: nothing binds the worker, and the check says the driver branch matters.
	root = copyRepo(t)
	edit(t, root, generated.FactsFile, `"libcudart.so.12", `, ``)
	edit(t, root, bom.RepoPath, "    cudaMajor: 12\n", "    cudaMajor: 13\n")
	assertCheckPasses(t, check(t, root), "worker-cuda-matches-installer", "no plugin library needs libcudart", "driver branch is what matters")
}

func TestUnreadableInputsFailEveryDependentCheck(t *testing.T) {
	root := copyRepo(t)
	os.Remove(filepath.Join(root, generated.FactsFile))
	rep := check(t, root)
	for _, id := range []string{"generated-matches-bom", "shipped-env-is-profile-plus-overrides", "profile-files-shipped", "generated-output-reproducible"} {
		assertFails(t, rep, id, "cannot run")
	}
}

// A gIB golden whose env lost a variable the installer's script exports,
// or whose payload mount moved, fails bom-check by the element and its
// published source, beside the byte-for-byte reproduction.
func TestGIBGoldenDefects(t *testing.T) {
	root := copyRepo(t)
	rel := runtimes.GoldenRDMARuntime("a4-highgpu-8g")
	orig := read(t, root, rel)
	edit(t, root, rel, "                  - name: NCCL_NET\n                    value: gIB\n", "")
	assertFails(t, check(t, root), "goldens-meet-requirements", "NCCL_NET", "set_nccl_env.sh", rel)
	write(t, root, rel, orig)
	edit(t, root, rel, "path: /home/kubernetes/bin/gib", "path: /opt/gib")
	assertFails(t, check(t, root), "goldens-meet-requirements", "volumes[name=gib]", "nccl-rdma-installer.yaml")
	write(t, root, rel, orig)
	edit(t, root, generated.GIBFactsFile, `Value: "gIB"`, `Value: "IB"`)
	assertFails(t, check(t, root), "shipped-env-keeps-the-fabric", "NCCL_NET")
}

func TestReleaseGate(t *testing.T) {
	root := realRoot(t)
	resolved := 0
	ok := func(context.Context, string) error { resolved++; return nil }
	rep := RunRelease(context.Background(), root, ReleaseOptions{Options: Options{Reproduce: pipeline.Reproduce}, Resolve: ok})
	// Both fabrics' data are named: gIB's reconstruction is only belief.
	assertFails(t, rep, "no-substitute-provenance", "substitute", "SOURCE=registry", generated.FactsFile, generated.GIBFactsFile+" was read from testdata/gib-installer/")
	if r := result(rep, "digests-resolve"); r.Status != Pass || resolved != len(Load(root, Options{}).BOM.ImageRoles()) {
		t.Fatalf("digests-resolve %+v after %d resolutions", r, resolved)
	}
	// Offline, resolution fails and the gate must say it cannot verify.
	rep = RunRelease(context.Background(), root, ReleaseOptions{Options: Options{Reproduce: pipeline.Reproduce}, Resolve: func(ctx context.Context, ref string) error {
		return headDigest(ctx, ref, imagesource.WithTransport(refuseAll{}))
	}})
	assertFails(t, rep, "digests-resolve", "cannot verify")
}

// BenchmarkBOMCheck measures the whole coupling check, re-extraction and
// re-rendering included, on the real tree (make bom-check's work).
func BenchmarkBOMCheck(b *testing.B) {
	wd, _ := os.Getwd()
	root, err := bom.FindRoot(wd)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if rep := Run(context.Background(), root, Options{Reproduce: pipeline.Reproduce}); rep.Failed() {
			b.Fatal("bom-check failed")
		}
	}
}

// TestOverrideCannotBreakTheFabric: a reviewed override with a reason is
// still refused when it breaks an enforced guest-config rule or a fabric
// setting (issue 10's reproduction: bom-check passed it 10 of 10).
func TestOverrideCannotBreakTheFabric(t *testing.T) {
	for _, tc := range []struct {
		name, override string
		want           []string
	}{
		{"socket interface", "  - {name: NCCL_SOCKET_IFNAME, action: replace, value: eth1, reason: x}\n", []string{"NCCL_SOCKET_IFNAME", "default profile"}},
		{"enforced protocol", "  - {name: NCCL_PROTO, action: replace, value: LL128, reason: x}\n", []string{"NCCL_PROTO", "enforces"}},
		{"transport added", "  - {name: NCCL_NET, action: add, value: Socket, reason: x}\n", []string{"NCCL_NET"}},
		{"GPU NICs removed", "  - {name: NCCL_FASTRAK_IFNAME, action: remove, reason: x}\n", []string{"NCCL_FASTRAK_IFNAME"}},
		{"enforced removed", "  - {name: NCCL_MIN_NCHANNELS, action: remove, reason: x}\n", []string{"NCCL_MIN_NCHANNELS", "enforces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, bom.OverridesRepoPath, "overrides:\n", "overrides:\n"+tc.override)
			assertFails(t, check(t, root), "shipped-env-keeps-the-fabric", tc.want...)
		})
	}
}

// TestGoldensMeetRequirements: a golden that lost a required element — as
// after a builder change and `go generate`, when every golden reproduces —
// fails the release gate naming the element, its published source and the
// file that ships it.
func TestGoldensMeetRequirements(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		fragments      []string
	}{
		{"daemon without NET_ADMIN", "                      - NET_ADMIN\n", "",
			[]string{"capabilities.add[NET_ADMIN] is absent", "gpudirect-tcpxo/nccl-test-unprivileged-without-hostnetwork.yaml", "runtimes/wiring.go"}},
		{"worker without the LLCM directory", "                  - name: NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY\n                    value: /dev/aperture_devices\n", "",
			[]string{"env[name=NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY] is absent", "gpudirect-tcpxo/nccl-test-unprivileged-without-hostnetwork.yaml", "bom/overrides.yaml"}},
		{"daemon privileged", "                    privileged: false\n", "                    privileged: true\n",
			[]string{"securityContext.privileged is \"true\", not \"false\""}},
		{"an unexplained capability", "                      - NET_BIND_SERVICE\n", "                      - NET_BIND_SERVICE\n                      - SYS_ADMIN\n",
			[]string{"capabilities.add[SYS_ADMIN]", "no requirement explains it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, runtimes.GoldenRuntime, c.old, c.new)
			assertFails(t, check(t, root), "goldens-meet-requirements", append(c.fragments, runtimes.GoldenRuntime)...)
		})
	}
}

// refuseAll is a transport with no network: every request fails.
type refuseAll struct{}

func (refuseAll) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("no network in this test: %s", r.URL.Host)
}

// TestReproducibleFailsWithoutAPipeline: a bom-check given no way to
// re-run the pipeline fails its reproducibility check instead of passing
// what it never compared.
func TestReproducibleFailsWithoutAPipeline(t *testing.T) {
	rep := Run(context.Background(), realRoot(t), Options{})
	assertFails(t, rep, "generated-output-reproducible", "cannot run", "no way to re-run the pipeline")
}
