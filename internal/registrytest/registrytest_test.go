package registrytest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestStartServesPushesAndLocatesBlobs(t *testing.T) {
	r := Start(t)
	if !strings.HasPrefix(r.Host, "127.0.0.1:") || r.Host == "127.0.0.1:0" {
		t.Fatalf("host %q is not a bound loopback address", r.Host)
	}
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.Ref("probe") + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push to test registry: %v", err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		h, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(r.BlobPath(h))
		if err != nil {
			t.Fatalf("BlobPath(%s): %v", h, err)
		}
		got, _, err := v1.SHA256(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if got != h {
			t.Errorf("BlobPath(%s) holds content hashing to %s", h, got)
		}
	}
	// The registry serves what it stores.
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := pulled.Digest(); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
}

func TestStartProcessStopEndsRegistry(t *testing.T) {
	root := filepath.Join(t.TempDir(), "storage")
	r, stop, err := StartProcess(root)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + r.Host + "/v2/"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("registry not answering: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/: %s", resp.Status)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("registry still answers after stop: %s", resp.Status)
	}
	if _, err := os.Stat(r.LogPath); !os.IsNotExist(err) {
		t.Errorf("private config/log directory survived stop (stat %s: %v)", r.LogPath, err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("storage root removed by stop: %v", err)
	}
}

// fatalRecorder captures Fatalf and ends the goroutine as testing.T does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Skipf(format string, args ...any) {
	f.msg = "SKIPPED: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingBinaryFailsWithInstallHint(t *testing.T) {
	old := binary
	binary = filepath.Join(t.TempDir(), "no-docker-registry")
	t.Cleanup(func() { binary = old })

	if _, _, err := StartProcess(t.TempDir()); err == nil || !strings.Contains(err.Error(), "apt-get install docker-registry") {
		t.Errorf("StartProcess error %v, want an install hint", err)
	}

	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(rec)
	}()
	<-done
	if !strings.Contains(rec.msg, "apt-get install docker-registry") || strings.HasPrefix(rec.msg, "SKIPPED") {
		t.Errorf("Start reported %q, want a fatal failure with an install hint", rec.msg)
	}
}
