package imagefs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"
)

func TestTopLayerHitDoesNotOpenLowerLayers(t *testing.T) {
	img := imageOf(t,
		[]entry{file("scripts/nccl-env-profile.sh", "old")},
		[]entry{file("usr/bin/tool", "x")},
		[]entry{dir("scripts/"), file("scripts/nccl-env-profile.sh", "export A=1\n")},
	)
	res := mustScan(t, img, []Want{{Path: "/scripts/nccl-env-profile.sh", Content: true}})

	if got := fileData(t, res, "/scripts/nccl-env-profile.sh"); got != "export A=1\n" {
		t.Errorf("content = %q, want the top layer's", got)
	}
	if got := img.opens(); !slices.Equal(got, []int32{0, 0, 1}) {
		t.Errorf("Compressed() calls per layer = %v, want [0 0 1]", got)
	}
	f := res.Files["/scripts/nccl-env-profile.sh"]
	if f.Layer != img.digest(t, 2) || f.Resolved != "/scripts/nccl-env-profile.sh" || f.Size != 11 || f.Mode != 0o644 {
		t.Errorf("file = %+v, want top layer, resolved to itself, 11 bytes, mode 0644", f)
	}
	if res.Stats.LayersRead != 1 || res.Stats.LayersTotal != 3 {
		t.Errorf("stats = %+v, want 1 of 3 layers read", res.Stats)
	}
}

func TestFileInBaseLayer(t *testing.T) {
	img := imageOf(t,
		[]entry{file("etc/os-release", "ID=ubuntu\n")},
		[]entry{file("a", "1")},
		[]entry{file("b", "2")},
	)
	res := mustScan(t, img, content("/etc/os-release"))
	if got := fileData(t, res, "/etc/os-release"); got != "ID=ubuntu\n" {
		t.Errorf("content = %q", got)
	}
	if res.Files["/etc/os-release"].Layer != img.digest(t, 0) {
		t.Errorf("layer = %s, want the base", res.Files["/etc/os-release"].Layer)
	}
	if got := img.opens(); !slices.Equal(got, []int32{1, 1, 1}) {
		t.Errorf("opens = %v, want every layer once", got)
	}
}

func TestMetadataOnlyWantHasNoData(t *testing.T) {
	img := imageOf(t, []entry{file("plugins/libnccl-net.so", "ELF...")})
	res := mustScan(t, img, []Want{{Path: "/plugins/libnccl-net.so"}})
	f := res.Files["/plugins/libnccl-net.so"]
	if f == nil || f.Data != nil || f.Size != 6 {
		t.Errorf("file = %+v, want size 6 and no data", f)
	}
}

func TestEmptyFileWithContentHasNonNilData(t *testing.T) {
	img := imageOf(t, []entry{file("empty", "")})
	res := mustScan(t, img, content("/empty"))
	if f := res.Files["/empty"]; f.Data == nil || len(f.Data) != 0 {
		t.Errorf("data = %#v, want empty non-nil", f.Data)
	}
}

func TestEntryNamesAreNormalized(t *testing.T) {
	for _, name := range []string{"./scripts/a.sh", "scripts/a.sh", "/scripts/a.sh", "scripts//x/../a.sh"} {
		t.Run(name, func(t *testing.T) {
			img := imageOf(t, []entry{file(name, "ok")})
			res := mustScan(t, img, content("/scripts/a.sh"))
			if got := fileData(t, res, "/scripts/a.sh"); got != "ok" {
				t.Errorf("content = %q", got)
			}
		})
	}
}

func TestNormalizedNameInUpperLayerOverridesLower(t *testing.T) {
	img := imageOf(t,
		[]entry{file("scripts/a.sh", "lower")},
		[]entry{file("./scripts/a.sh", "upper")},
	)
	res := mustScan(t, img, content("/scripts/a.sh"))
	if got := fileData(t, res, "/scripts/a.sh"); got != "upper" {
		t.Errorf("content = %q, want upper", got)
	}
}

func TestLastDuplicateEntryInALayerWins(t *testing.T) {
	img := imageOf(t, []entry{file("a", "first"), file("a", "second")})
	res := mustScan(t, img, content("/a"))
	if got := fileData(t, res, "/a"); got != "second" {
		t.Errorf("content = %q, want second", got)
	}
}

func TestWhiteoutHidesLowerFileAndStopsScanning(t *testing.T) {
	img := imageOf(t,
		[]entry{file("scripts/old.sh", "gone")},
		[]entry{whiteout("scripts", "old.sh")},
		[]entry{file("scripts/new.sh", "here")},
	)
	res, err := scan(t, img, content("/scripts/old.sh", "/scripts/new.sh"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/scripts/old.sh"}) {
		t.Errorf("missing = %v", m.Paths)
	}
	if !strings.Contains(m.Reasons["/scripts/old.sh"], "whiteout") {
		t.Errorf("reason = %q, want it to name the whiteout", m.Reasons["/scripts/old.sh"])
	}
	if got := fileData(t, res, "/scripts/new.sh"); got != "here" {
		t.Errorf("found file content = %q", got)
	}
	if got := img.opens(); got[0] != 0 {
		t.Errorf("opens = %v: the base must not be read once the whiteout settled the want", got)
	}
}

func TestWhiteoutOfDirectoryHidesEverythingBelowIt(t *testing.T) {
	img := imageOf(t,
		[]entry{file("opt/pkg/lib/x.so", "x")},
		[]entry{whiteout("opt", "pkg")},
	)
	_, err := scan(t, img, content("/opt/pkg/lib/x.so"))
	m := wantMissing(t, err)
	if got := m.Reasons["/opt/pkg/lib/x.so"]; got != "/opt/pkg: deleted by a whiteout in layer 2/2" {
		t.Errorf("reason = %q, want the whiteout of /opt/pkg", got)
	}
	if img.opens()[0] != 0 {
		t.Error("base layer read although the whiteout settled the want")
	}
}

func TestDirectoryRecreatedAfterWhiteoutShowsOnlyNewEntries(t *testing.T) {
	img := imageOf(t,
		[]entry{file("d/old", "old")},
		[]entry{whiteout("", "d")},
		[]entry{file("d/new", "new")},
	)
	res, err := scan(t, img, content("/d/old", "/d/new"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/d/old"}) {
		t.Errorf("missing = %v, want /d/old", m.Paths)
	}
	if fileData(t, res, "/d/new") != "new" {
		t.Error("recreated directory lost its new entry")
	}
}

func TestWhiteoutDoesNotHideSameLayerEntry(t *testing.T) {
	img := imageOf(t,
		[]entry{file("a", "lower")},
		[]entry{file("a", "same layer"), whiteout("", "a")},
	)
	res := mustScan(t, img, content("/a"))
	if got := fileData(t, res, "/a"); got != "same layer" {
		t.Errorf("content = %q", got)
	}
}

func TestOpaqueDirectoryHidesLowerContents(t *testing.T) {
	img := imageOf(t,
		[]entry{file("d/a", "a"), file("d/sub/c", "c")},
		[]entry{dir("d/"), opaque("d"), file("d/b", "b")},
	)
	res, err := scan(t, img, content("/d/a", "/d/sub/c", "/d/b"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/d/a", "/d/sub/c"}) {
		t.Errorf("missing = %v", m.Paths)
	}
	if !strings.Contains(m.Reasons["/d/a"], "opaque directory /d") {
		t.Errorf("reason = %q", m.Reasons["/d/a"])
	}
	if fileData(t, res, "/d/b") != "b" {
		t.Error("same-layer sibling of the opaque marker lost")
	}
	if img.opens()[0] != 0 {
		t.Error("base layer read below an opaque directory")
	}
}

func TestParentReplacedByFileHidesLowerChildren(t *testing.T) {
	img := imageOf(t,
		[]entry{file("d/a", "a")},
		[]entry{file("d", "now a file")},
	)
	_, err := scan(t, img, content("/d/a"))
	m := wantMissing(t, err)
	if !strings.Contains(m.Reasons["/d/a"], "not a directory") {
		t.Errorf("reason = %q", m.Reasons["/d/a"])
	}
	if img.opens()[0] != 0 {
		t.Error("base layer read although /d is a file above it")
	}
}

func TestParentReplacedByNonDirectoryStaysHiddenUnderANewerDirectory(t *testing.T) {
	img := imageOf(t,
		[]entry{file("d/a", "a")},
		[]entry{symlink("d", "/elsewhere")},
		[]entry{dir("d/"), file("d/b", "b")},
	)
	res, err := scan(t, img, content("/d/a", "/d/b"), WithList("/d"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/d/a"}) || !strings.Contains(m.Reasons["/d/a"], "/d is not a directory in layer 2/3") {
		t.Errorf("missing = %v %v, want /d/a hidden by the symlink in layer 2", m.Paths, m.Reasons)
	}
	if l := res.Listings["/d"]; !slices.Equal(l.Entries, []string{"b"}) || !l.Complete {
		t.Errorf("listing = %+v, want [b], complete", l)
	}
	if img.opens()[0] != 0 {
		t.Error("base layer read below a replaced directory")
	}
}

func TestWantedDirectoryOrDeviceIsMissing(t *testing.T) {
	img := imageOf(t, []entry{
		dir("d/"),
		{name: "dev/null", typ: tar.TypeChar, mode: 0o666},
		{name: "run/fifo", typ: tar.TypeFifo, mode: 0o600},
	})
	_, err := scan(t, img, content("/d", "/dev/null", "/run/fifo"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/d", "/dev/null", "/run/fifo"}) {
		t.Errorf("missing = %v", m.Paths)
	}
	if !strings.Contains(m.Reasons["/d"], "is a directory") || !strings.Contains(m.Reasons["/dev/null"], "not a regular file") {
		t.Errorf("reasons = %v", m.Reasons)
	}
}

func TestDeviceInUpperLayerReplacesLowerFile(t *testing.T) {
	img := imageOf(t,
		[]entry{file("x", "file")},
		[]entry{{name: "x", typ: tar.TypeFifo, mode: 0o600}},
	)
	_, err := scan(t, img, content("/x"))
	wantMissing(t, err)
}

func TestMissingErrorListsEveryPathSorted(t *testing.T) {
	img := imageOf(t, []entry{file("present", "p")}, []entry{file("other", "o")})
	res, err := scan(t, img, content("/z/missing", "/present", "/a/missing"))
	m := wantMissing(t, err)
	if !slices.Equal(m.Paths, []string{"/a/missing", "/z/missing"}) {
		t.Errorf("paths = %v, want sorted", m.Paths)
	}
	want := "has no /a/missing, /z/missing (searched 2 of 2 layers)"
	if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "image sha256:") {
		t.Errorf("error = %q, want image digest and %q", err, want)
	}
	if res == nil || fileData(t, res, "/present") != "p" {
		t.Error("the result must come with the missing error and hold what was found")
	}
}

func TestImageWithoutLayersHasNothing(t *testing.T) {
	img := image(t)
	_, err := scan(t, img, content("/a"))
	m := wantMissing(t, err)
	if m.LayersTotal != 0 || !slices.Equal(m.Paths, []string{"/a"}) {
		t.Errorf("missing = %+v", m)
	}
}

func TestHardLinkInSameLayer(t *testing.T) {
	img := imageOf(t, []entry{file("bin/perl5.36", "perl"), hardlink("bin/perl", "bin/perl5.36")})
	res := mustScan(t, img, content("/bin/perl"))
	f := res.Files["/bin/perl"]
	if string(f.Data) != "perl" || f.Size != 4 || f.Resolved != "/bin/perl" {
		t.Errorf("file = %+v", f)
	}
}

func TestHardLinkToLowerLayer(t *testing.T) {
	img := imageOf(t,
		[]entry{file("usr/lib/libx.so.1", "libx")},
		[]entry{hardlink("opt/libx.so", "usr/lib/libx.so.1")},
	)
	res := mustScan(t, img, content("/opt/libx.so"))
	f := res.Files["/opt/libx.so"]
	if string(f.Data) != "libx" || f.Layer != img.digest(t, 0) {
		t.Errorf("file = %+v, want content from the base layer", f)
	}
}

func TestHardLinkSeesItsOwnLayerNotNewerReplacement(t *testing.T) {
	img := imageOf(t,
		[]entry{file("a", "original")},
		[]entry{hardlink("b", "a")},
		[]entry{file("a", "replaced later")},
	)
	res := mustScan(t, img, content("/a", "/b"))
	if fileData(t, res, "/b") != "original" || fileData(t, res, "/a") != "replaced later" {
		t.Errorf("a = %q, b = %q", res.Files["/a"].Data, res.Files["/b"].Data)
	}
}

func TestBrokenHardLinkIsAnError(t *testing.T) {
	img := imageOf(t, []entry{hardlink("b", "nowhere")})
	_, err := scan(t, img, content("/b"))
	if err == nil || !strings.Contains(err.Error(), "hard link /b") || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("error = %v, want a corrupt hard link error", err)
	}
}

func TestDuplicateWantsMerge(t *testing.T) {
	img := imageOf(t, []entry{file("a", "data")})
	res := mustScan(t, img, []Want{{Path: "/a"}, {Path: "/a", Content: true}})
	if fileData(t, res, "/a") != "data" {
		t.Error("a duplicate with Content must get the content")
	}
}

func TestFilesResolvingToTheSameFileDoNotShareBuffers(t *testing.T) {
	img := imageOf(t, []entry{file("lib/real", "abc"), symlink("lib/l1", "real"), symlink("lib/l2", "real")})
	res := mustScan(t, img, content("/lib/l1", "/lib/l2"))
	if fileData(t, res, "/lib/l1") != "abc" {
		t.Fatalf("l1 = %q", res.Files["/lib/l1"].Data)
	}
	res.Files["/lib/l1"].Data[0] = 'X'
	if got := fileData(t, res, "/lib/l2"); got != "abc" {
		t.Errorf("l2 = %q after changing l1's data", got)
	}
}

func TestZstdAndUncompressedLayers(t *testing.T) {
	plain := tarBytes(t, file("plain", "p"))
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zst := enc.EncodeAll(tarBytes(t, file("zst", "z")), nil)
	img := image(t,
		static.NewLayer(plain, types.OCIUncompressedLayer),
		static.NewLayer(zst, types.OCILayerZStd),
	)
	res := mustScan(t, img, content("/plain", "/zst"))
	if fileData(t, res, "/plain") != "p" || fileData(t, res, "/zst") != "z" {
		t.Errorf("files = %v", res.Files)
	}
}

func TestStatsCountCompressedBytesFetched(t *testing.T) {
	img := imageOf(t, []entry{file("base", "b")}, []entry{file("mid", "m")}, []entry{file("top", "t")})
	res := mustScan(t, img, content("/mid"))
	var want int64
	for _, l := range img.layers[1:] {
		sz, _ := l.Size()
		want += sz
	}
	if res.Stats.CompressedBytes != want {
		t.Errorf("CompressedBytes = %d, want %d (the two layers read)", res.Stats.CompressedBytes, want)
	}
	if res.Stats.ExpandedBytes < 2*1024 {
		t.Errorf("ExpandedBytes = %d, want at least two tar streams", res.Stats.ExpandedBytes)
	}
}

func TestInvalidArguments(t *testing.T) {
	img := imageOf(t, []entry{file("a", "a")})
	cases := map[string]struct {
		wants []Want
		opts  []Option
		msg   string
	}{
		"no wants":         {nil, nil, "no files wanted"},
		"relative want":    {[]Want{{Path: "scripts/a"}}, nil, "must be absolute"},
		"unclean want":     {[]Want{{Path: "/scripts/../a"}}, nil, "must be absolute, clean"},
		"root want":        {[]Want{{Path: "/"}}, nil, "not the root"},
		"relative list":    {content("/a"), []Option{WithList("plugins")}, "WithList"},
		"negative limit":   {content("/a"), []Option{WithLimits(Limits{MaxFileBytes: -1})}, "Limits.MaxFileBytes is -1"},
		"negative symlink": {content("/a"), []Option{WithLimits(Limits{MaxSymlinkHops: -2})}, "Limits.MaxSymlinkHops is -2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := scan(t, img, tc.wants, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error = %v, want it to contain %q", err, tc.msg)
			}
			if img.opens()[0] != 0 {
				t.Error("invalid arguments must be rejected before reading")
			}
		})
	}
}

func TestZeroLimitsMeanDefaults(t *testing.T) {
	got, err := Limits{MaxFileBytes: 7}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultLimits()
	want.MaxFileBytes = 7
	if got != want {
		t.Errorf("limits = %+v, want %+v", got, want)
	}
}

func TestProgressPrintsOneLinePerLayerAndASummary(t *testing.T) {
	img := imageOf(t, []entry{file("base", "b")}, []entry{file("top", "t")})
	var out bytes.Buffer
	if _, err := Scan(context.Background(), img, content("/base"), WithProgress(&out)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("progress = %q, want 3 lines", out.String())
	}
	top := img.digest(t, 1).String()
	if !strings.HasPrefix(lines[0], "reading layer 2/2 "+top[:len("sha256:")+12]+"… ") || !strings.HasSuffix(lines[0], " B") {
		t.Errorf("first line = %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "reading layer 1/2 ") {
		t.Errorf("second line = %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "read 2 of 2 layers: ") {
		t.Errorf("summary = %q", lines[2])
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1200: "1.2 kB", 1_234_567: "1.2 MB", 3 << 30: "3.2 GB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCancelledContextReadsNothing(t *testing.T) {
	img := imageOf(t, []entry{file("a", "a")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Scan(ctx, img, content("/a"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if img.opens()[0] != 0 {
		t.Error("a cancelled scan opened a layer")
	}
}

// cancellingLayer cancels the scan's context once its stream has been read
// from, standing in for a user pressing ^C mid-download, and counts the
// bytes it served after that.
type cancellingLayer struct {
	v1.Layer
	cancel context.CancelFunc
	served atomic.Int64
}

func (l *cancellingLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{readFunc(func(p []byte) (int, error) {
		l.cancel()
		n, err := rc.Read(p[:min(len(p), 512)])
		l.served.Add(int64(n))
		return n, err
	}), rc}, nil
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func TestContextCancelledWithinALayerStopsTheScan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noise := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{3}).Read(noise)
	top := &cancellingLayer{Layer: layer(t, file("b", string(noise))), cancel: cancel}
	img := image(t, layer(t, file("a", "a")), top)

	// One layer at a time, so that "went on" can be observed: reading
	// ahead opens the layer below before the top one is merged.
	_, err := Scan(ctx, img, content("/a"), WithParallelism(1))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if served, size := top.served.Load(), int64(len(noise)); served > size/2 {
		t.Errorf("the scan read %d of %d bytes after cancellation; it must stop within the layer", served, size)
	}
	if img.opens()[0] != 0 {
		t.Error("the scan went on to the next layer after cancellation")
	}
}

func TestFileModeComesFromTheEntry(t *testing.T) {
	e := file("bin/tool", "#!/bin/sh\n")
	e.mode = 0o4755
	img := imageOf(t, []entry{e})
	res := mustScan(t, img, []Want{{Path: "/bin/tool"}})
	if got := res.Files["/bin/tool"].Mode; got != fs.ModeSetuid|0o755 {
		t.Errorf("mode = %v", got)
	}
}
