package imagefs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// zstdMaxWindow caps the zstd decoder's window, and so its memory, at what
// `zstd --long` produces by default; the library default (512 MiB) would let
// a hostile layer make us allocate that much.
const zstdMaxWindow = 128 << 20

// meter counts, bounds and optionally hashes what flows through it, and
// stops on a done context. Its first stop error is kept because readers
// stacked on top (decompressors, archive/tar) may wrap or replace it.
type meter struct {
	r      io.Reader
	ctx    context.Context
	total  *int64 // shared across the scan: limits are per scan, not per layer
	limit  int64
	hash   hash.Hash
	tooBig func() error
	stop   error
}

func (m *meter) Read(p []byte) (int, error) {
	if m.stop != nil {
		return 0, m.stop
	}
	if err := m.ctx.Err(); err != nil {
		m.stop = err
		return 0, err
	}
	// Read at most one byte past the limit: enough to tell "exactly at the
	// limit" from "over it" without fetching more than that.
	if room := m.limit - *m.total + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	*m.total += int64(n)
	if m.hash != nil {
		m.hash.Write(p[:n])
	}
	if *m.total > m.limit {
		m.stop = m.tooBig()
		return n, m.stop
	}
	return n, err
}

// readLayer streams layer i once: it indexes it (when indexing), buffers what
// c asks for, drains it to EOF and verifies its digest. Only a verified
// layer's index is returned, and the caller uses c only after that.
func (s *scanner) readLayer(i int, c *capture, indexing bool) (*layerIndex, error) {
	digest, rc, err := s.openLayer(i, indexing)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	name := s.layerName(i)
	h, err := newHash(digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	raw := &meter{r: rc, ctx: s.ctx, total: &s.stats.CompressedBytes, limit: s.lim.MaxCompressedBytes, hash: h,
		tooBig: func() error { return &LimitError{Limit: limitCompressed, Max: s.lim.MaxCompressedBytes, Layer: name} }}
	expanded := &meter{ctx: s.ctx, total: &s.stats.ExpandedBytes, limit: s.lim.MaxExpandedBytes,
		tooBig: func() error { return &LimitError{Limit: limitExpanded, Max: s.lim.MaxExpandedBytes, Layer: name} }}
	buffered := bufio.NewReaderSize(raw, 64<<10)
	li := newLayerIndex(i, s.lim.MaxEntries-s.idx.count, s.lim.MaxEntries, c, indexing)

	walkErr := expand(buffered, expanded, li)
	if stop := cmp.Or(raw.stop, expanded.stop); stop != nil {
		return nil, wrapStop(name, stop)
	}
	var limitErr *LimitError
	if errors.As(walkErr, &limitErr) {
		limitErr.Layer = name
		return nil, limitErr
	}
	// Whatever went wrong while expanding, first find out whether the bytes
	// are the ones the manifest names: a tampered layer must be reported as
	// such, not as the gzip or tar error its tampering caused.
	if err := s.verify(i, digest, buffered, raw, h); err != nil {
		return nil, err
	}
	if walkErr != nil {
		return nil, fmt.Errorf("%s: %w", name, walkErr)
	}
	return li, nil
}

// openLayer checks the layer against the compressed budget by its declared
// size, announces it and opens its compressed stream.
func (s *scanner) openLayer(i int, firstRead bool) (v1.Hash, io.ReadCloser, error) {
	digest, err := s.digest(i)
	if err != nil {
		return v1.Hash{}, nil, err
	}
	size, sizeErr := s.layers[i].Size()
	if sizeErr == nil && size > s.lim.MaxCompressedBytes-s.stats.CompressedBytes {
		// The manifest already says the layer does not fit: fail before
		// fetching any of it.
		return v1.Hash{}, nil, &LimitError{Limit: limitCompressed, Max: s.lim.MaxCompressedBytes, Layer: s.layerName(i)}
	}
	s.logLayer(i, firstRead, size, sizeErr)
	rc, err := s.layers[i].Compressed()
	if err != nil {
		return v1.Hash{}, nil, fmt.Errorf("%s: opening: %w", s.layerName(i), err)
	}
	return digest, rc, nil
}

// verify reads what is left of the compressed stream and compares the hash
// of every byte read with the digest.
func (s *scanner) verify(i int, digest v1.Hash, rest io.Reader, raw *meter, h hash.Hash) error {
	if _, err := io.Copy(io.Discard, rest); err != nil {
		if raw.stop != nil {
			return wrapStop(s.layerName(i), raw.stop)
		}
		return &IntegrityError{Layer: layerPos(i, len(s.layers)), Digest: digest, Err: err}
	}
	if got := (v1.Hash{Algorithm: digest.Algorithm, Hex: hex.EncodeToString(h.Sum(nil))}); got != digest {
		return &IntegrityError{Layer: layerPos(i, len(s.layers)), Digest: digest, Got: got}
	}
	return nil
}

// expand decompresses the layer through the expanded meter and walks its tar
// stream, then reads the decompressed stream to its end: that checks the gzip
// CRC and consumes the compressed stream up to the end of its last member.
func expand(buffered *bufio.Reader, expanded *meter, li *layerIndex) error {
	dec, err := decompressor(buffered)
	if err != nil {
		return err
	}
	defer dec.Close()
	expanded.r = dec
	tr := tar.NewReader(expanded)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the tar stream: %w", err)
		}
		if err := li.add(hdr, tr); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, expanded); err != nil {
		return fmt.Errorf("reading past the end of the tar stream: %w", err)
	}
	return nil
}

// decompressor picks the decompression by the stream's magic bytes, as
// container runtimes do, rather than trusting the declared media type.
func decompressor(r *bufio.Reader) (io.ReadCloser, error) {
	magic, err := r.Peek(len(zstdMagic))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading the layer header: %w", err)
	}
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("reading the gzip header: %w", err)
		}
		return zr, nil
	case bytes.HasPrefix(magic, zstdMagic):
		// Concurrency 1 decodes inline: no goroutines outlive the layer.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, fmt.Errorf("starting zstd: %w", err)
		}
		return zr.IOReadCloser(), nil
	}
	return io.NopCloser(r), nil // an uncompressed tar layer
}

func newHash(d v1.Hash) (hash.Hash, error) {
	switch d.Algorithm {
	case "sha256":
		return sha256.New(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("digest %s uses algorithm %q, which imagefs cannot verify", d, d.Algorithm)
}

// wrapStop adds the layer to a stop error; limit errors carry it themselves.
func wrapStop(name string, err error) error {
	var limitErr *LimitError
	if errors.As(err, &limitErr) {
		return limitErr
	}
	return fmt.Errorf("%s: %w", name, err)
}

func (s *scanner) digest(i int) (v1.Hash, error) {
	if d := s.digests[i]; d.Algorithm != "" {
		return d, nil
	}
	d, err := s.layers[i].Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("layer %s: reading its digest: %w", layerPos(i, len(s.layers)), err)
	}
	s.digests[i] = d
	return d, nil
}

func (s *scanner) layerName(i int) string {
	return layerPos(i, len(s.layers)) + " " + s.digests[i].String()
}

func layerPos(i, total int) string { return fmt.Sprintf("layer %d/%d", i+1, total) }
