package reconstruction

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// syntheticFileSize keeps each synthetic file well below typical per-file
// limits while letting a base reach gigabytes.
const syntheticFileSize = 64 << 20

// SyntheticBase returns a layer of about size bytes of incompressible,
// seed-determined content under /usr/local/cuda/synthetic/, standing in for
// the multi-GB CUDA devel base the real installer image sits on. Content is
// streamed, never held in memory, and stored uncompressed (gzip level 0) so
// building a 2 GB base costs I/O, not CPU.
func SyntheticBase(size int64, seed uint64) (v1.Layer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("synthetic base size must be positive, got %d", size)
	}
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeSynthetic(pw, size, seed)) }()
		return pr, nil
	}
	l, err := tarball.LayerFromOpener(opener, tarball.WithCompressionLevel(gzip.NoCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("build synthetic base: %w", err)
	}
	return l, nil
}

// SyntheticBaseFile writes a gzip-compressed synthetic base of size
// uncompressed bytes to a file in dir and returns it as a layer. Unlike
// SyntheticBase its content compresses about 2:1, like the libraries of a
// CUDA base, so reading it costs real decompression as the real base does.
// Compressing once to a file keeps a multi-GB layer out of memory and off
// the CPU when it is hashed and pushed.
func SyntheticBaseFile(dir string, size int64, seed uint64) (v1.Layer, error) {
	f, err := os.CreateTemp(dir, "synthetic-base-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("create synthetic base: %w", err)
	}
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	werr := writeSyntheticContent(gz, size, seed, func(r io.Reader) io.Reader { return halfCompressible{r} })
	if cerr := gz.Close(); werr == nil {
		werr = cerr
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("write synthetic base: %w", werr)
	}
	l, err := tarball.LayerFromFile(f.Name(), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("open synthetic base: %w", err)
	}
	return l, nil
}

// halfCompressible fills p with alternating random and repeated runs, which
// deflate to about half their size.
type halfCompressible struct{ rng io.Reader }

func (h halfCompressible) Read(p []byte) (int, error) {
	const run = 256
	n := 0
	for n < len(p) {
		end := min(n+run, len(p))
		if _, err := io.ReadFull(h.rng, p[n:end]); err != nil {
			return n, err
		}
		n = end
		if end = min(n+run, len(p)); n < end {
			for i := n; i < end; i++ {
				p[i] = p[i-run]
			}
			n = end
		}
	}
	return n, nil
}

func writeSynthetic(w io.Writer, size int64, seed uint64) error {
	return writeSyntheticContent(w, size, seed, nil)
}

func writeSyntheticContent(w io.Writer, size int64, seed uint64, shape func(io.Reader) io.Reader) error {
	tw := tar.NewWriter(w)
	dirs := []string{"usr/", "usr/local/", "usr/local/cuda/", "usr/local/cuda/synthetic/"}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: Epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	var seedBytes [32]byte
	for i := range 8 {
		seedBytes[i] = byte(seed >> (8 * i))
	}
	var rng io.Reader = rand.NewChaCha8(seedBytes)
	if shape != nil {
		rng = shape(rng)
	}
	for i := 0; size > 0; i++ {
		n := min(size, syntheticFileSize)
		hdr := &tar.Header{Name: fmt.Sprintf("usr/local/cuda/synthetic/blob-%04d.bin", i), Typeflag: tar.TypeReg,
			Mode: 0o644, Size: n, ModTime: Epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, rng, n); err != nil {
			return err
		}
		size -= n
	}
	return tw.Close()
}
