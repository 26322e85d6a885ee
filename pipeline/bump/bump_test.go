package bump

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

// TestBumpTestdataToEachNewerPair is the offline rehearsal of issue 19's
// release flow on a copy of the checkout: v1.0.15 → v1.0.16 → v1.0.17, each
// leaving a tree bom-check passes, pinned by the reconstructions' digests
// and recorded as a substitute, with a summary that names what the release
// notes changed (the daemon pair, the new published entries and their
// decisions, the driver branch, the GKE floor, the dropped libcudart).
func TestBumpTestdataToEachNewerPair(t *testing.T) {
	root := copyCheckout(t)
	before, err := os.ReadFile(filepath.Join(root, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	passed := fmt.Sprintf("Passed: %d checks.", len(bomcheck.Checks()))
	for _, tc := range []struct {
		tag, daemon string
		want        []string
	}{
		{"v1.0.16", "v1.0.22", []string{
			"daemon v1.0.21 → v1.0.22",
			"| new entry | `LD_LIBRARY_PATH` | | `${LD_LIBRARY_PATH}:/usr/local/tcpxo/lib64` | pin (bom/overrides.yaml",
			"| new entry | `NCCL_NET_PLUGIN_TELEMETRY_MODE` | | `0` | follow-profile (bom/overrides.yaml, for v1.0.16, v1.0.17) |",
			"| driver branch (gpu-driver-version) | — | R580 **changed** |",
			"| GKE floor | — | 1.33.5-gke.1125000 **changed** |",
			"CUDA 12 (libnccl-net.so needs libcudart.so.12)",
			"**SUBSTITUTE**: the installer facts were read from `testdata/installer/v1.0.16@sha256:",
			"None: every difference from the published list has a decision.",
			passed,
		}},
		{"v1.0.17", "v1.0.23", []string{
			"daemon v1.0.22 → v1.0.23",
			"| `NCCL_NET_PLUGIN_TELEMETRY_MODE` | `0` | unset | follow-profile (bom/overrides.yaml, for v1.0.16, v1.0.17) |",
			"| driver branch (gpu-driver-version) | R580 | R595 **changed** |",
			"| GKE floor | 1.33.5-gke.1125000 | 1.33.5-gke.1125000 |",
			"| CUDA qualified | 12.8 | 13.2 **changed** |",
			"- `libnccl-net.so` no longer needs `libcudart.so.12`",
			"any CUDA major: no plugin library needs libcudart (the node's GPU driver branch is what matters: R595, GKE node flag gpu-driver-version=R595) **changed**",
			"None: every difference from the published list has a decision.",
			passed,
		}},
	} {
		res, err := Run(ctx, Config{Root: root, Installer: tc.tag, Source: mustSpec(t, "testdata"), CacheDir: t.TempDir()})
		if err != nil {
			t.Fatalf("bump %s: %v", tc.tag, err)
		}
		for _, f := range failures(res.Check) {
			t.Errorf("bump %s: bom-check FAIL %s: %s", tc.tag, f.ID, f.Message)
		}
		if !res.Complete() || len(res.Missing) > 0 {
			t.Errorf("bump %s: incomplete, missing %v", tc.tag, res.Missing)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Summary, w) {
				t.Errorf("bump %s: summary lacks %q\n%s", tc.tag, w, res.Summary)
			}
		}
		// The tree itself carries the pair, by digest, recorded as read
		// from the reconstruction.
		b, err := bom.Load(filepath.Join(root, bom.RepoPath))
		if err != nil {
			t.Fatal(err)
		}
		if b.Images.Installer.Version != tc.tag || b.Images.Daemon.Version != tc.daemon || b.Images.Installer.Digest() == "" || b.Images.Daemon.Digest() == "" {
			t.Fatalf("bump %s pinned %+v / %+v", tc.tag, b.Images.Installer, b.Images.Daemon)
		}
		raw, err := os.ReadFile(filepath.Join(root, generated.FactsFile))
		if err != nil {
			t.Fatal(err)
		}
		g, err := emit.Parse(generated.FactsFile, raw)
		if err != nil {
			t.Fatal(err)
		}
		if g.PluginVersion != tc.tag || !g.Provenance.Substituted || g.Provenance.Pinned != b.Images.Installer.Reference ||
			!strings.HasSuffix(g.Provenance.Read, "@"+b.Images.Installer.Digest()) {
			t.Fatalf("bump %s: generated provenance %+v does not record the substitute read of %s", tc.tag, g.Provenance, b.Images.Installer.Reference)
		}
	}
	// Only the four pinned scalars changed: comments, blank lines and order stay.
	after, err := os.ReadFile(filepath.Join(root, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	bl, al := strings.Split(string(before), "\n"), strings.Split(string(after), "\n")
	if len(bl) != len(al) {
		t.Fatalf("bom.yaml went from %d to %d lines", len(bl), len(al))
	}
	var changed []string
	for i := range bl {
		if bl[i] != al[i] {
			changed = append(changed, strings.TrimSpace(al[i]))
		}
	}
	if len(changed) != 4 || !strings.HasPrefix(changed[0], "reference: ") || changed[1] != "version: v1.0.17" || changed[3] != "version: v1.0.23" {
		t.Fatalf("bom.yaml lines changed: %q; want the installer's and the daemon's reference and version only", changed)
	}
}

// TestDryRunWritesNothing: --dry-run prints the same summary without
// touching the tree and without running bom-check.
func TestDryRunWritesNothing(t *testing.T) {
	root := copyCheckout(t)
	was := snapshot(t, root)
	res, err := Run(ctx, Config{Root: root, Installer: "v1.0.17", Source: mustSpec(t, "testdata"), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Check != nil {
		t.Error("a dry run ran bom-check")
	}
	for _, w := range []string{"daemon v1.0.21 → v1.0.23", "Not run: --dry-run", "- `bom/bom.yaml`", "- `generated/tcpxo/zz_generated.go`"} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("dry-run summary lacks %q\n%s", w, res.Summary)
		}
	}
	if now := snapshot(t, root); !equalTrees(was, now) {
		t.Fatal("--dry-run changed the tree")
	}
}

// TestMissingDecisionIsListed: a bump whose new differences have no
// recorded decision still writes the tree, lists each in the summary with
// the file to record it in, and is not complete (the command exits 1).
func TestMissingDecisionIsListed(t *testing.T) {
	root := copyCheckout(t)
	p := filepath.Join(root, bom.OverridesRepoPath)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the reviewed decision the v1.0.16 list needs.
	i := strings.Index(string(data), "  - name: NCCL_NET_PLUGIN_TELEMETRY_MODE")
	if i < 0 {
		t.Fatal("bom/overrides.yaml no longer decides NCCL_NET_PLUGIN_TELEMETRY_MODE; pick another scoped decision")
	}
	if err := os.WriteFile(p, data[:i], 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, Config{Root: root, Installer: "v1.0.16", Source: mustSpec(t, "testdata"), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete() || len(res.Missing) != 1 || res.Missing[0].Name != "NCCL_NET_PLUGIN_TELEMETRY_MODE" {
		t.Fatalf("missing %v, complete %v: want NCCL_NET_PLUGIN_TELEMETRY_MODE undecided", res.Missing, res.Complete())
	}
	want := "- `NCCL_NET_PLUGIN_TELEMETRY_MODE`: published `0`, profile unset: record the decision in `bom/overrides.yaml`"
	if !strings.Contains(res.Summary, want) || !strings.Contains(res.Summary, "FAIL published-differences-decided") {
		t.Fatalf("summary lacks %q or the failed check\n%s", want, res.Summary)
	}
	b, err := bom.Load(filepath.Join(root, bom.RepoPath))
	if err != nil || b.Images.Installer.Version != "v1.0.16" {
		t.Fatalf("the tree was not left bumped: %v %+v", err, b)
	}
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
