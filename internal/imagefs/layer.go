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
// stacked on top (decompressors, archive/tar) may wrap or replace it. Each
// layer pass has its own meters, so passes run concurrently; the scan's
// budgets are charged in layer order when the passes are merged (see
// scanner.charge).
type meter struct {
	r      io.Reader
	ctx    context.Context
	total  int64
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
	if room := m.limit - m.total + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	m.total += int64(n)
	if m.hash != nil {
		m.hash.Write(p[:n])
	}
	if m.total > m.limit {
		m.stop = m.tooBig()
		return n, m.stop
	}
	return n, err
}

// pass is one read of one layer: what it may spend, and what it did.
type pass struct {
	layer    int
	digest   v1.Hash
	name     string
	indexing bool
	capture  *capture
	// Budgets left for this pass when it started: at least what is really
	// left once every layer above it is charged, so a pass never stops
	// short of where a sequential scan would have.
	roomCompressed, roomExpanded int64
	roomEntries                  int

	li         *layerIndex
	compressed int64 // bytes read from the source
	expanded   int64 // tar bytes processed
	fromIndex  bool  // served from the layer's scan index, no byte read
	rebuilt    bool  // a stored index was unusable or disagreed with the layer, and was replaced
	err        error
}

// readLayer streams one layer once: it indexes it (when indexing), buffers
// what the pass's capture asks for, drains it to EOF and verifies its
// digest. Only a verified layer's index is kept, and the capture is used
// only after that. It touches no scanner state but read-only fields, so
// passes run concurrently.
func (s *scanner) readLayer(ctx context.Context, ps *pass) {
	ps.err = s.streamLayer(ctx, ps)
	if ps.err != nil {
		ps.li = nil
	}
}

func (s *scanner) streamLayer(ctx context.Context, ps *pass) error {
	rc, err := s.layers[ps.layer].Compressed()
	if err != nil {
		return fmt.Errorf("%s: opening: %w", ps.name, err)
	}
	defer rc.Close()
	h, err := newHash(ps.digest)
	if err != nil {
		return fmt.Errorf("%s: %w", ps.name, err)
	}
	raw := &meter{r: rc, ctx: ctx, limit: ps.roomCompressed, hash: h,
		tooBig: func() error {
			return &LimitError{Limit: limitCompressed, Max: s.lim.MaxCompressedBytes, Layer: ps.name}
		}}
	expanded := &meter{ctx: ctx, limit: ps.roomExpanded,
		tooBig: func() error { return &LimitError{Limit: limitExpanded, Max: s.lim.MaxExpandedBytes, Layer: ps.name} }}
	defer func() { ps.compressed, ps.expanded = raw.total, expanded.total }()
	buffered := bufio.NewReaderSize(raw, 256<<10)
	ps.li = newLayerIndex(ps.layer, ps.roomEntries, s.lim.MaxEntries, ps.capture, ps.indexing)

	walkErr := expand(buffered, expanded, ps.li)
	if stop := cmp.Or(raw.stop, expanded.stop); stop != nil {
		return wrapStop(ps.name, stop)
	}
	var limitErr *LimitError
	if errors.As(walkErr, &limitErr) {
		limitErr.Layer = ps.name
		return limitErr
	}
	// Whatever went wrong while expanding, first find out whether the bytes
	// are the ones the manifest names: a tampered layer must be reported as
	// such, not as the gzip or tar error its tampering caused.
	if err := s.verify(ps, buffered, raw, h); err != nil {
		return err
	}
	if walkErr != nil {
		return fmt.Errorf("%s: %w", ps.name, walkErr)
	}
	return nil
}

// verify reads what is left of the compressed stream and compares the hash
// of every byte read with the digest.
func (s *scanner) verify(ps *pass, rest io.Reader, raw *meter, h hash.Hash) error {
	if _, err := io.Copy(io.Discard, rest); err != nil {
		if raw.stop != nil {
			return wrapStop(ps.name, raw.stop)
		}
		return &IntegrityError{Layer: layerPos(ps.layer, len(s.layers)), Digest: ps.digest, Err: err}
	}
	if got := (v1.Hash{Algorithm: ps.digest.Algorithm, Hex: hex.EncodeToString(h.Sum(nil))}); got != ps.digest {
		return &IntegrityError{Layer: layerPos(ps.layer, len(s.layers)), Digest: ps.digest, Got: got}
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
