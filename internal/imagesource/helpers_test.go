package imagesource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// fast keeps retry backoff out of test wall time.
var fast = withRetryDelay(time.Millisecond)

// testImage builds a linux/amd64 image of n random gzip layers.
func testImage(t *testing.T, n int) v1.Image {
	t.Helper()
	return testImageFor(t, n, "linux", "amd64")
}

func testImageFor(t *testing.T, n int, os, arch string) v1.Image {
	t.Helper()
	img := empty.Image
	for i := 0; i < n; i++ {
		l, err := random.Layer(int64(1024*(i+1)), types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = os, arch
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// push writes img to reg as repo:tag and returns the pinned
// repo:tag@digest reference.
func push(t *testing.T, reg *registrytest.Registry, repo string, img v1.Image) string {
	t.Helper()
	ref, err := name.NewTag(reg.Ref(repo) + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.String() + "@" + d.String()
}

// compressed returns the compressed bytes of every layer of img, newest
// last, as the original (unverified, in-memory) image has them.
func compressed(t *testing.T, img v1.Image) [][]byte {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var hs []v1.Hash
	for _, l := range m.Layers {
		hs = append(hs, l.Digest)
	}
	return hs
}

// readLayer drains layer i of img's compressed stream, as imagefs does.
func readLayer(img v1.Image, i int) ([]byte, error) {
	ls, err := img.Layers()
	if err != nil {
		return nil, err
	}
	rc, err := ls[i].Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func mustImage(t *testing.T, s Source) v1.Image {
	t.Helper()
	img, err := s.Image(context.Background())
	if err != nil {
		t.Fatalf("Image: %v", err)
	}
	return img
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	t.Logf("error (as expected): %v", err)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// cacheEntries lists the names in dir/blobs/sha256 (temp files included).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// checkCacheSound asserts every cache entry hashes to its name and no
// staging file was left behind.
func checkCacheSound(t *testing.T, dir string) {
	t.Helper()
	for _, n := range cacheEntries(t, dir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("staging file %s left in cache", n)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", n))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != n {
			t.Errorf("cache entry %s does not hash to its name", n)
		}
	}
}

func cachePath(dir string, h v1.Hash) string {
	return filepath.Join(dir, "blobs", "sha256", h.Hex)
}

// corrupt flips bytes in the middle of a file without changing its length.
func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	i := len(b) / 2
	b[i] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// offline fails every request, standing in for a machine without network.
type offline struct{ calls atomic.Int64 }

func (o *offline) RoundTrip(r *http.Request) (*http.Response, error) {
	o.calls.Add(1)
	return nil, fmt.Errorf("test transport: network disabled (%s %s)", r.Method, r.URL)
}

// proxy puts an httptest server in front of reg; handle may answer a
// request itself (return true) or let it through.
func proxy(t *testing.T, reg *registrytest.Registry, handle func(w http.ResponseWriter, r *http.Request) bool, modify func(*http.Response) error) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: reg.Host}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = modify
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if handle != nil && handle(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// rehost swaps the registry host of a pinned reference.
func rehost(ref, host string) string {
	_, rest, _ := strings.Cut(ref, "/")
	return host + "/" + rest
}

func digestOf(b []byte) v1.Hash {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h
}
