package imagefs

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// lyingLayer reports the digest and size of the layer it wraps but serves
// other bytes, as a tampered registry, layout or cache would.
type lyingLayer struct {
	v1.Layer
	serve func() io.ReadCloser
}

func (l *lyingLayer) Compressed() (io.ReadCloser, error) { return l.serve(), nil }

func servingBytes(b []byte) func() io.ReadCloser {
	return func() io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
}

// failingAtEOF serves b and then fails instead of returning io.EOF, as
// go-containerregistry's verifying reader does when the digest mismatches.
func failingAtEOF(b []byte) func() io.ReadCloser {
	return func() io.ReadCloser {
		return io.NopCloser(io.MultiReader(bytes.NewReader(b), readFunc(func([]byte) (int, error) {
			return 0, errors.New("error verifying sha256 checksum")
		})))
	}
}

func TestTamperedLayerIsRefusedAndYieldsNothing(t *testing.T) {
	honest := layer(t, file("scripts/nccl-env-profile.sh", "export NCCL_PROTO=Simple\n"))
	swapped := gzipBytes(t, 6, tarBytes(t, file("scripts/nccl-env-profile.sh", "export NCCL_PROTO=Evil!!\n")))
	real, err := honest.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	realBytes, _ := io.ReadAll(real)
	flipped := bytes.Clone(realBytes)
	flipped[len(flipped)/2] ^= 0xff
	hostile := gzipBytes(t, 6, tarBytes(t, file("../../etc/cron.d/x", "boom")))

	cases := map[string]func() io.ReadCloser{
		"content swapped, valid gzip":   servingBytes(swapped),
		"byte flipped, corrupt gzip":    servingBytes(flipped),
		"truncated":                     servingBytes(realBytes[:len(realBytes)-10]),
		"trailing bytes":                servingBytes(append(bytes.Clone(realBytes), 0, 0, 0, 0)),
		"hostile entry in a forgery":    servingBytes(hostile),
		"source fails at end of stream": failingAtEOF(realBytes),
	}
	for name, serve := range cases {
		t.Run(name, func(t *testing.T) {
			img := image(t, layer(t, file("base", "b")), &lyingLayer{Layer: honest, serve: serve})
			res, err := scan(t, img, content("/scripts/nccl-env-profile.sh"))
			var ie *IntegrityError
			if !errors.As(err, &ie) {
				t.Fatalf("error = %v, want an *IntegrityError", err)
			}
			if res != nil {
				t.Errorf("result = %+v, want none from a tampered image", res)
			}
			want, _ := honest.Digest()
			if ie.Digest != want || !strings.Contains(err.Error(), "layer 2/2 "+want.String()+": digest did not verify") {
				t.Errorf("error = %q, want it to name layer 2/2 %s", err, want)
			}
			if img.opens()[0] != 0 {
				t.Error("the scan went on below a layer that did not verify")
			}
		})
	}
}

func TestCorruptButCorrectlyPinnedLayerIsNotAnIntegrityError(t *testing.T) {
	// The digest matches these bytes, so the source is honest; the layer
	// itself is broken and must still be refused, under its real cause.
	good := gzipBytes(t, 6, tarBytes(t, file("a", "a")))
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-8] ^= 0xff // first byte of the gzip trailer's CRC-32
	truncatedTar := gzipBytes(t, 6, tarBytes(t, file("a", strings.Repeat("a", 2048)))[:1024])

	for name, tc := range map[string]struct {
		blob []byte
		msg  string
	}{
		"gzip checksum":  {badCRC, "reading past the end of the tar stream: gzip: invalid checksum"},
		"truncated tar":  {truncatedTar, "unexpected EOF"},
		"not an archive": {[]byte(strings.Repeat("not a tar header ", 64)), "reading the tar stream"},
	} {
		t.Run(name, func(t *testing.T) {
			img := image(t, static.NewLayer(tc.blob, types.OCILayer))
			_, err := scan(t, img, content("/a"))
			var ie *IntegrityError
			if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error = %v, want a non-integrity error containing %q", err, tc.msg)
			}
		})
	}
}

func TestUnsafeEntryNamesRefuseTheImage(t *testing.T) {
	for _, e := range []entry{
		file("../etc/passwd", "x"),
		file("a/../../x", "x"),
		file("/../x", "x"),
		file("./../x", "x"),
		hardlink("ok", "../../etc/shadow"),
		hardlink("ok", "/"),
	} {
		t.Run(e.name+"=>"+e.link, func(t *testing.T) {
			img := imageOf(t, []entry{file("want", "w")}, []entry{file("fine", "f"), e})
			_, err := scan(t, img, content("/want"))
			if !errors.Is(err, ErrUnsafeEntry) {
				t.Fatalf("error = %v, want ErrUnsafeEntry", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, img.digest(t, 1).String()) || !strings.Contains(msg, `"`+e.name+`"`) {
				t.Errorf("error = %q, want the layer digest and the entry name", msg)
			}
		})
	}
}

func TestMalformedLayersAreRefused(t *testing.T) {
	cases := map[string]struct {
		entries []entry
		msg     string
	}{
		"file and directory at one path": {[]entry{file("d", "x"), file("d/y", "y")}, "non-directory in the same layer"},
		"directory then file":            {[]entry{dir("d/"), file("d", "x")}, "both as a directory and as a non-directory"},
		"whiteout naming nothing":        {[]entry{file("d/.wh.", "")}, "names no file"},
		"unknown entry type":             {[]entry{{name: "v", typ: 'V'}}, "container runtimes cannot apply"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img := imageOf(t, []entry{file("want", "w")}, tc.entries)
			_, err := scan(t, img, content("/want"))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error = %v, want it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestAufsBookkeepingEntriesAreIgnored(t *testing.T) {
	img := imageOf(t, []entry{file("a", "a")}, []entry{file(".wh..wh.plnk/1234", ""), file(".wh..wh.aufs", "")})
	res := mustScan(t, img, content("/a"))
	if fileData(t, res, "/a") != "a" {
		t.Error("aufs metadata must not hide anything")
	}
}

func TestOversizedWantedFileIsAnError(t *testing.T) {
	big := strings.Repeat("x", 100)
	img := imageOf(t, []entry{file("lib/big.so", big), symlink("lib/link.so", "big.so")})
	_, err := scan(t, img, content("/lib/link.so"), WithLimits(Limits{MaxFileBytes: 10}))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxFileBytes" || le.Size != 100 {
		t.Fatalf("error = %v, want a MaxFileBytes LimitError for 100 bytes", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "/lib/link.so (/lib/big.so) is 100 bytes") || !strings.Contains(msg, "Limits.MaxFileBytes") {
		t.Errorf("error = %q, want the file, its size and the limit", msg)
	}
	// Existence and metadata carry no size bound.
	res := mustScan(t, img, []Want{{Path: "/lib/link.so"}}, WithLimits(Limits{MaxFileBytes: 10}))
	if res.Files["/lib/link.so"].Size != 100 {
		t.Errorf("metadata = %+v", res.Files["/lib/link.so"])
	}
}

func TestCompressedBudgetIsCheckedBeforeFetching(t *testing.T) {
	img := imageOf(t, []entry{file("a", strings.Repeat("a", 4096))}, []entry{file("b", "b")})
	top, _ := img.layers[1].Size()
	_, err := scan(t, img, content("/a"), WithLimits(Limits{MaxCompressedBytes: top + 10}))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxCompressedBytes" || !strings.Contains(err.Error(), "layer 1/2") {
		t.Fatalf("error = %v, want MaxCompressedBytes on layer 1/2", err)
	}
	if got := img.opens(); !slices.Equal(got, []int32{0, 1}) {
		t.Errorf("opens = %v: a layer the manifest says does not fit must not be fetched", got)
	}
}

// sizeLiar understates its size, so only counting the bytes catches it.
type sizeLiar struct{ v1.Layer }

func (sizeLiar) Size() (int64, error) { return 1, nil }

func TestCompressedBudgetCountsBytesActuallyFetched(t *testing.T) {
	noise := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(noise)
	big := layer(t, file("a", string(noise)))
	img := image(t, sizeLiar{big})
	_, err := scan(t, img, content("/a"), WithLimits(Limits{MaxCompressedBytes: 1000}))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxCompressedBytes" {
		t.Fatalf("error = %v, want MaxCompressedBytes", err)
	}
}

// bombLayer is a gzip layer holding one file of size zero bytes, in about
// size/1000 compressed bytes. Concatenated gzip members form one valid gzip
// stream (RFC 1952 section 2.2) that decoders expand as the concatenation, so
// the bomb is one member for the tar header followed by copies of one member
// of compressed zeros: compressing all of size, as an attacker would once,
// takes half a minute under the race detector.
func bombLayer(t testing.TB, size int64) v1.Layer {
	t.Helper()
	const chunk = 16 << 20
	if size%chunk != 0 {
		t.Fatalf("bomb size %d is not a multiple of %d", size, chunk)
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Size: size, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	zeros := gzipBytes(t, 9, make([]byte, chunk))
	blob := gzipBytes(t, 9, hdr.Bytes())
	for range size / chunk {
		blob = append(blob, zeros...)
	}
	// The file ends on a block boundary; two zero blocks end the archive.
	blob = append(blob, gzipBytes(t, 9, make([]byte, 2*512))...)
	return static.NewLayer(blob, types.OCILayer)
}

func TestGzipBombIsStoppedByTheExpandedLimit(t *testing.T) {
	bomb := bombLayer(t, 3<<30)
	size, _ := bomb.Size()
	t.Logf("bomb: %d compressed bytes", size)
	img := image(t, layer(t, file("a", "a")), bomb)

	start := time.Now()
	_, err := scan(t, img, content("/a"), WithLimits(Limits{MaxExpandedBytes: 64 << 20}))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxExpandedBytes" {
		t.Fatalf("error = %v, want MaxExpandedBytes", err)
	}
	if !strings.Contains(err.Error(), "layer 2/2") || !strings.Contains(err.Error(), "decompression bomb") {
		t.Errorf("error = %q, want the layer and the cause", err)
	}
	// Expanding the whole bomb takes seconds; stopping at 64 MiB a fraction.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the bomb took %v to stop", d)
	}
	if img.opens()[0] != 0 {
		t.Error("the scan went on after the limit")
	}
}

func TestEntryLimit(t *testing.T) {
	var es []entry
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		es = append(es, file("d/"+n, n))
	}
	img := imageOf(t, []entry{file("want", "w")}, es)
	_, err := scan(t, img, content("/want"), WithLimits(Limits{MaxEntries: 5}))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxEntries" || !strings.Contains(err.Error(), "layer 2/2") {
		t.Fatalf("error = %v, want MaxEntries on layer 2/2", err)
	}
}

func TestBombLayerIsAValidLayer(t *testing.T) {
	// The bomb helper must build a real archive, or the limit test above
	// would pass on a tar error instead of the limit.
	img := image(t, bombLayer(t, 32<<20))
	res := mustScan(t, img, []Want{{Path: "/zeros"}})
	if f := res.Files["/zeros"]; f.Size != 32<<20 {
		t.Errorf("zeros = %+v", f)
	}
	if res.Stats.ExpandedBytes < 32<<20 {
		t.Errorf("expanded %d bytes, want the whole file", res.Stats.ExpandedBytes)
	}
}
