package imagesource

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

func TestRegistryPullsAndVerifiesEveryLayer(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 3)
	pinned := push(t, reg, "installer", want)

	var stats Stats
	src, err := Registry(pinned, WithStats(&stats), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)

	wantDigest, _ := want.Digest()
	if got, _ := img.Digest(); got != wantDigest {
		t.Errorf("image digest %s, want %s", got, wantDigest)
	}
	wantBlobs := compressed(t, want)
	for i := range wantBlobs {
		got, err := readLayer(img, i)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if !bytes.Equal(got, wantBlobs[i]) {
			t.Errorf("layer %d: content differs from the pushed layer", i)
		}
	}

	// Uncompressed through our draining wrapper yields the pushed tar.
	ls, _ := img.Layers()
	wls, _ := want.Layers()
	u, err := ls[2].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	gotTar, err := io.ReadAll(u)
	u.Close()
	if err != nil {
		t.Fatalf("uncompressed layer: %v", err)
	}
	wu, _ := wls[2].Uncompressed()
	wantTar, _ := io.ReadAll(wu)
	if !bytes.Equal(gotTar, wantTar) {
		t.Error("uncompressed layer differs from the pushed layer")
	}
	if gd, _ := ls[2].DiffID(); gd != mustDiffID(t, wls[2]) {
		t.Errorf("diff ID %s, want %s", gd, mustDiffID(t, wls[2]))
	}

	got := src.Describe()
	wantProv := Provenance{Kind: KindRegistry, Pinned: pinned, Read: pinned, Digest: wantDigest.String()}
	if got != wantProv {
		t.Errorf("provenance %+v, want %+v", got, wantProv)
	}
	if s := stats.Snapshot(); s.Requests == 0 || s.Bytes == 0 {
		t.Errorf("stats %+v: a pull without cache must count requests and bytes", s)
	}
}

func mustDiffID(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	h, err := l.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestReferenceWithoutDigestRefused(t *testing.T) {
	const digest = "sha256:4c9f000000000000000000000000000000000000000000000000000000000000"
	pinned := "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15@" + digest
	for _, tc := range []struct {
		name string
		make func() (Source, error)
		want string
	}{
		{"registry tag only", func() (Source, error) {
			return Registry("us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15")
		}, "has no digest"},
		{"substitute tag only", func() (Source, error) { return Substitute(pinned, "127.0.0.1:5000/mirror:v1") }, "has no digest"},
		{"layout pinned tag only", func() (Source, error) { return Layout("example.com/x:v1", t.TempDir(), "") }, "has no digest"},
		{"sha512 digest", func() (Source, error) {
			return Registry("example.com/x:v1@sha512:" + strings.Repeat("ab", 64))
		}, "only sha256"},
		{"implicit registry", func() (Source, error) { return Registry("ubuntu@" + digest) }, "not a valid"},
		{"substitute equals pinned", func() (Source, error) { return Substitute(pinned, pinned) }, "pinned reference itself"},
		{"negative retry", func() (Source, error) { return Registry(pinned, WithRetry(-1)) }, "out of range"},
		{"empty cache dir", func() (Source, error) { return Registry(pinned, WithCache("")) }, "cache directory is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.make()
			if s != nil {
				t.Errorf("got a source, want none")
			}
			mustContain(t, err, tc.want)
		})
	}
}

func TestUnknownDigestNamesReferenceAndBOM(t *testing.T) {
	reg := registrytest.Start(t)
	push(t, reg, "installer", testImage(t, 1))
	missing := reg.Ref("installer") + ":v1@" + digestOf([]byte("not pushed")).String()
	src, err := Registry(missing, fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, missing, "not found", "bom.yaml")
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
		t.Errorf("error %v does not wrap the 404", err)
	}
}

func TestUnauthorizedExplainsCredentials(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "installer", testImage(t, 1))
	var seen atomic.Int64
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request) bool {
		seen.Add(1)
		w.Header().Set("WWW-Authenticate", `Basic realm="tcpxogen-test"`)
		w.WriteHeader(http.StatusUnauthorized)
		return true
	}, nil)
	src, err := Registry(rehost(pinned, host), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "authentication", "gcloud auth configure-docker", "docker login", "GOOGLE_APPLICATION_CREDENTIALS")
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("error %v does not wrap the 401", err)
	}
	if seen.Load() == 0 {
		t.Error("the proxy saw no request")
	}
}

// failFirst answers the first n requests with 503; total counts all.
func failFirst(n int64, failed, total *atomic.Int64) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if total.Add(1) <= n {
			failed.Add(1)
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return true
		}
		return false
	}
}

func TestTransient5xxIsRetried(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 2)
	pinned := push(t, reg, "installer", want)
	var failed, total atomic.Int64
	host := proxy(t, reg, failFirst(2, &failed, &total), nil)

	var stats Stats
	probes := &httpsProbes{inner: http.DefaultTransport}
	src, err := Registry(rehost(pinned, host), WithRetry(3), WithStats(&stats), WithTransport(probes), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	for i := range 2 {
		if _, err := readLayer(img, i); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	if failed.Load() != 2 {
		t.Errorf("proxy failed %d requests, want 2", failed.Load())
	}
	// Every attempt goes through the counting transport, failures included.
	if s := stats.Snapshot(); s.Requests != total.Load()+probes.n.Load() {
		t.Errorf("stats counted %d requests, the proxy saw %d plus %d https probes", s.Requests, total.Load(), probes.n.Load())
	}
}

// httpsProbes counts the https attempts go-containerregistry's ping makes
// in parallel with plain http for loopback registries; they fail before
// reaching the plain-HTTP test proxy but are real requests.
type httpsProbes struct {
	inner http.RoundTripper
	n     atomic.Int64
}

func (p *httpsProbes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		p.n.Add(1)
	}
	return p.inner.RoundTrip(r)
}

func TestPersistent5xxFailsNamingStatus(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "installer", testImage(t, 1))
	var failed, total atomic.Int64
	host := proxy(t, reg, failFirst(1<<30, &failed, &total), nil)
	src, err := Registry(rehost(pinned, host), WithRetry(2), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "503")
	if failed.Load() != 3 {
		t.Errorf("proxy saw %d attempts, want 3 (1 + 2 retries)", failed.Load())
	}
}

func TestBlobCorruptedInRegistryStorage(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 2)
	pinned := push(t, reg, "installer", want)
	bad := layerDigests(t, want)[1]
	corrupt(t, reg.BlobPath(bad))

	cacheDir := t.TempDir()
	src, err := Registry(pinned, WithCache(cacheDir), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	if _, err := readLayer(img, 0); err != nil {
		t.Fatalf("intact layer: %v", err)
	}
	_, err = readLayer(img, 1)
	mustContain(t, err, bad.String())

	// The uncompressed path fails too (gzip or our digest check, either way).
	ls, _ := img.Layers()
	if u, err := ls[1].Uncompressed(); err == nil {
		_, err = io.Copy(io.Discard, u)
		u.Close()
		if err == nil {
			t.Error("reading the corrupted layer uncompressed to EOF succeeded")
		}
	}

	for _, n := range cacheEntries(t, cacheDir) {
		if strings.Contains(n, bad.Hex) {
			t.Errorf("cache holds %s for the corrupted blob", n)
		}
	}
	checkCacheSound(t, cacheDir)
}

func TestManifestNotMatchingDigestRefused(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "installer", testImage(t, 1))
	host := proxy(t, reg, nil, func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.Contains(resp.Request.URL.Path, "/manifests/") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		// Same JSON meaning, different bytes: a proxy re-serialising.
		b = append(b, '\n')
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		return nil
	})
	cacheDir := t.TempDir()
	src, err := Registry(rehost(pinned, host), WithCache(cacheDir), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "does not match")
	if n := cacheEntries(t, cacheDir); len(n) != 0 {
		t.Errorf("cache holds %v after a refused manifest", n)
	}
}

func TestSubstituteReadsDeclaredImage(t *testing.T) {
	reg := registrytest.Start(t)
	pinnedA := push(t, reg, "pinned", testImage(t, 1))
	imgB := testImage(t, 2)
	push(t, reg, "mirror", imgB)
	// The declared form: REGISTRY/REPO@sha256:DIGEST, no tag.
	dB, _ := imgB.Digest()
	subst := reg.Ref("mirror") + "@" + dB.String()

	src, err := Substitute(pinnedA, subst, fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	if got, _ := img.Digest(); got != dB {
		t.Errorf("read %s, want the substitute %s", got, dB)
	}
	for i := range 2 {
		if _, err := readLayer(img, i); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	want := Provenance{Kind: KindRegistrySubstitute, Pinned: pinnedA, Read: subst, Digest: dB.String(), Substituted: true}
	if got := src.Describe(); got != want {
		t.Errorf("provenance %+v, want %+v", got, want)
	}
}

func TestIndexResolvesToLinuxAMD64(t *testing.T) {
	reg := registrytest.Start(t)
	amd := testImage(t, 1)
	arm := testImageFor(t, 1, "linux", "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	ref, _ := name.NewTag(reg.Ref("multi") + ":v1")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	amdDigest, _ := amd.Digest()
	pinned := ref.String() + "@" + idxDigest.String()

	cacheDir := t.TempDir()
	src, err := Registry(pinned, WithCache(cacheDir), fast)
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	if got, _ := img.Digest(); got != amdDigest {
		t.Errorf("resolved %s, want the amd64 image %s", got, amdDigest)
	}
	want := Provenance{Kind: KindRegistry, Pinned: pinned, Read: pinned, Digest: amdDigest.String(), IndexDigest: idxDigest.String()}
	if got := src.Describe(); got != want {
		t.Errorf("provenance %+v, want %+v", got, want)
	}

	// Warm: both the index and the manifest come from the cache.
	var stats Stats
	warm, err := Registry(pinned, WithCache(cacheDir), WithTransport(&offline{}), WithStats(&stats), fast)
	if err != nil {
		t.Fatal(err)
	}
	mustImage(t, warm)
	if got := warm.Describe(); got != want {
		t.Errorf("warm provenance %+v, want %+v", got, want)
	}
	if stats.Requests != 0 {
		t.Errorf("warm index resolution made %d requests", stats.Requests)
	}
}

func TestIndexWithoutLinuxAMD64Refused(t *testing.T) {
	reg := registrytest.Start(t)
	arm := testImageFor(t, 1, "linux", "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	ref, _ := name.NewTag(reg.Ref("armonly") + ":v1")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	src, err := Registry(ref.String()+"@"+d.String(), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "no linux/amd64 image", "linux/arm64")
}

func TestNonAMD64ImageRefused(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "arm", testImageFor(t, 1, "linux", "arm64"))
	src, err := Registry(pinned, fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "linux/arm64", "linux/amd64")
}

// go-containerregistry trusts the Docker-Content-Digest header instead of
// hashing for signed schema 1 manifests; our own hash of the bytes must
// still refuse content that does not match the pinned digest.
func TestManifestCheckedEvenWhenRemoteTrustsHeader(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "installer", testImage(t, 1))
	host := proxy(t, reg, nil, func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.Contains(resp.Request.URL.Path, "/manifests/") {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		b = append(b, '\n')
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		resp.Header.Set("Content-Type", "application/vnd.docker.distribution.manifest.v1+prettyjws")
		return nil // Docker-Content-Digest still names the pinned digest
	})
	cacheDir := t.TempDir()
	src, err := Registry(rehost(pinned, host), WithCache(cacheDir), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "does not match its digest")
	if n := cacheEntries(t, cacheDir); len(n) != 0 {
		t.Errorf("cache holds %v after a refused manifest", n)
	}
}

func TestBlobMissingFromRegistryExplained(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 1)
	pinned := push(t, reg, "installer", want)
	h := layerDigests(t, want)[0]
	if err := os.Remove(reg.BlobPath(h)); err != nil {
		t.Fatal(err)
	}
	src, err := Registry(pinned, WithRetry(0), fast)
	if err != nil {
		t.Fatal(err)
	}
	_, err = readLayer(mustImage(t, src), 0)
	mustContain(t, err, h.String(), "incomplete copy")
}
