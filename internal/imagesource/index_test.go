package imagesource

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// fileLayer is a gzip layer holding one file per name=content pair.
func fileLayer(t *testing.T, kv ...string) v1.Layer {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: kv[i], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(kv[i+1]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(kv[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var gb bytes.Buffer
	zw := gzip.NewWriter(&gb)
	if _, err := zw.Write(tb.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(gb.Bytes(), types.OCILayer)
}

func indexTestImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image,
		fileLayer(t, "etc/base", "base", "filler", string(bytes.Repeat([]byte("x"), 64<<10))),
		fileLayer(t, "scripts/profile.sh", "export A=1\n"),
	)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

var indexWants = []imagefs.Want{{Path: "/etc/base", Content: true}, {Path: "/scripts/profile.sh", Content: true}}

// cachedScan opens pinned through the cache in dir and scans it.
func cachedScan(t *testing.T, pinned, dir string) (*imagefs.Result, Stats) {
	t.Helper()
	var st Stats
	src, err := Registry(pinned, WithCache(dir), WithStats(&st), fast)
	if err != nil {
		t.Fatal(err)
	}
	res, err := imagefs.Scan(context.Background(), mustImage(t, src), indexWants)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Files["/etc/base"].Data) != "base" || string(res.Files["/scripts/profile.sh"].Data) != "export A=1\n" {
		t.Fatalf("wrong content: %q, %q", res.Files["/etc/base"].Data, res.Files["/scripts/profile.sh"].Data)
	}
	return res, st.Snapshot()
}

func indexFile(dir string, h v1.Hash) string {
	return filepath.Join(dir, "index", imagefs.IndexVersion, h.Algorithm, h.Hex)
}

func TestWarmScanReadsOnlyIndexesAndMakesNoRequests(t *testing.T) {
	reg := registrytest.Start(t)
	img := indexTestImage(t)
	pinned := push(t, reg, "indexed", img)
	dir := t.TempDir()
	cold, coldNet := cachedScan(t, pinned, dir)
	if coldNet.Requests == 0 || cold.Stats.IndexedLayers != 0 {
		t.Fatalf("cold run: %d requests, %d layers from indexes", coldNet.Requests, cold.Stats.IndexedLayers)
	}
	ls := layerDigests(t, img)
	for _, h := range ls {
		if _, err := os.Stat(indexFile(dir, h)); err != nil {
			t.Errorf("no scan index for %s: %v", h, err)
		}
	}
	// The blobs may go: a warm scan does not read them.
	for _, h := range ls {
		if err := os.Remove(cachePath(dir, h)); err != nil {
			t.Fatal(err)
		}
	}
	warm, warmNet := cachedScan(t, pinned, dir)
	if warmNet.Requests != 0 || warm.Stats.IndexedLayers != 2 || warm.Stats.CompressedBytes != 0 {
		t.Errorf("warm run: %d requests, stats %+v; want none and both layers from indexes", warmNet.Requests, warm.Stats)
	}
}

// TestCorruptIndexOnDiskIsRebuilt: truncated, bit-flipped, emptied or
// half-written index files in the cache are never trusted: the layer is
// read from its (cached, verified) blob and the index written again.
func TestCorruptIndexOnDiskIsRebuilt(t *testing.T) {
	reg := registrytest.Start(t)
	img := indexTestImage(t)
	pinned := push(t, reg, "indexed", img)
	top := layerDigests(t, img)[1]
	damage := map[string]func([]byte) []byte{
		"truncated":    func(b []byte) []byte { return b[:len(b)-7] },
		"half written": func(b []byte) []byte { return b[:len(b)/2] },
		"emptied":      func([]byte) []byte { return nil },
		"bit flipped": func(b []byte) []byte {
			b = bytes.Clone(b)
			b[len(b)/3] ^= 0x01
			return b
		},
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cachedScan(t, pinned, dir)
			p := indexFile(dir, top)
			good, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f(good), 0o644); err != nil {
				t.Fatal(err)
			}
			res, net := cachedScan(t, pinned, dir)
			if res.Stats.IndexesRebuilt != 1 || res.Stats.IndexedLayers != 1 || net.Requests != 0 {
				t.Errorf("stats %+v, %d requests: want the damaged index rebuilt from the cached blob, the other used", res.Stats, net.Requests)
			}
			again, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, good) {
				t.Error("the rebuilt index differs from the one first written")
			}
		})
	}
}

// TestRacingIndexWritersNeverTearAnIndex: writers of different contents
// and readers of one index at once; every read is one whole written value.
func TestRacingIndexWritersNeverTearAnIndex(t *testing.T) {
	c := &cache{dir: t.TempDir()}
	h := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%064x", 7)}
	values := make([][]byte, 8)
	for i := range values {
		values[i] = bytes.Repeat([]byte{byte('a' + i)}, 256<<10)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := range values {
		wg.Go(func() {
			for range 10 {
				if err := c.writeIndex(imagefs.IndexVersion, h, values[i]); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				b, err := c.readIndex(imagefs.IndexVersion, h)
				if err != nil {
					errs <- err
					continue
				}
				if b != nil && !slices.ContainsFunc(values, func(v []byte) bool { return bytes.Equal(v, b) }) {
					errs <- fmt.Errorf("read a torn index of %d bytes", len(b))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(indexFile(c.dir, h)), ".*"))
	if err != nil || len(left) > 0 {
		t.Errorf("staging files left: %v %v", left, err)
	}
}

func TestIndexVersionMustBeAPlainName(t *testing.T) {
	c := &cache{dir: t.TempDir()}
	for _, v := range []string{"", "..", "a/b", `a\b`} {
		if err := c.writeIndex(v, v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%064x", 1)}, []byte("x")); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
}
