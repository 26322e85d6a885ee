package inputfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-fifo")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{fifo: "a FIFO (named pipe)", link: "a FIFO (named pipe)", dir: "a directory"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "a character device"
	}
	for path, want := range cases {
		// Without the check, the FIFO blocks and /dev/zero never ends: the
		// test would hang or run out of memory rather than fail.
		_, err := Read(path, Spec{What: "--log"})
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Read(%s) = %v, want ErrNotRegular", path, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "--log "+path+" is "+want) {
			t.Errorf("Read(%s) error %q, want it to name the flag, the path and %q", path, msg, want)
		}
	}
}

func TestSizeLimitStatesTheRealSize(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // sparse: no 100 MB written
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Read(big, Spec{What: "TrainJob file", Max: MaxTrainJob})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Read = %v, want ErrTooLarge", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "104857600 bytes (100.0 MiB)") || !strings.Contains(msg, "3145728 bytes (3.0 MiB) limit") {
		t.Errorf("error %q, want the real size and the limit", msg)
	}

	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, make([]byte, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(exact, Spec{Max: 10}); err != nil || len(b) != 10 {
		t.Errorf("Read of a file exactly at the limit = %d bytes, %v; want all of it", len(b), err)
	}
}

// A file that grows after it was opened is still cut at the limit.
func TestGrowthPastTheLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "growing.log")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, Spec{What: "--log", Max: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(f)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "64 bytes") {
		t.Errorf("ReadAll of a grown file = %v, want ErrTooLarge naming 64 bytes", err)
	}
}

func TestWithin(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "bom")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "secret")
	if err := os.WriteFile(secret, []byte("token: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(data, "real.yaml")
	if err := os.WriteFile(inside, []byte("a: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out.yaml": secret, "in.yaml": inside, "rel.yaml": "../secret"} {
		if err := os.Symlink(target, filepath.Join(data, name)); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{What: "bill of materials", Within: data}
	for _, name := range []string{"out.yaml", "rel.yaml"} {
		b, err := Read(filepath.Join(data, name), spec)
		if !errors.Is(err, ErrOutside) {
			t.Errorf("Read(%s) = %q, %v; want ErrOutside", name, b, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the refusal quotes the secret: %v", err)
		}
	}
	if b, err := Read(filepath.Join(data, "in.yaml"), spec); err != nil || string(b) != "a: 1\n" {
		t.Errorf("Read(in.yaml) = %q, %v; a link inside the directory is fine", b, err)
	}
	// Without Within, a user's own file may be a link anywhere.
	if _, err := Read(filepath.Join(data, "out.yaml"), Spec{What: "--values"}); err != nil {
		t.Errorf("Read without Within = %v", err)
	}
}

func TestMissingNamesTheInputOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Read(p, Spec{What: "--recipe"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read = %v, want ErrNotExist", err)
	}
	if msg := err.Error(); msg != "--recipe "+p+": no such file or directory" {
		t.Errorf("message %q", msg)
	}
}
