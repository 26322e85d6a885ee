package bumpcmd

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// maxMessage bounds a refusal: it names the flag or file and the fix, it
// does not echo input.
const maxMessage = 1 << 10

// treeDirs are the parts of the checkout bump reads and rewrites.
var treeDirs = []string{"go.mod", "bom", "generated", "runtimes", "docs", "testdata/installer", "testdata/daemon", "testdata/gib-installer", "testdata/gib-diagnostic", "validators/realize/testdata", "internal/emit/testdata"}

// scratch copies the checkout's parts into a temporary root, so no test
// touches the worktree's tracked files.
func scratch(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for _, part := range treeDirs {
		err := filepath.WalkDir(filepath.Join(src, part), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			to := filepath.Join(dst, rel)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				link, err := os.Readlink(p)
				if err != nil {
					return err
				}
				return os.Symlink(link, to)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func run(args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String(), e.String()
}

func edit(t *testing.T, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q", p, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unwritable makes p unwritable for this process: read-only for a user,
// immutable for root (who ignores modes); it skips where neither works.
func unwritable(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(p, 0o444); err != nil {
			t.Fatal(err)
		}
		return
	}
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s immutable as root (chattr +i: %v %s)", p, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
}

// TestBadInputWritesNothing: each refused bump exits 2 with a bounded
// message naming the flag or file and the fix, and leaves the tree as it was.
func TestBadInputWritesNothing(t *testing.T) {
	reg := registrytest.Start(t)
	for name, tc := range map[string]struct {
		prepare func(t *testing.T, root string)
		args    []string
		want    []string
	}{
		"unknown tag": {
			args: []string{"--installer", "v1.0.99", "--source", "testdata"},
			want: []string{`--installer "v1.0.99" is not a published installer in bom/releases.yaml`, "pick one of v1.0.17, v1.0.16"},
		},
		"manifests-only pair": {
			prepare: func(t *testing.T, root string) {
				edit(t, filepath.Join(root, bom.ReleasesRepoPath), "\npairs:\n", "\npairs:\n  - {date: 2026-09-01, installer: v1.0.18, daemon: v1.0.24, source: manifests}\n")
			},
			args: []string{"--installer", "v1.0.18", "--source", "testdata"},
			want: []string{"--installer v1.0.18", "from manifests only", "only a published pair may be pinned", "set its source: to release-notes"},
		},
		"--rollback to a newer pair": {
			args: []string{"--installer", "v1.0.16", "--source", "testdata", "--rollback"},
			want: []string{"--rollback: --installer v1.0.16 is not older than the pinned", "drop --rollback"},
		},
		"no installer": {
			args: []string{"--source", "testdata"},
			want: []string{"--installer is required"},
		},
		"--source garbage": {
			args: []string{"--installer", "v1.0.16", "--source", "garbage"},
			want: []string{`--source "garbage" is not registry, testdata, oci-layout:DIR`},
		},
		"--source substitute": {
			args: []string{"--installer", "v1.0.16", "--source", "mirror.example/tcpxo/installer@sha256:" + strings.Repeat("a", 64)},
			want: []string{"--source", "a substitute image cannot say which digest Google published", "use registry"},
		},
		"--source oci-layout of nothing": {
			args: []string{"--installer", "v1.0.16", "--source", "oci-layout:missing"},
			want: []string{"--source oci-layout:missing", "is not an OCI image layout", "crane pull --format=oci"},
		},
		"unresolvable digest": {
			// The BOM names a real registry that does not hold the tag.
			prepare: func(t *testing.T, root string) {
				p := filepath.Join(root, bom.RepoPath)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				local := strings.ReplaceAll(string(data), "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo", reg.Host+"/gce-ai-infra/gpudirect-tcpxo")
				if err := os.WriteFile(p, []byte(local), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"--installer", "v1.0.16", "--source", "registry", "--cache-dir", ""},
			want: []string{"--source registry: cannot resolve the digest of " + reg.Host + "/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.16", "gcloud auth configure-docker", "--source testdata", "nothing was written"},
		},
		"unwritable bom": {
			prepare: func(t *testing.T, root string) { unwritable(t, filepath.Join(root, bom.RepoPath)) },
			args:    []string{"--installer", "v1.0.16", "--source", "testdata"},
			want:    []string{"bom/bom.yaml is not writable", "make it writable", "nothing was written"},
		},
		"--summary a directory": {
			prepare: func(t *testing.T, root string) {
				if err := os.Mkdir(filepath.Join(root, "summary.md"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"--installer", "v1.0.16", "--source", "testdata", "--summary", "ROOT/summary.md"},
			want: []string{"--summary", "is a directory"},
		},
		"--dry-run with --summary": {
			args: []string{"--installer", "v1.0.16", "--source", "testdata", "--dry-run", "--summary", "ROOT/s.md"},
			want: []string{"--dry-run writes nothing, --summary FILE writes a file"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := scratch(t)
			if tc.prepare != nil {
				tc.prepare(t, root)
			}
			was := tree(t, root)
			args := []string{"bump", "--root", root}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "ROOT", root))
			}
			code, stdout, stderr := run(args...)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want 2\nstderr: %s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("a refused bump printed a summary: %.300s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if len(stderr) > maxMessage {
				t.Errorf("stderr is %d bytes, more than %d", len(stderr), maxMessage)
			}
			now := tree(t, root)
			if len(now) != len(was) {
				t.Errorf("%d files before, %d after", len(was), len(now))
			}
			for p, data := range was {
				if now[p] != data {
					t.Errorf("%s changed", p)
				}
			}
		})
	}
}

// TestBumpCommandWritesTheSummary: a complete bump exits 0, prints the
// summary and writes the same bytes to --summary.
func TestBumpCommandWritesTheSummary(t *testing.T) {
	root := scratch(t)
	out := filepath.Join(t.TempDir(), "summary.md")
	code, stdout, stderr := run("bump", "--root", root, "--installer", "v1.0.16", "--source", "testdata", "--cache-dir", t.TempDir(), "--summary", out)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, stderr, stdout)
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != stdout || !strings.Contains(stdout, "daemon v1.0.21 → v1.0.22") {
		t.Fatalf("--summary holds %d bytes, stdout %d; want the same summary", len(written), len(stdout))
	}
}

// TestBumpCommandExitsOneForMissingDecisions: the summary lists what to
// record and the command exits 1, naming the file.
func TestBumpCommandExitsOneForMissingDecisions(t *testing.T) {
	root := scratch(t)
	p := filepath.Join(root, bom.OverridesRepoPath)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "  - name: NCCL_NET_PLUGIN_TELEMETRY_MODE")
	if i < 0 {
		t.Fatal("bom/overrides.yaml no longer decides NCCL_NET_PLUGIN_TELEMETRY_MODE")
	}
	if err := os.WriteFile(p, data[:i], 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("bump", "--root", root, "--installer", "v1.0.17", "--source", "testdata", "--cache-dir", t.TempDir())
	if code != cli.ExitFailure {
		t.Fatalf("exit %d, want 1\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stderr, "1 decision to record in bom/overrides.yaml (NCCL_NET_PLUGIN_TELEMETRY_MODE)") ||
		!strings.Contains(stdout, "record the decision in `bom/overrides.yaml`") {
		t.Fatalf("stderr %q / summary do not list the missing decision", stderr)
	}
}

// TestRollbackNeedsTheFlag: the release-notes pair published just before the
// pinned one is refused without --rollback (exit 2, nothing written), and
// pinned with it, the summary's title saying so. The pairs are read from the
// scratch tree's bom/releases.yaml, not assumed.
func TestRollbackNeedsTheFlag(t *testing.T) {
	root := scratch(t)
	b, rel, err := bom.LoadAll(filepath.Join(root, bom.RepoPath), filepath.Join(root, bom.ReleasesRepoPath))
	if err != nil {
		t.Fatal(err)
	}
	cur, ok := rel.PairFor(b.Images.Installer.Version)
	if !ok {
		t.Fatalf("the pinned installer %s has no pair in bom/releases.yaml", b.Images.Installer.Version)
	}
	var older bom.Pair
	for _, inst := range rel.PublishedInstallers() { // newest first
		p, _ := rel.PairFor(inst)
		if p.Date < cur.Date && p.Source == bom.SourceReleaseNotes {
			older = p
			break
		}
	}
	if older.Installer == "" {
		t.Fatalf("no release-notes pair is older than the pinned %s", cur.Installer)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "installer", older.Installer)); err != nil {
		t.Skipf("no bundled reconstruction of %s to roll back to: %v", older.Installer, err)
	}

	was := tree(t, root)
	code, stdout, stderr := run("bump", "--root", root, "--installer", older.Installer, "--source", "testdata", "--cache-dir", t.TempDir())
	if code != cli.ExitUsage {
		t.Fatalf("without --rollback: exit %d, want 2\nstderr: %s", code, stderr)
	}
	for _, w := range []string{"--installer " + older.Installer + " (published " + older.Date + ") is older than the pinned " + cur.Installer + " (published " + cur.Date + ")", "add --rollback"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if stdout != "" || len(stderr) > maxMessage {
		t.Errorf("a refused bump printed %d bytes of summary and %d of message", len(stdout), len(stderr))
	}
	now := tree(t, root)
	for p, data := range was {
		if now[p] != data {
			t.Errorf("%s changed by a refused bump", p)
		}
	}

	code, stdout, stderr = run("bump", "--root", root, "--installer", older.Installer, "--source", "testdata", "--rollback", "--cache-dir", t.TempDir())
	if code != cli.ExitOK {
		t.Fatalf("with --rollback: exit %d, want 0 (bom-check passes and every decision is recorded)\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stdout, "**ROLL BACK**: installer "+older.Installer) {
		t.Errorf("the summary does not head the change as a roll back:\n%.600s", stdout)
	}
	if !strings.Contains(stdout, "--installer "+older.Installer+" --source testdata --rollback") {
		t.Errorf("the summary's title does not say it is a roll back:\n%.300s", stdout)
	}
	after, err := bom.Load(filepath.Join(root, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	if after.Images.Installer.Version != older.Installer || after.Images.Daemon.Version != older.Daemon {
		t.Errorf("after --rollback the BOM pins %s / %s, want %s / %s", after.Images.Installer.Version, after.Images.Daemon.Version, older.Installer, older.Daemon)
	}
}
