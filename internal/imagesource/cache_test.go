package imagesource

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// warmCache pulls pinned through a cache, reading only the layers listed.
func warmCache(t *testing.T, pinned, dir string, layers ...int) {
	t.Helper()
	src, err := Registry(pinned, WithCache(dir), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	for _, i := range layers {
		if _, err := readLayer(img, i); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
}

func TestWarmCacheMakesNoRequests(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 3)
	pinned := push(t, reg, "installer", want)
	dir := t.TempDir()

	// Cold: imagefs reads top-down and stops early; layer 0 is never read.
	var cold Stats
	src, err := Registry(pinned, WithCache(dir), WithStats(&cold), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	for _, i := range []int{2, 1} {
		if _, err := readLayer(img, i); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	if cold.Requests == 0 {
		t.Fatal("cold run made no requests")
	}
	d, _ := want.Digest()
	m, _ := want.Manifest()
	ls := layerDigests(t, want)
	wantEntries := []string{d.Hex, m.Config.Digest.Hex, ls[1].Hex, ls[2].Hex}
	slices.Sort(wantEntries)
	if got := cacheEntries(t, dir); !slices.Equal(got, wantEntries) {
		t.Errorf("cache holds %v, want manifest, config and the two read layers %v", got, wantEntries)
	}
	if cold.Bytes >= m.Layers[0].Size+m.Layers[1].Size+m.Layers[2].Size+m.Config.Size {
		t.Errorf("cold run fetched %d bytes: the unread layer must not be fetched", cold.Bytes)
	}
	checkCacheSound(t, dir)

	// Warm: every request would fail; none may be made.
	var warm Stats
	net := &offline{}
	src, err = Registry(pinned, WithCache(dir), WithTransport(net), WithStats(&warm), fast)
	if err != nil {
		t.Fatal(err)
	}
	img = mustImage(t, src)
	wantBlobs := compressed(t, want)
	for _, i := range []int{2, 1} {
		got, err := readLayer(img, i)
		if err != nil {
			t.Fatalf("warm layer %d: %v", i, err)
		}
		if !bytes.Equal(got, wantBlobs[i]) {
			t.Errorf("warm layer %d differs from the pushed layer", i)
		}
	}
	if s := warm.Snapshot(); s.Requests != 0 || s.Bytes != 0 || net.calls.Load() != 0 {
		t.Errorf("warm run: stats %+v, transport calls %d; want zero", s, net.calls.Load())
	}
	if p := src.Describe(); p.Digest != d.String() || p.Substituted {
		t.Errorf("warm provenance %+v", p)
	}

	// A layer never cached needs the network, and says so.
	_, err = readLayer(img, 0)
	mustContain(t, err, ls[0].String(), "network disabled")
}

func TestCorruptCacheEntryRefetchedOnline(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 2)
	pinned := push(t, reg, "installer", want)
	d, _ := want.Digest()
	m, _ := want.Manifest()
	ls := layerDigests(t, want)
	wantBlobs := compressed(t, want)

	for _, tc := range []struct {
		name string
		blob v1.Hash
	}{
		{"manifest", d},
		{"config", m.Config.Digest},
		{"layer", ls[1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			warmCache(t, pinned, dir, 0, 1)
			corrupt(t, cachePath(dir, tc.blob))

			var stats Stats
			src, err := Registry(pinned, WithCache(dir), WithStats(&stats), fast)
			if err != nil {
				t.Fatal(err)
			}
			img := mustImage(t, src)
			for i := range wantBlobs {
				got, err := readLayer(img, i)
				if err != nil {
					t.Fatalf("layer %d: %v", i, err)
				}
				if !bytes.Equal(got, wantBlobs[i]) {
					t.Errorf("layer %d differs", i)
				}
			}
			if stats.Requests == 0 {
				t.Error("corrupt entry was served without refetching")
			}
			// Refetched and re-cached, verified.
			checkCacheSound(t, dir)
			if _, err := os.Stat(cachePath(dir, tc.blob)); err != nil {
				t.Errorf("refetched %s not cached again: %v", tc.name, err)
			}
		})
	}
}

func TestCorruptCacheEntryOfflineFails(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 2)
	pinned := push(t, reg, "installer", want)
	d, _ := want.Digest()
	m, _ := want.Manifest()
	ls := layerDigests(t, want)

	for _, tc := range []struct {
		name    string
		blob    v1.Hash
		atImage bool
	}{
		{"manifest", d, true},
		{"config", m.Config.Digest, true},
		{"layer", ls[1], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			warmCache(t, pinned, dir, 0, 1)
			corrupt(t, cachePath(dir, tc.blob))

			src, err := Registry(pinned, WithCache(dir), WithTransport(&offline{}), fast)
			if err != nil {
				t.Fatal(err)
			}
			img, err := src.Image(context.Background())
			if !tc.atImage {
				if err != nil {
					t.Fatalf("Image: %v", err)
				}
				if _, err := readLayer(img, 0); err != nil {
					t.Errorf("intact cached layer: %v", err)
				}
				var got []byte
				got, err = readLayer(img, 1)
				if len(got) != 0 {
					t.Errorf("handed out %d bytes of a corrupt cache entry", len(got))
				}
			}
			mustContain(t, err, tc.blob.String(), "corrupt", "removed", "network disabled")
			if _, serr := os.Stat(cachePath(dir, tc.blob)); !os.IsNotExist(serr) {
				t.Errorf("corrupt cache entry still present (stat: %v)", serr)
			}
			checkCacheSound(t, dir)
		})
	}
}

func TestBlobClosedBeforeEOFIsNotCached(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 1)
	pinned := push(t, reg, "installer", want)
	dir := t.TempDir()
	src, err := Registry(pinned, WithCache(dir), fast)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := mustImage(t, src).Layers()
	rc, err := ls[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	h := layerDigests(t, want)[0]
	for _, n := range cacheEntries(t, dir) {
		if strings.Contains(n, h.Hex) {
			t.Errorf("partially read layer left %s in the cache", n)
		}
	}
}

func TestConcurrentSourcesShareCache(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 3)
	pinned := push(t, reg, "installer", want)
	wantBlobs := compressed(t, want)
	dir := t.TempDir()

	const runs = 4
	var wg sync.WaitGroup
	errs := make(chan error, runs*len(wantBlobs))
	for range runs {
		wg.Go(func() {
			src, err := Registry(pinned, WithCache(dir), fast)
			if err != nil {
				errs <- err
				return
			}
			img, err := src.Image(context.Background())
			if err != nil {
				errs <- err
				return
			}
			for i := range wantBlobs {
				got, err := readLayer(img, i)
				if err != nil {
					errs <- err
					continue
				}
				if !bytes.Equal(got, wantBlobs[i]) {
					errs <- io.ErrUnexpectedEOF
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent run: %v", err)
	}
	if got := len(cacheEntries(t, dir)); got != 2+len(wantBlobs) {
		t.Errorf("cache holds %d entries, want manifest + config + %d layers", got, len(wantBlobs))
	}
	checkCacheSound(t, dir)

	// And the result serves a warm run with no network.
	var stats Stats
	src, err := Registry(pinned, WithCache(dir), WithTransport(&offline{}), WithStats(&stats), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	for i := range wantBlobs {
		if _, err := readLayer(img, i); err != nil {
			t.Errorf("warm layer %d: %v", i, err)
		}
	}
	if stats.Requests != 0 {
		t.Errorf("warm run after concurrent fill made %d requests", stats.Requests)
	}
}

func TestStaleStagingFilesSwept(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 1)
	pinned := push(t, reg, "installer", want)
	dir := t.TempDir()
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(blobs, ".deadbeef.tmp-123")
	live := filepath.Join(blobs, ".cafef00d.tmp-456")
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	warmCache(t, pinned, dir, 0)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("abandoned staging file kept (stat: %v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("recent staging file of a possibly live run removed: %v", err)
	}
}

// Reading only the decompressed stream to EOF must still verify the blob
// and cache it: that is how imagefs consumes layers.
func TestUncompressedReadVerifiesAndCaches(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 1)
	pinned := push(t, reg, "installer", want)
	dir := t.TempDir()
	src, err := Registry(pinned, WithCache(dir), fast)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := mustImage(t, src).Layers()
	u, err := ls[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, u); err != nil {
		t.Fatalf("uncompressed read: %v", err)
	}
	u.Close()
	h := layerDigests(t, want)[0]
	if _, err := os.Stat(cachePath(dir, h)); err != nil {
		t.Errorf("layer read to EOF through Uncompressed was not cached: %v", err)
	}
	checkCacheSound(t, dir)
}
