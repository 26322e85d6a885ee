package reconstruction

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"

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

func writeSynthetic(w io.Writer, size int64, seed uint64) error {
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
	rng := rand.NewChaCha8(seedBytes)
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
