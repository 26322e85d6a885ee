package imagesource

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

const layoutPinned = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15@sha256:4c9f000000000000000000000000000000000000000000000000000000000000"

func writeLayout(t *testing.T, imgs ...v1.Image) string {
	t.Helper()
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func blobFile(dir string, h v1.Hash) string {
	return filepath.Join(dir, "blobs", h.Algorithm, h.Hex)
}

func TestLayoutReadsVerifiedImage(t *testing.T) {
	want := testImage(t, 2)
	dir := writeLayout(t, want)
	src, err := Layout(layoutPinned, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	d, _ := want.Digest()
	wantBlobs := compressed(t, want)
	for i := range wantBlobs {
		got, err := readLayer(img, i)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if !bytes.Equal(got, wantBlobs[i]) {
			t.Errorf("layer %d differs", i)
		}
	}
	wantProv := Provenance{Kind: KindOCILayout, Pinned: layoutPinned, Read: dir + "@" + d.String(), Digest: d.String(), Substituted: true}
	if got := src.Describe(); got != wantProv {
		t.Errorf("provenance %+v, want %+v", got, wantProv)
	}
}

func TestLayoutSelectsByDigest(t *testing.T) {
	a, b := testImage(t, 1), testImage(t, 1)
	dir := writeLayout(t, a, b)
	if _, err := Layout(layoutPinned, dir, ""); err == nil {
		t.Fatal("a layout with two images and no digest was accepted")
	} else {
		mustContain(t, err, "lists 2 manifests", "digest")
	}
	db, _ := b.Digest()
	src, err := Layout(layoutPinned, dir, db.String())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mustImage(t, src).Digest(); got != db {
		t.Errorf("read %s, want %s", got, db)
	}
}

func TestLayoutTamperedLayerFailsAtEOF(t *testing.T) {
	want := testImage(t, 2)
	dir := writeLayout(t, want)
	bad := layerDigests(t, want)[1]
	corrupt(t, blobFile(dir, bad))

	src, err := Layout(layoutPinned, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	img := mustImage(t, src)
	if _, err := readLayer(img, 0); err != nil {
		t.Fatalf("intact layer: %v", err)
	}
	_, err = readLayer(img, 1)
	mustContain(t, err, bad.String(), "does not match its digest")
}

func TestLayoutLayerWithWrongSizeFails(t *testing.T) {
	want := testImage(t, 1)
	dir := writeLayout(t, want)
	h := layerDigests(t, want)[0]
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "ended after"},
		{"extended", func(b []byte) []byte { return append(b, 0) }, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, err := os.ReadFile(blobFile(dir, h))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(blobFile(dir, h), orig, 0o644) })
			if err := os.WriteFile(blobFile(dir, h), tc.edit(append([]byte(nil), orig...)), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := Layout(layoutPinned, dir, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := readLayer(mustImage(t, src), 0)
			mustContain(t, err, tc.want)
			if len(got) > len(orig) {
				t.Errorf("handed out %d bytes, more than the declared %d", len(got), len(orig))
			}
		})
	}
}

func TestLayoutTamperedManifestOrConfigRefused(t *testing.T) {
	want := testImage(t, 1)
	d, _ := want.Digest()
	m, _ := want.Manifest()
	for _, tc := range []struct {
		name string
		blob v1.Hash
	}{
		{"manifest", d},
		{"config", m.Config.Digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeLayout(t, want)
			tamperJSON(t, blobFile(dir, tc.blob))
			src, err := Layout(layoutPinned, dir, "")
			if err != nil {
				t.Fatal(err)
			}
			img, err := src.Image(context.Background())
			if img != nil {
				t.Error("got an image from a tampered layout")
			}
			mustContain(t, err, tc.blob.String(), "does not match its digest")
			if got := src.Describe().Digest; got != "" {
				t.Errorf("provenance records digest %s after a failed read", got)
			}
		})
	}
}

// tamperJSON changes a JSON blob without breaking its syntax, so only the
// digest check can catch it.
func tamperJSON(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nb := bytes.Replace(b, []byte(`"amd64"`), []byte(`"AMD64"`), 1)
	if bytes.Equal(nb, b) {
		nb = append(b, ' ')
	}
	if err := os.WriteFile(path, nb, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLayoutMissingBlobNamesIt(t *testing.T) {
	want := testImage(t, 1)
	dir := writeLayout(t, want)
	h := layerDigests(t, want)[0]
	if err := os.Remove(blobFile(dir, h)); err != nil {
		t.Fatal(err)
	}
	src, err := Layout(layoutPinned, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = readLayer(mustImage(t, src), 0)
	mustContain(t, err, h.String(), "incomplete")
}

func TestLayoutRejectsNonLayout(t *testing.T) {
	_, err := Layout(layoutPinned, t.TempDir(), "")
	mustContain(t, err, "not an OCI image layout")
}

// A decompressor may stop at the end of its stream; the draining reader
// still drives the compressed stream to EOF so the digest check runs.
func TestUncompressedDrainsCompressedStream(t *testing.T) {
	data := []byte("compressed bytes the decompressor never asked for")
	vr := newVerifyingReader(io.NopCloser(bytes.NewReader(data)), digestOf([]byte("something else")), int64(len(data)), "blob under test", nil)
	d := &drainingReader{ReadCloser: io.NopCloser(strings.NewReader("decompressed")), compressed: vr}
	_, err := io.ReadAll(d)
	mustContain(t, err, "blob under test", "does not match its digest")

	ok := newVerifyingReader(io.NopCloser(bytes.NewReader(data)), digestOf(data), int64(len(data)), "good blob", nil)
	d = &drainingReader{ReadCloser: io.NopCloser(strings.NewReader("decompressed")), compressed: ok}
	if got, err := io.ReadAll(d); err != nil || string(got) != "decompressed" {
		t.Errorf("intact blob: got %q, %v", got, err)
	}
}

func TestFromImageIsAlwaysSubstituted(t *testing.T) {
	img := testImage(t, 1)
	d, _ := img.Digest()
	src := FromImage(layoutPinned, KindTestdata, "testdata/installer", img)
	got := mustImage(t, src)
	if gd, _ := got.Digest(); gd != d {
		t.Errorf("digest %s, want %s", gd, d)
	}
	want := Provenance{Kind: KindTestdata, Pinned: layoutPinned, Read: "testdata/installer", Digest: d.String(), Substituted: true}
	if p := src.Describe(); p != want {
		t.Errorf("provenance %+v, want %+v", p, want)
	}
	for _, kind := range []string{"", KindRegistry, KindRegistrySubstitute} {
		_, err := FromImage(layoutPinned, kind, "x", img).Image(context.Background())
		if err == nil {
			t.Errorf("kind %q accepted for an in-memory image", kind)
		}
	}
}

func TestLayoutNonLinuxRefused(t *testing.T) {
	img := testImageFor(t, 1, "windows", "amd64")
	src, err := Layout(layoutPinned, writeLayout(t, img), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Image(context.Background())
	mustContain(t, err, "windows/amd64")
}
