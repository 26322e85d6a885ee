package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writers runs both entry points the same way.
var writers = map[string]func(path string, data []byte) error{
	"Write":  func(p string, d []byte) error { return Write(p, d, 0o644) },
	"Commit": func(p string, d []byte) error { _, err := (Set{p: d}).Commit(0o644); return err },
}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(dir, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "file")
			if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			linkToFIFO := filepath.Join(dir, "link-to-fifo")
			if err := os.Symlink("fifo", linkToFIFO); err != nil {
				t.Fatal(err)
			}
			for target, want := range map[string]string{
				fifo:                         "is a FIFO (named pipe)",
				linkToFIFO:                   "is a FIFO (named pipe)",
				sub:                          "is a directory",
				filepath.Join(file, "x.svg"): "is under a path that is not a directory",
			} {
				err := write(target, []byte("new"))
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
					t.Errorf("write to %s: %v; want a refusal saying %q", target, err, want)
				}
			}
			if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
				t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 4 {
				t.Errorf("a refused write left files behind: %v", entries)
			}
		})
	}
}

// A device node is refused. As root the test makes one in a temp dir (the
// old code replaced it, as it replaced /dev/full); otherwise it presents one
// through the lstat seam.
func TestRefusesADevice(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "full")
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := os.WriteFile(dev, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		lstat = func(p string) (fs.FileInfo, error) {
			fi, err := os.Lstat(p)
			if p == dev && err == nil {
				return charDevice{fi}, nil
			}
			return fi, err
		}
		t.Cleanup(func() { lstat = os.Lstat })
	}
	for name, write := range writers {
		err := write(dev, []byte("new"))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is a character device") {
			t.Errorf("%s to a device: %v; want a refusal", name, err)
		}
	}
	if fi, err := os.Lstat(dev); err != nil || (os.Geteuid() == 0 && fi.Mode().Type()&fs.ModeCharDevice == 0) {
		t.Errorf("the device node was replaced: %v %v", fi.Mode(), err)
	}
}

type charDevice struct{ fs.FileInfo }

func (c charDevice) Mode() fs.FileMode { return fs.ModeDevice | fs.ModeCharDevice | 0o666 }

// A symlink to a regular file is written through: the link stays a link and
// the file it names gets the content, atomically.
func TestWritesThroughSymlinks(t *testing.T) {
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			real := filepath.Join(dir, "real", "sbom.json")
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link.json")
			if err := os.Symlink(filepath.Join("real", "sbom.json"), link); err != nil {
				t.Fatal(err)
			}
			dangling := filepath.Join(dir, "dangling.json")
			if err := os.Symlink(filepath.Join("real", "new.json"), dangling); err != nil {
				t.Fatal(err)
			}
			for l, r := range map[string]string{link: real, dangling: filepath.Join(dir, "real", "new.json")} {
				if err := write(l, []byte("new")); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Lstat(l); err != nil || fi.Mode().Type() != fs.ModeSymlink {
					t.Errorf("%s is no longer a symlink: %v %v", l, fi.Mode(), err)
				}
				if b, err := os.ReadFile(r); err != nil || string(b) != "new" {
					t.Errorf("%s holds %q, %v; want the new content", r, b, err)
				}
			}
		})
	}
}

// A killed writer's temporaries are removed by the next write of the same
// file; a live writer's, and other files' temporaries, are not.
func TestSweepsStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "zz_generated.go")
	stale := filepath.Join(dir, ".zz_generated.go.tmp-1234")
	other := filepath.Join(dir, ".other.go.tmp-1234")
	lookalike := filepath.Join(dir, "zz_generated.go.tmp-1234")
	for _, p := range []string{stale, other, lookalike} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live, err := os.CreateTemp(dir, ".zz_generated.go.tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := syscall.Flock(int(live.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A day-old mtime on the live one: age is not what decides.
	old := time.Now().Add(-24 * time.Hour)
	if err := os.Chtimes(live.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("package tcpxo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed writer's temporary is still there: %v", err)
	}
	for _, p := range []string{other, lookalike, live.Name(), target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// The sweep runs even when the new content equals the old, which is the
// usual case for the run after a killed extract.
func TestSweepsWhenUnchanged(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "zz_generated.go")
	if err := os.WriteFile(target, []byte("same"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".zz_generated.go.tmp-42")
	if err := os.WriteFile(stale, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := Set{target: []byte("same")}.Commit(0o644)
	if err != nil || len(changed) != 0 {
		t.Fatalf("Commit = %v, %v; want nothing changed", changed, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale temporary survived an unchanged commit: %v", err)
	}
}
