package imagefs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// memIndexes is an index store in memory, keyed as a cache keys it.
type memIndexes struct {
	mu     sync.Mutex
	data   map[string][]byte
	stores int
}

func (m *memIndexes) key(version string, d v1.Hash) string { return version + "/" + d.String() }

// indexedLayer gives a test layer a scan index in m.
type indexedLayer struct {
	*countingLayer
	m *memIndexes
}

func (l *indexedLayer) ScanIndex(version string) ([]byte, error) {
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return bytes.Clone(l.m.data[l.m.key(version, d)]), nil
}

func (l *indexedLayer) StoreScanIndex(version string, b []byte) error {
	d, err := l.Digest()
	if err != nil {
		return err
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	l.m.data[l.m.key(version, d)] = bytes.Clone(b)
	l.m.stores++
	return nil
}

// indexedImage is a testImage whose layers keep scan indexes in one store.
type indexedImage struct {
	*testImage
	m *memIndexes
}

func (i *indexedImage) Layers() ([]v1.Layer, error) {
	out := make([]v1.Layer, len(i.layers))
	for n, l := range i.layers {
		out[n] = &indexedLayer{countingLayer: l, m: i.m}
	}
	return out, nil
}

func (i *indexedImage) resetOpens() {
	for _, l := range i.layers {
		l.opens.Store(0)
	}
}

func (i *indexedImage) index(t *testing.T, n int) []byte {
	t.Helper()
	i.m.mu.Lock()
	defer i.m.mu.Unlock()
	b := i.m.data[i.m.key(IndexVersion, i.digest(t, n))]
	if b == nil {
		t.Fatalf("layer %d has no scan index", n)
	}
	return b
}

func (i *indexedImage) setIndex(t *testing.T, n int, b []byte) {
	t.Helper()
	i.m.mu.Lock()
	defer i.m.mu.Unlock()
	i.m.data[i.m.key(IndexVersion, i.digest(t, n))] = b
}

// indexFixture is a three-layer image whose wants sit in every layer: a
// profile in the top one, a symlink chain in the middle one, a whiteout and
// an opaque directory over the base.
func indexFixture(t *testing.T) *indexedImage {
	t.Helper()
	ti := imageOf(t,
		[]entry{file("etc/ssh/sshd_config", "Port 22\n"), file("old/gone", "x"), file("plugins/a.so", "A"), file("lib/libnccl.so.2.21.5", "ELF")},
		[]entry{dir("lib/"), symlink("lib/libnccl.so", "libnccl.so.2"), symlink("lib/libnccl.so.2", "libnccl.so.2.21.5"), whiteout("old", "gone"), opaque("plugins"), file("plugins/b.so", "B")},
		[]entry{file("scripts/profile.sh", "export A=1\n"), file("etc/ssh/sshd_config", "Port 222\n")},
	)
	return &indexedImage{testImage: ti, m: &memIndexes{data: map[string][]byte{}}}
}

var indexWants = []Want{
	{Path: "/scripts/profile.sh", Content: true},
	{Path: "/etc/ssh/sshd_config", Content: true},
	{Path: "/lib/libnccl.so", Content: true},
	{Path: "/plugins/b.so"},
}

func indexScan(t *testing.T, img v1.Image) *Result {
	t.Helper()
	res, err := Scan(context.Background(), img, append(slices.Clone(indexWants), Want{Path: "/old/gone"}), WithList("/plugins"))
	if m := wantMissing(t, err); !slices.Equal(m.Paths, []string{"/old/gone"}) {
		t.Fatalf("missing = %v, want /old/gone only", m.Paths)
	}
	return res
}

// compareResults holds a warm scan to the cold one on everything but cost.
func compareResults(t *testing.T, cold, warm *Result) {
	t.Helper()
	if diff := cmp.Diff(cold.Files, warm.Files); diff != "" {
		t.Errorf("files differ from the cold scan's (-cold +warm):\n%s", diff)
	}
	if diff := cmp.Diff(cold.Listings, warm.Listings); diff != "" {
		t.Errorf("listings differ from the cold scan's (-cold +warm):\n%s", diff)
	}
}

func TestWarmScanReadsIndexesOnly(t *testing.T) {
	img := indexFixture(t)
	cold := indexScan(t, img)
	// A read-ahead pass may have missed the chain's target and re-read
	// the base, extending its index: a fourth store.
	if cold.Stats.IndexedLayers != 0 || img.m.stores < 3 {
		t.Fatalf("cold: %d layers from indexes, %d indexes stored; want 0 and at least 3", cold.Stats.IndexedLayers, img.m.stores)
	}
	if got := fileData(t, cold, "/lib/libnccl.so"); got != "ELF" {
		t.Fatalf("libnccl.so = %q", got)
	}
	img.resetOpens()
	warm := indexScan(t, img)
	if got := img.opens(); !slices.Equal(got, []int32{0, 0, 0}) {
		t.Errorf("warm scan opened layers %v, want none", got)
	}
	if warm.Stats.IndexedLayers != 3 || warm.Stats.CompressedBytes != 0 || warm.Stats.ExpandedBytes != 0 {
		t.Errorf("warm stats = %+v, want 3 layers from indexes and no bytes read", warm.Stats)
	}
	compareResults(t, cold, warm)
}

// TestWarmScanNeedingMoreContentReadsThatLayerOnly: an index holds only the
// files earlier scans asked for; a scan wanting another one reads that layer
// (verified) and adds the file to its index.
func TestWarmScanNeedingMoreContentReadsThatLayerOnly(t *testing.T) {
	img := indexFixture(t)
	indexScan(t, img)
	img.resetOpens()
	want := []Want{{Path: "/plugins/b.so", Content: true}, {Path: "/scripts/profile.sh", Content: true}}
	res := mustScan(t, img, want) // twice: concurrently and one at a time
	if got := fileData(t, res, "/plugins/b.so"); got != "B" {
		t.Fatalf("b.so = %q", got)
	}
	if got := img.opens(); !slices.Equal(got, []int32{0, 1, 0}) {
		t.Errorf("opens = %v, want the middle layer once (the first run read it and extended its index)", got)
	}
	img.resetOpens()
	mustScan(t, img, want)
	if got := img.opens(); !slices.Equal(got, []int32{0, 0, 0}) {
		t.Errorf("after the index was extended: opens = %v, want none", got)
	}
}

// TestBadIndexIsRebuiltNeverTrusted covers every way a stored index can be
// wrong without being forged: each is detected, the layer is read (and
// verified) instead, and a good index replaces the bad one.
func TestBadIndexIsRebuiltNeverTrusted(t *testing.T) {
	base := indexFixture(t)
	indexScan(t, base)
	good := base.index(t, 2)
	otherLayers := base.index(t, 0)

	reversion := func(b []byte) []byte {
		// A well-formed index of another format version, checksum and all.
		x, err := decodeIndex(b, base.digest(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		enc := x.encode()
		body := bytes.Replace(enc[:len(enc)-32], []byte(IndexVersion), []byte("imagefs-scan-index-v0"), 1)
		return appendSum(body)
	}
	cases := map[string][]byte{
		"empty":                  {},
		"truncated to the magic": good[:len(indexMagic)],
		"truncated by one byte":  good[:len(good)-1],
		"half written":           good[:len(good)/2],
		"another layer's index":  otherLayers,
		"another format version": reversion(good),
		"garbage":                []byte(strings.Repeat("tcpxogen", 40)),
	}
	for i := 0; i < len(good); i += max(1, len(good)/23) {
		flipped := bytes.Clone(good)
		flipped[i] ^= 0x10
		cases[fmt.Sprintf("bit flipped at byte %d", i)] = flipped
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			img := indexFixture(t)
			cold := indexScan(t, img)
			img.setIndex(t, 2, bad)
			img.resetOpens()
			warm := indexScan(t, img)
			compareResults(t, cold, warm)
			if got := img.opens(); !slices.Equal(got, []int32{0, 0, 1}) {
				t.Errorf("opens = %v, want the top layer read again and the rest from their indexes", got)
			}
			if warm.Stats.IndexesRebuilt != 1 {
				t.Errorf("IndexesRebuilt = %d, want 1", warm.Stats.IndexesRebuilt)
			}
			if _, err := decodeIndex(img.index(t, 2), img.digest(t, 2)); err != nil {
				t.Errorf("the rebuilt index does not decode: %v", err)
			}
		})
	}
}

func appendSum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(body, sum[:]...)
}

// TestIndexDisagreeingWithItsLayerIsReplaced: a well-formed index of this
// layer whose table of contents is not the layer's (it lists a file the
// layer does not have, without its content). The scan needs that content,
// reads the layer, answers from the verified bytes, and replaces the index.
func TestIndexDisagreeingWithItsLayerIsReplaced(t *testing.T) {
	img := indexFixture(t)
	cold := indexScan(t, img)
	x, err := decodeIndex(img.index(t, 2), img.digest(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range x.toc {
		if e.name == "scripts/profile.sh" {
			x.toc[k].size = 99 // and its content dropped: the index cannot answer
			delete(x.content, k)
		}
	}
	img.setIndex(t, 2, x.encode())
	img.resetOpens()
	warm := indexScan(t, img)
	compareResults(t, cold, warm)
	if got := fileData(t, warm, "/scripts/profile.sh"); got != "export A=1\n" {
		t.Errorf("profile = %q, want the layer's own content", got)
	}
	if warm.Stats.IndexesRebuilt != 1 || img.opens()[2] != 1 {
		t.Errorf("IndexesRebuilt = %d, opens = %v: want the top layer read and its index replaced", warm.Stats.IndexesRebuilt, img.opens())
	}
	y, err := decodeIndex(img.index(t, 2), img.digest(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range y.toc {
		if e.name == "scripts/profile.sh" && e.size != int64(len("export A=1\n")) {
			t.Errorf("the replaced index still says %d bytes", e.size)
		}
	}
}

// TestRacingScansShareIndexes: many scans of one image at once, cold, all
// writing the same indexes; every scan answers right and every stored index
// decodes.
func TestRacingScansShareIndexes(t *testing.T) {
	img := indexFixture(t)
	want := indexScan(t, indexFixture(t))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			res, err := Scan(context.Background(), img, indexWants, WithList("/plugins"))
			if err != nil {
				errs <- err
				return
			}
			if diff := cmp.Diff(want.Files, res.Files); diff != "" {
				errs <- errors.New(diff)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for n := range 3 {
		if _, err := decodeIndex(img.index(t, n), img.digest(t, n)); err != nil {
			t.Errorf("layer %d: %v", n, err)
		}
	}
}

// TestIndexCountsAgainstTheLimits: a layer served from its index costs what
// reading it would, so a scan's verdict does not depend on the cache.
func TestIndexCountsAgainstTheLimits(t *testing.T) {
	img := indexFixture(t)
	cold := indexScan(t, img)
	lim := Limits{MaxExpandedBytes: cold.Stats.ExpandedBytes - 1}
	_, coldErr := Scan(context.Background(), indexFixture(t), indexWants, WithLimits(lim))
	_, warmErr := Scan(context.Background(), img, indexWants, WithLimits(lim))
	var le *LimitError
	if !errors.As(warmErr, &le) || fmt.Sprint(coldErr) != fmt.Sprint(warmErr) {
		t.Errorf("warm error = %v, want the cold one: %v", warmErr, coldErr)
	}
}

// wrongDigest is a layer whose manifest digest its bytes do not match.
type wrongDigest struct{ v1.Layer }

func (wrongDigest) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}, nil
}

// TestSeveralFailingLayersReportTheTopmost: with layers read ahead
// concurrently, whichever pass finishes first, the error is the topmost
// failing layer's, on every run.
func TestSeveralFailingLayersReportTheTopmost(t *testing.T) {
	img := image(t,
		layer(t, file("want", "base")),
		wrongDigest{layer(t, file("x", strings.Repeat("x", 1<<16)))},
		wrongDigest{layer(t, file("y", "y"))},
		layer(t, file("top", "t")),
	)
	var first string
	for n := range 20 {
		_, err := Scan(context.Background(), img, content("/want"), WithParallelism(4))
		var ie *IntegrityError
		if !errors.As(err, &ie) || ie.Layer != "layer 3/4" {
			t.Fatalf("run %d: error = %v, want the integrity error of layer 3/4", n, err)
		}
		if n == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("run %d: error %q differs from the first run's %q", n, err, first)
		}
	}
}
