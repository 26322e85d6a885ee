// Package imagesource decides where the pinned installer image is read from
// and guarantees that every byte it hands out is checked against a digest:
// the registry, substitute and OCI-layout origins and the content-addressed
// blob cache. It does not read files out of layers (imagefs).
//
// The pinned reference (repo:tag@sha256:...) is the root of trust. A manifest
// is fetched by digest only and its bytes are hashed before they are parsed;
// the config is read whole and hashed before use; a layer's compressed
// stream is hashed as it is read and ends with an error instead of io.EOF
// when the content does not match. Consumers therefore must drain a layer to
// EOF before trusting anything read from it. The same checks apply to every
// origin: a registry, a declared substitute registry, an OCI image layout
// directory and the local blob cache. go-containerregistry's layout images
// and its filesystem cache do not verify, so layout is used only to locate
// files and the cache is our own (see WithCache).
package imagesource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Kinds of source, recorded in Provenance.Kind.
const (
	KindRegistry           = "registry"
	KindRegistrySubstitute = "registry-substitute"
	KindOCILayout          = "oci-layout"
	// KindTestdata is set by callers wrapping the bundled reconstruction
	// image with FromImage.
	KindTestdata = "testdata"
)

// Source yields the image to read. It is an interface so tests and the
// offline reconstruction can swap implementations.
type Source interface {
	// Image resolves and verifies the manifest and config and returns the
	// image. ctx also governs the blob reads made later through the image's
	// layers, as go-containerregistry's remote.WithContext does.
	Image(ctx context.Context) (v1.Image, error)
	// Describe reports what was read. Digest (and IndexDigest) are set only
	// after Image succeeded.
	Describe() Provenance
}

// Provenance records what was pinned and what was actually read.
type Provenance struct {
	// Kind is one of the Kind* constants.
	Kind string
	// Pinned is the BOM's pinned reference.
	Pinned string
	// Read is what was actually read: a full reference with digest, or
	// layout-dir@digest.
	Read string
	// Digest is the digest of the image manifest actually read.
	Digest string
	// IndexDigest is set when the digest read named an image index; Digest
	// is then the linux/amd64 manifest chosen from it.
	IndexDigest string
	// Substituted is true when Read is not Pinned.
	Substituted bool
}

// Stats counts network traffic. Fields are updated atomically while reads
// are in flight; use Snapshot (or sync/atomic) to read them concurrently.
type Stats struct {
	// Requests is the number of HTTP round trips, each retry included.
	Requests int64
	// Bytes is the number of response body bytes read from the network.
	Bytes int64
}

// Snapshot returns a consistent-enough copy of the counters for reporting.
func (s *Stats) Snapshot() Stats {
	return Stats{Requests: atomic.LoadInt64(&s.Requests), Bytes: atomic.LoadInt64(&s.Bytes)}
}

// Option configures a source.
type Option func(*options)

type options struct {
	cacheDir   string
	transport  http.RoundTripper
	keychain   authn.Keychain
	retries    int
	retryDelay time.Duration
	stats      *Stats
	errs       []error
}

// Retries default to three after the first attempt, waiting about 1 s, 2 s
// and 4 s: enough to ride out a registry blip, short enough that a real
// outage is reported within seconds. The cap keeps the worst case (1+2+...+32
// s) near a minute, since go-containerregistry's backoff sleeps without
// watching the context.
const (
	defaultRetries    = 3
	defaultRetryDelay = time.Second
	maxRetries        = 6
)

// WithCache keeps manifests, configs and fully read layers in a
// content-addressed directory (dir/blobs/sha256/<hex>). Entries are written
// by rename only after they verified and are hashed again whenever they are
// read; a corrupt entry is removed and fetched again. Several processes may
// share one directory. A run whose manifest, config and needed layers are
// all cached makes no network request at all. The cache also keeps each
// layer's imagefs scan index (dir/index/VERSION/sha256/<hex>, written
// atomically after the layer verified), so a warm scan reads indexes only
// and neither re-reads nor re-hashes the blobs. It applies to registry
// sources; a layout is already local and is read in place.
func WithCache(dir string) Option {
	return func(o *options) {
		if strings.TrimSpace(dir) == "" {
			o.errs = append(o.errs, errors.New("cache directory is empty: pass a directory path or omit the cache option"))
			return
		}
		o.cacheDir = filepath.Clean(dir)
	}
}

// WithTransport sets the HTTP transport registry requests go through.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *options) {
		if rt == nil {
			o.errs = append(o.errs, errors.New("transport is nil: omit the transport option to use the default"))
			return
		}
		o.transport = rt
	}
}

// WithKeychain sets where registry credentials come from. The default is
// the Docker config (docker login, credential helpers) followed by Google
// credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud) for gcr.io and
// pkg.dev hosts.
func WithKeychain(kc authn.Keychain) Option {
	return func(o *options) {
		if kc == nil {
			o.errs = append(o.errs, errors.New("keychain is nil: omit the keychain option to use the default"))
			return
		}
		o.keychain = kc
	}
}

// WithRetry sets how many times a request that failed with a transient
// status (408, 429, 5xx) or network error is retried, with exponential
// backoff. 0 disables retries.
func WithRetry(n int) Option {
	return func(o *options) {
		if n < 0 || n > maxRetries {
			o.errs = append(o.errs, fmt.Errorf("retry count %d out of range: use 0 to %d", n, maxRetries))
			return
		}
		o.retries = n
	}
}

// WithStats counts HTTP requests and bytes fetched from the network.
func WithStats(s *Stats) Option {
	return func(o *options) {
		if s == nil {
			o.errs = append(o.errs, errors.New("stats is nil: pass a *Stats to fill or omit the option"))
			return
		}
		o.stats = s
	}
}

// withRetryDelay shortens the backoff so tests exercising retries stay fast.
func withRetryDelay(d time.Duration) Option {
	return func(o *options) { o.retryDelay = d }
}

func makeOptions(opts []Option) (*options, error) {
	o := &options{retries: defaultRetries, retryDelay: defaultRetryDelay}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	if len(o.errs) > 0 {
		return nil, errors.Join(o.errs...)
	}
	return o, nil
}

// parsePinned accepts only references that carry a sha256 digest: a tag
// can move, so it is never what is read.
func parsePinned(what, ref string) (name.Digest, v1.Hash, error) {
	if !strings.Contains(ref, "@") {
		return name.Digest{}, v1.Hash{}, fmt.Errorf("%s %q has no digest: tags can move, so the image must be pinned as REGISTRY/REPO[:TAG]@sha256:DIGEST", what, ref)
	}
	d, err := name.NewDigest(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, v1.Hash{}, fmt.Errorf("%s %q is not a valid REGISTRY/REPO[:TAG]@sha256:DIGEST reference: %w", what, ref, err)
	}
	h, err := parseDigest(d.DigestStr())
	if err != nil {
		return name.Digest{}, v1.Hash{}, fmt.Errorf("%s %q: %w", what, ref, err)
	}
	return d, h, nil
}

// parseDigest accepts sha256 only: the cache is keyed by sha256 and every
// digest we verify against must be one we can recompute.
func parseDigest(s string) (v1.Hash, error) {
	h, err := v1.NewHash(s)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("invalid digest %q: %w", s, err)
	}
	if h.Algorithm != "sha256" {
		return v1.Hash{}, fmt.Errorf("digest %q uses %s: only sha256 is supported", s, h.Algorithm)
	}
	return h, nil
}

// Registry reads the pinned reference from its registry, by digest.
func Registry(pinned string, opts ...Option) (Source, error) {
	ref, root, err := parsePinned("pinned reference", pinned)
	if err != nil {
		return nil, err
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	f := newRemoteFetcher(ref, o, "check the digest of the pinned reference in bom.yaml")
	return &source{
		prov:  Provenance{Kind: KindRegistry, Pinned: pinned, Read: pinned},
		root:  root,
		store: newStore(f, o.cacheDir),
	}, nil
}

// Substitute reads substitute (REGISTRY/REPO[:TAG]@sha256:DIGEST) instead of
// pinned, for offline or mirrored work. The substitution is recorded.
func Substitute(pinned, substitute string, opts ...Option) (Source, error) {
	if _, _, err := parsePinned("pinned reference", pinned); err != nil {
		return nil, err
	}
	ref, root, err := parsePinned("substitute reference", substitute)
	if err != nil {
		return nil, err
	}
	if substitute == pinned {
		return nil, fmt.Errorf("substitute %q is the pinned reference itself: read it with the registry source instead of declaring a substitute", substitute)
	}
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	f := newRemoteFetcher(ref, o, "check the substitute reference's digest")
	return &source{
		prov:  Provenance{Kind: KindRegistrySubstitute, Pinned: pinned, Read: substitute, Substituted: true},
		root:  root,
		store: newStore(f, o.cacheDir),
	}, nil
}

// Layout reads an image from an OCI image layout directory. digest selects
// the manifest or index to read; "" means the single entry of index.json.
// Network options (cache, transport, keychain, retry, stats) have no effect.
func Layout(pinned, dir, digest string, opts ...Option) (Source, error) {
	if _, _, err := parsePinned("pinned reference", pinned); err != nil {
		return nil, err
	}
	if _, err := makeOptions(opts); err != nil {
		return nil, err
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout (want oci-layout and index.json): %w", dir, err)
	}
	var root v1.Hash
	if digest == "" {
		root, err = singleEntry(p, dir)
	} else {
		root, err = parseDigest(digest)
		if err != nil {
			err = fmt.Errorf("layout %s: %w", dir, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return &source{
		prov:  Provenance{Kind: KindOCILayout, Pinned: pinned, Read: dir + "@" + root.String(), Substituted: true},
		root:  root,
		store: newStore(&layoutFetcher{dir: dir, path: p}, ""),
	}, nil
}

// singleEntry picks the one manifest index.json lists. More than one is
// ambiguous: the caller must say which digest it means.
func singleEntry(p layout.Path, dir string) (v1.Hash, error) {
	ii, err := p.ImageIndex()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("read %s: %w", filepath.Join(dir, "index.json"), err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("parse %s: %w", filepath.Join(dir, "index.json"), err)
	}
	if n := len(im.Manifests); n != 1 {
		return v1.Hash{}, fmt.Errorf("%s lists %d manifests: pass the digest of the one to read", filepath.Join(dir, "index.json"), n)
	}
	h := im.Manifests[0].Digest
	if h.Algorithm != "sha256" {
		return v1.Hash{}, fmt.Errorf("%s: manifest digest %s uses %s: only sha256 is supported", filepath.Join(dir, "index.json"), h, h.Algorithm)
	}
	return h, nil
}

// source is the verified implementation behind Registry, Substitute and
// Layout.
type source struct {
	store *store
	root  v1.Hash

	mu   sync.Mutex
	prov Provenance
	img  v1.Image
}

func (s *source) Image(ctx context.Context) (v1.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.img != nil {
		return s.img, nil
	}
	img, res, err := resolve(ctx, s.store, s.root)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.prov.Read, err)
	}
	s.img = img
	s.prov.Digest = res.manifest.String()
	if res.index != (v1.Hash{}) {
		s.prov.IndexDigest = res.index.String()
	}
	return img, nil
}

func (s *source) Describe() Provenance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prov
}

// FromImage wraps an image the caller built or loaded itself (the bundled
// testdata reconstruction). It verifies nothing beyond computing the
// manifest digest; the result is always recorded as substituted. kind must
// not claim a registry read.
func FromImage(pinned, kind, read string, img v1.Image) Source {
	return &memSource{prov: Provenance{Kind: kind, Pinned: pinned, Read: read, Substituted: true}, img: img}
}

type memSource struct {
	mu   sync.Mutex
	prov Provenance
	img  v1.Image
	done bool
}

func (m *memSource) Image(context.Context) (v1.Image, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.prov.Kind {
	case "":
		return nil, fmt.Errorf("in-memory image for %s has no kind: set one such as %q", m.prov.Pinned, KindTestdata)
	case KindRegistry, KindRegistrySubstitute:
		return nil, fmt.Errorf("in-memory image for %s claims kind %q, but it was not read from a registry: use %q or another kind that says where it came from", m.prov.Pinned, m.prov.Kind, KindTestdata)
	}
	if m.img == nil {
		return nil, fmt.Errorf("in-memory image for %s is nil", m.prov.Pinned)
	}
	if !m.done {
		d, err := m.img.Digest()
		if err != nil {
			return nil, fmt.Errorf("compute digest of in-memory image %s: %w", m.prov.Read, err)
		}
		m.prov.Digest = d.String()
		m.done = true
	}
	return m.img, nil
}

func (m *memSource) Describe() Provenance {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prov
}
