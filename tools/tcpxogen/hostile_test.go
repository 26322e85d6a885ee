package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/ncclreportcmd"
)

// maxMessage bounds what a refusal may print: a hostile input is named,
// never echoed.
const maxMessage = 4 << 10

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// hostile holds the inputs every file flag is tried with: a FIFO (which
// hung every command), a character device (which filled memory or spun), a
// directory, and a sparse file past every input limit.
type hostile struct{ fifo, device, dir, huge string }

func newHostile(t *testing.T) hostile {
	t.Helper()
	dir := t.TempDir()
	h := hostile{fifo: filepath.Join(dir, "fifo"), dir: filepath.Join(dir, "sub"), huge: filepath.Join(dir, "huge")}
	if err := syscall.Mkfifo(h.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(h.huge)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk is used; past MaxLog, the largest input limit.
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat("/dev/zero"); err == nil && fi.Mode()&fs.ModeCharDevice != 0 {
		h.device = "/dev/zero"
	}
	return h
}

type hostileCase struct{ kind, path, want string }

func (h hostile) cases() []hostileCase {
	cs := []hostileCase{
		{"FIFO", h.fifo, "is a FIFO"},
		{"directory", h.dir, "is a directory"},
		{"oversized", h.huge, "is 2147483648 bytes"},
	}
	if h.device != "" {
		cs = append(cs, hostileCase{"device", h.device, "is a character device"})
	}
	return cs
}

// hostileLike makes at dst a file of path's kind.
func hostileLike(path, dst string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	switch t := fi.Mode().Type(); {
	case t&fs.ModeNamedPipe != 0:
		return syscall.Mkfifo(dst, 0o600)
	case t&fs.ModeCharDevice != 0:
		st := fi.Sys().(*syscall.Stat_t)
		return syscall.Mknod(dst, syscall.S_IFCHR|0o666, int(st.Rdev)) // root only
	case t.IsDir():
		return os.Mkdir(dst, 0o755)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := f.Truncate(fi.Size()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestHostileInputs runs every command that reads a file against each
// hostile input: each exits 2 with a bounded message naming the input.
func TestHostileInputs(t *testing.T) {
	root := repoRoot(t)
	h := newHostile(t)
	recipe := filepath.Join(root, "testdata", "recipes", "gke-h100.yaml")
	// A scratch root whose bom.yaml is a hostile file of the same kind as
	// path, made in place: the BOM is only ever read from inside bom/.
	dataRoot := func(t *testing.T, path string) string {
		r := t.TempDir()
		if err := os.WriteFile(filepath.Join(r, "go.mod"), []byte("module github.com/tcpxogen/tcpxogen\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(r, "bom"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{bom.ReleasesRepoPath, bom.OverridesRepoPath} {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(r, filepath.FromSlash(rel)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := hostileLike(path, filepath.Join(r, filepath.FromSlash(bom.RepoPath))); err != nil {
			t.Skipf("cannot make a %s inside a scratch bom/: %v", path, err)
		}
		return r
	}
	for name, args := range map[string]func(t *testing.T, path string) []string{
		"render runtime --values": func(_ *testing.T, p string) []string { return []string{"render", "runtime", "--values", p} },
		"check trainjob":          func(_ *testing.T, p string) []string { return []string{"check", "trainjob", p} },
		"nccl-report --log": func(t *testing.T, p string) []string {
			return []string{"nccl-report", "--log", p, "--out", t.TempDir()}
		},
		"nccl-report --sign-key": func(t *testing.T, p string) []string {
			return []string{"nccl-report", "--log", filepath.Join(root, "testdata", "nccl-logs", "healthy.log"), "--out", t.TempDir(), "--sign-key", p}
		},
		"verify --key": func(_ *testing.T, p string) []string {
			return []string{"verify", "--key", p, filepath.Join(root, "tools", "tcpxogen", "testdata", "evidence", "evidence.sigstore.json")}
		},
		"verify BUNDLE": func(_ *testing.T, p string) []string {
			return []string{"verify", "--key", filepath.Join(root, "internal", "evidence", "testdata", "ed25519.pub.pem"), p}
		},
		"validate --recipe": func(_ *testing.T, p string) []string { return []string{"validate", "--recipe", p, "--dry-run"} },
		"validate --kubeconfig": func(_ *testing.T, p string) []string {
			return []string{"validate", "--recipe", recipe, "--kubeconfig", p, "--dry-run", "--root", root}
		},
		"validate --trainer-manifests": func(_ *testing.T, p string) []string {
			return []string{"validate", "--recipe", recipe, "--trainer-manifests", p, "--dry-run", "--root", root}
		},
		"discover --kubeconfig":  func(_ *testing.T, p string) []string { return []string{"discover", "--kubeconfig", p} },
		"check cluster --recipe": func(_ *testing.T, p string) []string { return []string{"check", "cluster", "--recipe", p} },
		"render runtime --from-cluster --kubeconfig": func(_ *testing.T, p string) []string {
			return []string{"render", "runtime", "--from-cluster", "--kubeconfig", p}
		},
		"extract (bom.yaml)": func(t *testing.T, p string) []string {
			return []string{"extract", "--root", dataRoot(t, p), "--source", "testdata", "--cache-dir", ""}
		},
		"check (bom.yaml)": func(t *testing.T, p string) []string { return []string{"check", "--root", dataRoot(t, p)} },
	} {
		for _, c := range h.cases() {
			want := c.want
			t.Run(name+"/"+c.kind, func(t *testing.T) {
				var o, e bytes.Buffer
				code := cli.Main(context.Background(), args(t, c.path), cli.Streams{Out: &o, Err: &e}, commands())
				if code != cli.ExitUsage {
					t.Errorf("exit %d, want 2\nstdout: %.2000s\nstderr: %.2000s", code, o.String(), e.String())
				}
				if !strings.Contains(e.String(), want) {
					t.Errorf("stderr %.2000q lacks %q", e.String(), want)
				}
				// check prints its report before refusing the data files;
				// the refusal itself is bounded.
				if n := e.Len(); n > maxMessage {
					t.Errorf("stderr is %d bytes, more than %d", n, maxMessage)
				}
			})
		}
	}
}

// TestHostileOutputs: every command that writes a file refuses a target
// that is not a regular file (exit 2, the target untouched), writes through
// a symlink to a regular file, and a lost stdout is a failure (exit 1).
func TestHostileOutputs(t *testing.T) {
	root := repoRoot(t)
	log := filepath.Join(root, "testdata", "nccl-logs", "healthy.log")
	for name, tc := range map[string]struct {
		args func(target string) []string
		file string // the name written inside a directory flag, if any
	}{
		"sbom -o":           {args: func(p string) []string { return []string{"sbom", "--root", root, "-o", p} }},
		"nccl-report --out": {args: func(d string) []string { return []string{"nccl-report", "--log", log, "--out", d} }, file: ncclreportcmd.ReportFile},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := func() (string, string) { // the flag value, the file written
				if tc.file == "" {
					p := filepath.Join(dir, "out")
					return p, p
				}
				return dir, filepath.Join(dir, tc.file)
			}
			flag, file := target()
			run := func() (int, string) {
				var o, e bytes.Buffer
				code := cli.Main(context.Background(), tc.args(flag), cli.Streams{Out: &o, Err: &e}, commands())
				return code, e.String()
			}
			// A FIFO at the target: refused, left in place.
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
			if code, stderr := run(); code != cli.ExitUsage || !strings.Contains(stderr, "is a FIFO") || len(stderr) > maxMessage {
				t.Errorf("FIFO target: exit %d, want 2: %.1000s", code, stderr)
			}
			if fi, err := os.Lstat(file); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
				t.Errorf("the FIFO was replaced: %v", err)
			}
			// A directory at the target: refused.
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(file, 0o755); err != nil {
				t.Fatal(err)
			}
			if code, stderr := run(); code != cli.ExitUsage || !strings.Contains(stderr, "is a directory") {
				t.Errorf("directory target: exit %d, want 2: %.1000s", code, stderr)
			}
			// A symlink to a regular file: written through, the link kept.
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			real := filepath.Join(t.TempDir(), "real")
			if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, file); err != nil {
				t.Fatal(err)
			}
			if code, stderr := run(); code != cli.ExitOK {
				t.Errorf("symlink target: exit %d, want 0: %.1000s", code, stderr)
			}
			if fi, err := os.Lstat(file); err != nil || fi.Mode().Type() != fs.ModeSymlink {
				t.Errorf("the symlink was replaced: %v", err)
			}
			if b, err := os.ReadFile(real); err != nil || string(b) == "old" {
				t.Errorf("the linked file was not written: %q %v", b, err)
			}
		})
	}
	// A lost stdout fails the command that printed to it.
	for _, args := range [][]string{
		{"check", "--root", root},
		{"render", "components", "--root", root},
		{"sbom", "--root", root},
		{"nccl-report", "--log", log, "--out", t.TempDir()},
	} {
		var e bytes.Buffer
		if code := cli.Main(context.Background(), args, cli.Streams{Out: fullWriter{}, Err: &e}, commands()); code != cli.ExitFailure {
			t.Errorf("%q with stdout full: exit %d, want 1: %.500s", args, code, e.String())
		}
	}
}

// A data file linked to a file outside bom/ is refused, not read: before, a
// bom.yaml linked to a secret was echoed key by key in the errors.
func TestDataFileLinkedOutside(t *testing.T) {
	root := repoRoot(t)
	r := t.TempDir()
	if err := os.WriteFile(filepath.Join(r, "go.mod"), []byte("module github.com/tcpxogen/tcpxogen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(r, "bom"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{bom.RepoPath, bom.OverridesRepoPath} {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r, filepath.FromSlash(rel)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(t.TempDir(), "credentials.yaml")
	if err := os.WriteFile(secret, []byte("aws_secret_access_key: hunter2\ntoken: s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(r, filepath.FromSlash(bom.ReleasesRepoPath))); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "--root", r}, {"extract", "--root", r, "--source", "testdata", "--cache-dir", ""}, {"render", "components", "--root", r}} {
		var o, e bytes.Buffer
		code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, commands())
		all := o.String() + e.String()
		if code != cli.ExitUsage || !strings.Contains(all, "leads outside") || strings.Contains(all, "hunter2") || strings.Contains(all, "aws_secret_access_key") {
			t.Errorf("%q: exit %d, want 2, a refusal and nothing of the secret:\n%.2000s", args, code, all)
		}
	}
}

// --help is output (stdout, exit 0) for every command and subcommand, and
// lists its flags; a command without any says so rather than printing an
// empty list.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"extract", "--help"}, {"render", "--help"}, {"render", "runtime", "--help"},
		{"render", "components", "-h"}, {"check", "--help"}, {"check", "trainjob", "--help"}, {"sbom", "--help"},
		{"nccl-report", "--help"}, {"validate", "--help"}, {"demo", "--help"}, {"discover", "--help"}, {"check", "cluster", "--help"},
	} {
		var o, e bytes.Buffer
		code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, commands())
		if code != cli.ExitOK || o.Len() == 0 || e.Len() != 0 {
			t.Errorf("%q: exit %d, %d bytes of stdout, stderr %q; want 0 and the help on stdout", args, code, o.Len(), e.String())
		}
		if strings.HasSuffix(strings.TrimSpace(o.String()), "Flags:") {
			t.Errorf("%q prints an empty flag list:\n%s", args, o.String())
		}
	}
}

// A FIFO where the generated file belongs no longer hangs the commands that
// read it: sbom and extract refuse it (exit 2), check reports the checks it
// could not run (exit 1).
func TestGeneratedFileFIFO(t *testing.T) {
	root := repoRoot(t)
	r := t.TempDir()
	if err := os.WriteFile(filepath.Join(r, "go.mod"), []byte("module github.com/tcpxogen/tcpxogen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath} {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(r, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := filepath.Join(r, "generated", "tcpxo", "zz_generated.go")
	if err := os.MkdirAll(filepath.Dir(gen), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(gen, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"sbom", "--root", r}, cli.ExitUsage},
		{[]string{"extract", "--root", r, "--cache-dir", ""}, cli.ExitUsage},
		{[]string{"check", "--root", r}, cli.ExitFailure},
	} {
		var o, e bytes.Buffer
		code := cli.Main(context.Background(), tc.args, cli.Streams{Out: &o, Err: &e}, commands())
		if code != tc.code || !strings.Contains(o.String()+e.String(), "is a FIFO") {
			t.Errorf("%q: exit %d, want %d and the FIFO named:\n%.2000s%.2000s", tc.args, code, tc.code, o.String(), e.String())
		}
	}
}
