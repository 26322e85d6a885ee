package imagesource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// Bounds on what is buffered in memory, so hostile descriptors cannot make
// us allocate without limit. Registries commonly cap manifests at 4 MiB;
// configs of even very large images are a few hundred KiB, so 32 MiB is
// headroom, not an expectation.
const (
	maxManifestSize = 4 << 20
	maxConfigSize   = 32 << 20
)

// store is the single place content enters: it serves from the cache when
// a verified copy exists, otherwise from the fetcher, and verifies both.
type store struct {
	fetch fetcher
	where string // for messages: the repository or layout the fetcher reads
	cache *cache // nil without WithCache
}

func newStore(f fetcher, cacheDir string) *store {
	s := &store{fetch: f, where: f.where()}
	if cacheDir != "" {
		s.cache = &cache{dir: cacheDir}
	}
	return s
}

// manifest returns the verified bytes of the manifest or index h. size is
// -1 when no descriptor declares it (the root digest).
func (s *store) manifest(ctx context.Context, h v1.Hash, size int64) ([]byte, error) {
	return s.small(ctx, "manifest", h, size, maxManifestSize, s.fetch.manifest)
}

// config returns the verified bytes of an image config.
func (s *store) config(ctx context.Context, d v1.Descriptor) ([]byte, error) {
	return s.small(ctx, "config", d.Digest, d.Size, maxConfigSize, func(ctx context.Context, h v1.Hash) ([]byte, error) {
		rc, err := s.fetch.blob(ctx, h)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxConfigSize+1))
		if err != nil {
			return nil, fmt.Errorf("read config %s from %s: %w", h, s.where, err)
		}
		return b, nil
	})
}

func (s *store) small(ctx context.Context, kind string, h v1.Hash, size, limit int64, get func(context.Context, v1.Hash) ([]byte, error)) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%s %s is declared as %d bytes, more than the %d accepted: the image is malformed or hostile", kind, h, size, limit)
	}
	corrupt := false
	if s.cache != nil {
		b, st, err := s.cache.readSmall(kind, h, size, limit)
		if err != nil {
			return nil, err
		}
		if st == cacheHit {
			return b, nil
		}
		corrupt = st == cacheCorrupt
	}
	b, err := get(ctx, h)
	if err != nil {
		return nil, s.refetchErr(err, corrupt, h)
	}
	// go-containerregistry's remote already checks digests it was asked
	// for; this check covers every fetcher and costs one hash of a small blob.
	if err := checkBytes(kind+" "+h.String()+" from "+s.where, b, h, size, limit); err != nil {
		return nil, err
	}
	if s.cache != nil {
		if err := s.cache.writeSmall(h, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// open returns a reader of the blob d that fails instead of reaching io.EOF
// unless the content matched d's digest and size. A blob fetched from the
// network is written to the cache only once it verified.
func (s *store) open(ctx context.Context, d v1.Descriptor) (io.ReadCloser, error) {
	corrupt := false
	if s.cache != nil {
		rc, st, err := s.cache.openBlob(d.Digest, d.Size)
		if err != nil {
			return nil, err
		}
		if st == cacheHit {
			return rc, nil
		}
		corrupt = st == cacheCorrupt
	}
	src, err := s.fetch.blob(ctx, d.Digest)
	if err != nil {
		return nil, s.refetchErr(err, corrupt, d.Digest)
	}
	var sink *pending
	if s.cache != nil {
		if sink, err = s.cache.create(d.Digest); err != nil {
			src.Close()
			return nil, err
		}
	}
	return newVerifyingReader(src, d.Digest, d.Size, "blob "+d.Digest.String()+" from "+s.where, sink), nil
}

func (s *store) refetchErr(err error, corrupt bool, h v1.Hash) error {
	if !corrupt {
		return err
	}
	return fmt.Errorf("the cached copy of %s in %s was corrupt and has been removed, and fetching it again failed (reconnect to the registry and re-run): %w", h, s.cache.dir, err)
}

// checkBytes verifies a fully read blob.
func checkBytes(what string, b []byte, want v1.Hash, size, limit int64) error {
	if int64(len(b)) > limit {
		return fmt.Errorf("%s is larger than the %d bytes accepted: the image is malformed or hostile", what, limit)
	}
	if size >= 0 && int64(len(b)) != size {
		return fmt.Errorf("%s is %d bytes but its descriptor says %d: the content is corrupt or was tampered with", what, len(b), size)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want.Hex {
		return fmt.Errorf("%s does not match its digest: content hashes to sha256:%s: the content is corrupt or was tampered with", what, got)
	}
	return nil
}

type cacheState int

const (
	cacheMiss cacheState = iota
	cacheHit
	// cacheCorrupt means an entry existed, failed verification and was
	// removed.
	cacheCorrupt
)

// cache is a content-addressed blob store, dir/blobs/sha256/<hex>. Entries
// appear only by rename after their content verified, so a reader sees a
// whole verified blob or nothing; identical content makes concurrent
// writers from several processes harmless. Every read verifies again,
// because the directory is outside our control between runs.
type cache struct {
	dir   string
	sweep sync.Once
}

// staleAfter is how long a staging file may go unmodified before a later run
// treats it as left behind by a crashed process. A live download writes to
// its staging file continuously, so an hour of silence means nobody owns it.
const staleAfter = time.Hour

// sweepStale removes staging files abandoned by crashed runs. It is
// housekeeping only: failures leave garbage, never wrong content, so they
// are not reported.
func (c *cache) sweepStale(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleAfter {
			os.Remove(m)
		}
	}
}

func (c *cache) path(h v1.Hash) string {
	return filepath.Join(c.dir, "blobs", h.Algorithm, h.Hex)
}

func (c *cache) readSmall(kind string, h v1.Hash, size, limit int64) ([]byte, cacheState, error) {
	p := c.path(h)
	if err := c.checkEntry(p); err != nil {
		return nil, cacheMiss, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cacheMiss, nil
	}
	if err != nil {
		return nil, cacheMiss, fmt.Errorf("open cache entry %s: %w (fix the cache directory's permissions or remove it)", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, cacheMiss, fmt.Errorf("read cache entry %s: %w (fix the cache directory or remove it)", p, err)
	}
	if checkBytes(kind+" "+h.String(), b, h, size, limit) != nil {
		if err := discard(p, f); err != nil {
			return nil, cacheMiss, err
		}
		return nil, cacheCorrupt, nil
	}
	return b, cacheHit, nil
}

// openBlob hashes the whole cached file before handing out any byte, so a
// corrupt entry can still be replaced transparently by a fresh fetch; the
// returned reader checks again at EOF in case the file changes underneath.
func (c *cache) openBlob(h v1.Hash, size int64) (io.ReadCloser, cacheState, error) {
	p := c.path(h)
	if err := c.checkEntry(p); err != nil {
		return nil, cacheMiss, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cacheMiss, nil
	}
	if err != nil {
		return nil, cacheMiss, fmt.Errorf("open cache entry %s: %w (fix the cache directory's permissions or remove it)", p, err)
	}
	hasher := sha256.New()
	n, err := io.Copy(hasher, io.LimitReader(f, size+1))
	if err != nil {
		f.Close()
		return nil, cacheMiss, fmt.Errorf("read cache entry %s: %w (fix the cache directory or remove it)", p, err)
	}
	if n != size || hex.EncodeToString(hasher.Sum(nil)) != h.Hex {
		derr := discard(p, f)
		f.Close()
		if derr != nil {
			return nil, cacheMiss, derr
		}
		return nil, cacheCorrupt, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, cacheMiss, fmt.Errorf("rewind cache entry %s: %w", p, err)
	}
	return newVerifyingReader(f, h, size, "cached blob "+h.String()+" in "+c.dir, nil), cacheHit, nil
}

// discard removes a corrupt entry, but only if the path still names the
// file that failed: another process may have just renamed a good copy
// into place.
func discard(p string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat corrupt cache entry %s: %w", p, err)
	}
	cur, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat corrupt cache entry %s: %w", p, err)
	}
	if !os.SameFile(fi, cur) {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove corrupt cache entry %s: %w (remove it by hand)", p, err)
	}
	return nil
}

func (c *cache) writeSmall(h v1.Hash, b []byte) error {
	c.sweep.Do(func() { c.sweepStale(filepath.Dir(c.path(h))) })
	if err := atomicfile.Write(c.path(h), b, 0o644); err != nil {
		return fmt.Errorf("write cache entry for %s: %w (fix the cache directory's permissions or run without a cache)", h, err)
	}
	return nil
}

// pending is a blob being streamed into the cache under a temporary name.
type pending struct {
	f     *os.File
	final string
}

func (c *cache) create(h v1.Hash) (*pending, error) {
	final := c.path(h)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cache directory %s: %w (fix permissions or run without a cache)", dir, err)
	}
	c.sweep.Do(func() { c.sweepStale(dir) })
	// The leading dot and .tmp- suffix match atomicfile's staging names, so
	// nothing under the final name can ever be a partial blob.
	f, err := os.CreateTemp(dir, "."+h.Hex+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create cache staging file in %s: %w (fix permissions or run without a cache)", dir, err)
	}
	return &pending{f: f, final: final}, nil
}

func (p *pending) write(b []byte) error {
	if _, err := p.f.Write(b); err != nil {
		return fmt.Errorf("write cache staging file %s: %w", p.f.Name(), err)
	}
	return nil
}

func (p *pending) commit() error {
	name := p.f.Name()
	err := p.f.Chmod(0o644)
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, p.final)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("store verified blob in cache as %s: %w (fix the cache directory or run without a cache)", p.final, err)
	}
	return nil
}

func (p *pending) abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// verifyingReader hashes a blob as it streams and returns io.EOF only once
// the size and digest matched; otherwise the final read returns an error,
// which is why consumers must read to EOF before trusting content. It
// never hands out bytes beyond the declared size. With a sink, the bytes are
// staged into the cache and committed at verified EOF.
type verifyingReader struct {
	src    io.ReadCloser
	r      io.Reader
	want   v1.Hash
	size   int64
	what   string
	hasher hash.Hash
	n      int64
	sink   *pending
	err    error // terminal state: io.EOF after success, or the failure
	closed bool
}

func newVerifyingReader(src io.ReadCloser, want v1.Hash, size int64, what string, sink *pending) *verifyingReader {
	return &verifyingReader{
		src:    src,
		r:      io.LimitReader(src, size+1),
		want:   want,
		size:   size,
		what:   what,
		hasher: sha256.New(),
		sink:   sink,
	}
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.closed {
		return 0, fmt.Errorf("read %s: reader is closed", v.what)
	}
	n, err := v.r.Read(p)
	if v.n+int64(n) > v.size {
		return 0, v.fail(fmt.Errorf("%s is longer than the %d bytes its descriptor declares: the content is corrupt or was tampered with", v.what, v.size))
	}
	if n > 0 {
		v.hasher.Write(p[:n])
		v.n += int64(n)
		if v.sink != nil {
			if werr := v.sink.write(p[:n]); werr != nil {
				return n, v.fail(werr)
			}
		}
	}
	switch {
	case err == io.EOF:
		if verr := v.verify(); verr != nil {
			return n, v.fail(verr)
		}
		if v.sink != nil {
			sink := v.sink
			v.sink = nil
			if cerr := sink.commit(); cerr != nil {
				return n, v.fail(cerr)
			}
		}
		v.err = io.EOF
		return n, io.EOF
	case err != nil:
		return n, v.fail(fmt.Errorf("read %s: %w", v.what, err))
	}
	return n, nil
}

func (v *verifyingReader) verify() error {
	if v.n != v.size {
		return fmt.Errorf("%s ended after %d bytes but its descriptor declares %d: the content is truncated or was tampered with", v.what, v.n, v.size)
	}
	if got := hex.EncodeToString(v.hasher.Sum(nil)); got != v.want.Hex {
		return fmt.Errorf("%s does not match its digest: content hashes to sha256:%s: the content is corrupt or was tampered with and must not be used", v.what, got)
	}
	return nil
}

func (v *verifyingReader) fail(err error) error {
	v.err = err
	if v.sink != nil {
		v.sink.abort()
		v.sink = nil
	}
	return err
}

// Close releases the source; a blob closed before its verified EOF is not
// cached.
func (v *verifyingReader) Close() error {
	if v.closed {
		return nil
	}
	v.closed = true
	if v.sink != nil {
		v.sink.abort()
		v.sink = nil
	}
	return v.src.Close()
}

// checkEntry refuses a cache entry that is not a regular file inside the
// cache (a FIFO would hang the read, a device never end it, a symlink could
// lead anywhere); a missing entry is a miss, checked by the open after it.
// The size is left to the digest check, which turns an oversized entry into
// a corrupt one that is fetched again.
func (c *cache) checkEntry(p string) error {
	err := inputfile.Check(p, inputfile.Spec{What: "cache entry", Max: math.MaxInt64, Within: c.dir})
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%w (remove it, or the cache directory %s, to fetch it again)", err, c.dir)
}

// maxIndexSize bounds a stored scan index read back: an index holds a
// layer's table of contents (about 100 bytes an entry, so a million entries
// fit) and the few small files scans read.
const maxIndexSize = 256 << 20

// indexPath is where the scan index of layer h for format version lives:
// beside the blobs, keyed by the layer's verified digest and the version.
func (c *cache) indexPath(version string, h v1.Hash) (string, error) {
	if version == "" || strings.ContainsAny(version, `/\`) || version == "." || version == ".." {
		return "", fmt.Errorf("scan index version %q is not a plain name", version)
	}
	return filepath.Join(c.dir, "index", version, h.Algorithm, h.Hex), nil
}

// readIndex returns the stored scan index of h, nil when there is none. It
// does not judge the bytes: their owner (imagefs) checks them and rebuilds
// what does not verify.
func (c *cache) readIndex(version string, h v1.Hash) ([]byte, error) {
	p, err := c.indexPath(version, h)
	if err != nil {
		return nil, err
	}
	if err := c.checkEntry(p); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open scan index %s: %w (fix the cache directory's permissions or remove it)", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexSize+1))
	if err != nil {
		return nil, fmt.Errorf("read scan index %s: %w (fix the cache directory or remove it)", p, err)
	}
	if len(b) > maxIndexSize {
		return nil, nil // not one we wrote: treated as absent, and replaced
	}
	return b, nil
}

// writeIndex stores a scan index atomically (internal/atomicfile): readers
// see a whole index or the previous one, and concurrent writers of the same
// layer's index each rename a whole file into place.
func (c *cache) writeIndex(version string, h v1.Hash, b []byte) error {
	p, err := c.indexPath(version, h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create scan index directory %s: %w (fix permissions or run without a cache)", filepath.Dir(p), err)
	}
	if err := atomicfile.Write(p, b, 0o644); err != nil {
		return fmt.Errorf("write scan index for %s: %w (fix the cache directory's permissions or run without a cache)", h, err)
	}
	return nil
}
