package imagefs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kgzip "github.com/klauspost/compress/gzip"
)

var (
	benchOnce sync.Once
	benchImg  *testImage
)

// benchImage is a 256 MiB incompressible base (stored, gzip NoCompression,
// like the CUDA base a real installer image sits on) under a small top
// layer. Built once per test binary: it takes seconds.
func benchImage(b *testing.B) *testImage {
	benchOnce.Do(func() { benchImg = buildBenchImage(b) })
	if benchImg == nil {
		b.Fatal("building the benchmark image failed in an earlier benchmark")
	}
	return benchImg
}

func buildBenchImage(b *testing.B) *testImage {
	const baseSize = 256 << 20
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		b.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	write := func(name string, size int64, fill func([]byte)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}); err != nil {
			b.Fatal(err)
		}
		chunk := make([]byte, min(size, 1<<20))
		for left := size; left > 0; left -= int64(len(chunk)) {
			fill(chunk)
			if _, err := tw.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
				b.Fatal(err)
			}
		}
	}
	rng := rand.NewChaCha8([32]byte{1})
	write("usr/local/cuda/lib64/libcublasLt.so.12", baseSize, func(p []byte) { _, _ = rng.Read(p) })
	write("etc/os-release", 10, func(p []byte) { copy(p, "ID=ubuntu\n") })
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	base := static.NewLayer(buf.Bytes(), types.OCILayer)
	top := layer(b, file("scripts/nccl-env-profile.sh", "export NCCL_PROTO=Simple,LL128\n"),
		symlink("lib/libnccl.so", "libnccl.so.2"), file("lib/libnccl.so.2", "nccl"))
	return image(b, base, top)
}

func benchScan(b *testing.B, wants []Want) {
	img := benchImage(b)
	b.ResetTimer()
	var st Stats
	for b.Loop() {
		res, err := Scan(context.Background(), img, wants, WithLimits(Limits{MaxCompressedBytes: 1 << 30}))
		if err != nil {
			b.Fatal(err)
		}
		st = res.Stats
	}
	b.ReportMetric(float64(st.CompressedBytes), "fetched-B/op")
	b.ReportMetric(float64(st.ExpandedBytes), "expanded-B/op")
	b.ReportMetric(float64(st.LayersRead), "layers/op")
}

// BenchmarkScanTopLayer finds its files in the small top layer: the base is
// never fetched.
func BenchmarkScanTopLayer(b *testing.B) {
	benchScan(b, []Want{{Path: "/scripts/nccl-env-profile.sh", Content: true}, {Path: "/lib/libnccl.so"}})
}

// BenchmarkScanBaseLayer wants a file from the base for contrast: the whole
// base is fetched, expanded and verified.
func BenchmarkScanBaseLayer(b *testing.B) {
	benchScan(b, []Want{{Path: "/etc/os-release", Content: true}})
}

// inflateInput is 64 MiB of compressible layer-like bytes (random words
// from a small vocabulary, runs of zeros as in ELF padding) at gzip's default
// level, the shape of the apt and build layers the scan inflates.
var inflateInput = sync.OnceValue(func() []byte {
	rng := rand.New(rand.NewChaCha8([32]byte{9}))
	words := []string{"lib", "usr/", "nccl", "\x00\x00\x00\x00\x00\x00\x00\x00", "ELF", "cuda", ".so.2", "GLIBC_2.34", "\x7f", "protobuf", "absl::", "\x00\x01\x02\x03"}
	var raw bytes.Buffer
	for raw.Len() < 64<<20 {
		raw.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			raw.WriteByte(byte(rng.Uint32()))
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	return gz.Bytes()
})

func benchInflate(b *testing.B, open func(io.Reader) (io.Reader, error)) {
	in := inflateInput()
	b.SetBytes(64 << 20)
	b.ResetTimer()
	for b.Loop() {
		r, err := open(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInflateStdlib and BenchmarkInflateKlauspost compare the standard
// library's gzip reader with the one the scan uses (make bench reports the
// figures; README "Measured").
func BenchmarkInflateStdlib(b *testing.B) {
	benchInflate(b, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) })
}

func BenchmarkInflateKlauspost(b *testing.B) {
	benchInflate(b, func(r io.Reader) (io.Reader, error) { return kgzip.NewReader(r) })
}
