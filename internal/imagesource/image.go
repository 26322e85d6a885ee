package imagesource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The installer DaemonSet runs on a3-megagpu-8g nodes, which are linux/amd64.
const (
	wantOS   = "linux"
	wantArch = "amd64"
)

type resolved struct {
	manifest v1.Hash
	index    v1.Hash // zero unless root named an index
}

// resolve reads the manifest (or index, then its linux/amd64 manifest) and
// the config, verifying each before it is parsed.
func resolve(ctx context.Context, st *store, root v1.Hash) (v1.Image, resolved, error) {
	raw, err := st.manifest(ctx, root, -1)
	if err != nil {
		return nil, resolved{}, err
	}
	mt, isIndex, err := classify(raw, root)
	if err != nil {
		return nil, resolved{}, err
	}
	desc := v1.Descriptor{MediaType: mt, Size: int64(len(raw)), Digest: root}
	var res resolved
	if isIndex {
		child, err := pickPlatform(raw, root)
		if err != nil {
			return nil, resolved{}, err
		}
		raw, err = st.manifest(ctx, child.Digest, child.Size)
		if err != nil {
			return nil, resolved{}, fmt.Errorf("index %s: %w", root, err)
		}
		cmt, cIndex, err := classify(raw, child.Digest)
		if err != nil {
			return nil, resolved{}, fmt.Errorf("index %s: %w", root, err)
		}
		if cIndex {
			return nil, resolved{}, fmt.Errorf("index %s: its linux/amd64 entry %s is itself an index; nested indexes are not supported: pin the image manifest digest instead", root, child.Digest)
		}
		if child.MediaType != "" && child.MediaType != cmt {
			return nil, resolved{}, fmt.Errorf("index %s lists %s as %s but the manifest says %s: the index is malformed", root, child.Digest, child.MediaType, cmt)
		}
		res.index = root
		desc = child
		desc.MediaType = cmt
	}
	res.manifest = desc.Digest
	img, err := newImage(ctx, st, raw, desc)
	if err != nil {
		return nil, resolved{}, fmt.Errorf("image %s: %w", desc.Digest, err)
	}
	return img, res, nil
}

// classify decides from the verified bytes alone (never from a
// Content-Type header, which a cache does not have) whether raw is an image
// manifest or an index, refusing documents that could be read as both.
func classify(raw []byte, h v1.Hash) (types.MediaType, bool, error) {
	var probe struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     types.MediaType `json:"mediaType"`
		Config        json.RawMessage `json:"config"`
		Layers        json.RawMessage `json:"layers"`
		Manifests     json.RawMessage `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return "", false, fmt.Errorf("manifest %s is not valid JSON: %w", h, err)
	}
	mt := probe.MediaType
	switch mt {
	case types.DockerManifestSchema1, types.DockerManifestSchema1Signed:
		return "", false, fmt.Errorf("manifest %s is Docker schema 1 (%s), which is deprecated and unsupported: re-push the image with a current client", h, mt)
	case "":
		switch {
		case probe.Manifests != nil && probe.Config == nil:
			mt = types.OCIImageIndex
		case probe.Config != nil && probe.Manifests == nil:
			mt = types.OCIManifestSchema1
		default:
			return "", false, fmt.Errorf("manifest %s has no mediaType and is neither clearly an image manifest nor an index", h)
		}
	}
	if probe.SchemaVersion != 2 {
		return "", false, fmt.Errorf("manifest %s has schemaVersion %d, want 2", h, probe.SchemaVersion)
	}
	switch {
	case mt.IsImage():
		if probe.Manifests != nil {
			return "", false, fmt.Errorf("manifest %s claims %s but also lists manifests: ambiguous document refused", h, mt)
		}
		return mt, false, nil
	case mt.IsIndex():
		if probe.Config != nil || probe.Layers != nil {
			return "", false, fmt.Errorf("index %s claims %s but also has a config or layers: ambiguous document refused", h, mt)
		}
		return mt, true, nil
	default:
		return "", false, fmt.Errorf("digest %s names a %q document, not a container image: check that the pinned digest is the image's", h, mt)
	}
}

// pickPlatform returns the single linux/amd64 image of an index.
func pickPlatform(raw []byte, h v1.Hash) (v1.Descriptor, error) {
	im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("parse index %s: %w", h, err)
	}
	var found []v1.Descriptor
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			continue
		}
		platforms = append(platforms, d.Platform.String())
		if d.Platform.OS == wantOS && d.Platform.Architecture == wantArch {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		sort.Strings(platforms)
		return v1.Descriptor{}, fmt.Errorf("index %s has no %s/%s image (it has: %s): the installer runs on %s/%s nodes; pin a digest that provides that platform", h, wantOS, wantArch, strings.Join(platforms, ", "), wantOS, wantArch)
	case 1:
	default:
		var ds []string
		for _, d := range found {
			ds = append(ds, d.Digest.String()+" ("+d.Platform.String()+")")
		}
		return v1.Descriptor{}, fmt.Errorf("index %s has %d %s/%s images (%s): pin the digest of the one to read", h, len(found), wantOS, wantArch, strings.Join(ds, ", "))
	}
	d := found[0]
	if d.Digest.Algorithm != "sha256" {
		return v1.Descriptor{}, fmt.Errorf("index %s: manifest digest %s uses %s: only sha256 is supported", h, d.Digest, d.Digest.Algorithm)
	}
	if d.MediaType != "" && !d.MediaType.IsImage() {
		return v1.Descriptor{}, fmt.Errorf("index %s: the %s/%s entry %s has media type %s, not an image manifest", h, wantOS, wantArch, d.Digest, d.MediaType)
	}
	return d, nil
}

// image is the verified core; partial fills in the derived v1.Image methods.
type image struct {
	ctx      context.Context
	st       *store
	raw      []byte
	desc     v1.Descriptor
	manifest *v1.Manifest
	config   []byte
	diffIDs  []v1.Hash
}

func newImage(ctx context.Context, st *store, raw []byte, desc v1.Descriptor) (v1.Image, error) {
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	if err := checkDescriptor("config", m.Config); err != nil {
		return nil, err
	}
	for i, l := range m.Layers {
		if err := checkDescriptor(fmt.Sprintf("layer %d", i), l); err != nil {
			return nil, err
		}
	}
	var cfg []byte
	if m.Config.Data != nil {
		// OCI 1.1 allows the config inline; it is verified like a fetch.
		if err := checkBytes("inline config "+m.Config.Digest.String(), m.Config.Data, m.Config.Digest, m.Config.Size, maxConfigSize); err != nil {
			return nil, err
		}
		cfg = m.Config.Data
	} else if cfg, err = st.config(ctx, m.Config); err != nil {
		return nil, err
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(cfg))
	if err != nil {
		return nil, fmt.Errorf("parse config %s: %w", m.Config.Digest, err)
	}
	if (cf.OS != "" && cf.OS != wantOS) || (cf.Architecture != "" && cf.Architecture != wantArch) {
		return nil, fmt.Errorf("config %s is for %s/%s, but the installer runs on %s/%s nodes: pin the %s/%s image", m.Config.Digest, cf.OS, cf.Architecture, wantOS, wantArch, wantOS, wantArch)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("config %s lists %d layer diff IDs but the manifest has %d layers: the image is malformed", m.Config.Digest, len(cf.RootFS.DiffIDs), len(m.Layers))
	}
	core := &image{ctx: ctx, st: st, raw: raw, desc: desc, manifest: m, config: cfg, diffIDs: cf.RootFS.DiffIDs}
	ext, err := partial.CompressedToImage(core)
	if err != nil {
		return nil, err
	}
	return &verifiedImage{Image: ext, core: core}, nil
}

func checkDescriptor(what string, d v1.Descriptor) error {
	if d.Digest.Algorithm != "sha256" {
		return fmt.Errorf("%s digest %q: only sha256 is supported", what, d.Digest)
	}
	if d.Size < 0 {
		return fmt.Errorf("%s %s has negative size %d: the manifest is malformed", what, d.Digest, d.Size)
	}
	return nil
}

func (i *image) RawManifest() ([]byte, error)        { return i.raw, nil }
func (i *image) RawConfigFile() ([]byte, error)      { return i.config, nil }
func (i *image) MediaType() (types.MediaType, error) { return i.desc.MediaType, nil }
func (i *image) Descriptor() (*v1.Descriptor, error) { d := i.desc; return &d, nil }

func (i *image) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	l, err := i.layerByDigest(h)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return l, nil
}

func (i *image) layerByDigest(h v1.Hash) (*layer, error) {
	for idx, d := range i.manifest.Layers {
		if d.Digest == h {
			return &layer{img: i, desc: d, diffID: i.diffIDs[idx]}, nil
		}
	}
	return nil, fmt.Errorf("blob %s is not a layer of image %s", h, i.desc.Digest)
}

// verifiedImage replaces partial's layers with ours: partial's Uncompressed
// would trust the decompressor to read the compressed stream to its end,
// which is where the digest is checked.
type verifiedImage struct {
	v1.Image
	core *image
}

func (v *verifiedImage) Layers() ([]v1.Layer, error) {
	ls := make([]v1.Layer, 0, len(v.core.manifest.Layers))
	for idx, d := range v.core.manifest.Layers {
		ls = append(ls, v.core.wrap(&layer{img: v.core, desc: d, diffID: v.core.diffIDs[idx]}))
	}
	return ls, nil
}

func (v *verifiedImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := v.core.layerByDigest(h)
	if err != nil {
		return nil, err
	}
	return v.core.wrap(l), nil
}

func (v *verifiedImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	for idx, d := range v.core.diffIDs {
		if d == h {
			return v.core.wrap(&layer{img: v.core, desc: v.core.manifest.Layers[idx], diffID: d}), nil
		}
	}
	return nil, fmt.Errorf("diff ID %s is not a layer of image %s", h, v.core.desc.Digest)
}

func (v *verifiedImage) Descriptor() (*v1.Descriptor, error) { return v.core.Descriptor() }

// wrap gives a layer of a cached source its scan index (imagefs's
// IndexedLayer): a layer enters the cache verified, and from then on a scan
// that finds its index never reads or hashes the blob again.
func (i *image) wrap(l *layer) v1.Layer {
	if i.st.cache == nil {
		return l
	}
	return &indexedLayer{layer: l}
}

// indexedLayer is a layer whose store has a cache to keep scan indexes in.
type indexedLayer struct{ *layer }

// ScanIndex returns the stored scan index of this layer, nil when none.
func (l *indexedLayer) ScanIndex(version string) ([]byte, error) {
	return l.img.st.cache.readIndex(version, l.desc.Digest)
}

// StoreScanIndex stores the scan index of this layer atomically.
func (l *indexedLayer) StoreScanIndex(version string, b []byte) error {
	return l.img.st.cache.writeIndex(version, l.desc.Digest, b)
}

// layer reads through the store, so its compressed stream is verified.
type layer struct {
	img    *image
	desc   v1.Descriptor
	diffID v1.Hash
}

var _ v1.Layer = (*layer)(nil)

func (l *layer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *layer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *layer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *layer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }
func (l *layer) Descriptor() (*v1.Descriptor, error) { d := l.desc; return &d, nil }

// Compressed returns the layer blob. Its final Read returns an error
// instead of io.EOF when the content does not match the digest.
func (l *layer) Compressed() (io.ReadCloser, error) {
	return l.img.st.open(l.img.ctx, l.desc)
}

// Uncompressed decompresses with go-containerregistry's detection (gzip,
// zstd or none) and, when the decompressed stream ends, drains the
// compressed stream to its end so the digest check always runs before
// io.EOF is returned. The uncompressed content is not separately checked
// against the diff ID: the compressed digest already pins every byte.
func (l *layer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	ul, err := partial.CompressedToLayer(&openedLayer{layer: l, rc: rc})
	if err != nil {
		rc.Close()
		return nil, err
	}
	u, err := ul.Uncompressed()
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("decompress layer %s: %w", l.desc.Digest, err)
	}
	return &drainingReader{ReadCloser: u, compressed: rc}, nil
}

// openedLayer hands partial an already opened compressed stream so that we
// keep a handle on it for draining.
type openedLayer struct {
	*layer
	rc   io.ReadCloser
	used bool
}

func (o *openedLayer) Compressed() (io.ReadCloser, error) {
	if o.used {
		return nil, errors.New("compressed stream already consumed")
	}
	o.used = true
	return o.rc, nil
}

type drainingReader struct {
	io.ReadCloser
	compressed io.Reader
}

func (d *drainingReader) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err == io.EOF {
		if _, derr := io.Copy(io.Discard, d.compressed); derr != nil {
			return n, derr
		}
	}
	return n, err
}
