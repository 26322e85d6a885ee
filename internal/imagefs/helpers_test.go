package imagefs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry describes one tar entry of a test layer.
type entry struct {
	name string
	typ  byte
	body string
	link string
	mode int64
}

func file(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, body: body, mode: 0o644}
}
func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, to string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: to, mode: 0o777}
}
func hardlink(name, to string) entry {
	return entry{name: name, typ: tar.TypeLink, link: to, mode: 0o644}
}
func whiteout(dir, name string) entry { return file(dir+"/.wh."+name, "") }
func opaque(dir string) entry         { return file(dir+"/.wh..wh..opq", "") }

// tarBytes writes entries as an uncompressed tar stream.
func tarBytes(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatalf("tar body %q: %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t testing.TB, level int, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layer makes a gzip-compressed layer from entries.
func layer(t testing.TB, entries ...entry) v1.Layer {
	t.Helper()
	return static.NewLayer(gzipBytes(t, gzip.DefaultCompression, tarBytes(t, entries...)), types.OCILayer)
}

// countingLayer records how often its compressed stream is opened.
type countingLayer struct {
	v1.Layer
	opens atomic.Int32
}

func (l *countingLayer) Compressed() (io.ReadCloser, error) {
	l.opens.Add(1)
	return l.Layer.Compressed()
}

// testImage is a real ggcr image whose Layers() hands out the wrappers the
// test inspects, in manifest order (base first).
type testImage struct {
	v1.Image
	layers []*countingLayer
}

func (i *testImage) Layers() ([]v1.Layer, error) {
	out := make([]v1.Layer, len(i.layers))
	for n, l := range i.layers {
		out[n] = l
	}
	return out, nil
}

func (i *testImage) opens() []int32 {
	out := make([]int32, len(i.layers))
	for n, l := range i.layers {
		out[n] = l.opens.Load()
	}
	return out
}

func (i *testImage) digest(t testing.TB, n int) v1.Hash {
	t.Helper()
	d, err := i.layers[n].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// image builds an image from layers, base first.
func image(t testing.TB, layers ...v1.Layer) *testImage {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	ti := &testImage{Image: img}
	for _, l := range layers {
		ti.layers = append(ti.layers, &countingLayer{Layer: l})
	}
	return ti
}

// imageOf builds an image whose layers hold the given entries, base first.
func imageOf(t testing.TB, layers ...[]entry) *testImage {
	t.Helper()
	ls := make([]v1.Layer, len(layers))
	for i, es := range layers {
		ls[i] = layer(t, es...)
	}
	return image(t, ls...)
}

// scan runs the scan twice: reading four layers at once, then one at a
// time, and fails the test unless both give the same files, listings and
// error. It returns the sequential run's, with the open counts of that run
// only, so tests assert the sequential contract (no layer below the one
// that settled the last want is opened) and every test also proves the
// concurrent scan merges to the same answer.
func scan(t testing.TB, img v1.Image, wants []Want, opts ...Option) (*Result, error) {
	t.Helper()
	cres, cerr := Scan(context.Background(), img, wants, append(slices.Clone(opts), WithParallelism(4))...)
	if ti, ok := img.(*testImage); ok {
		for _, l := range ti.layers {
			l.opens.Store(0)
		}
	}
	res, err := Scan(context.Background(), img, wants, append(slices.Clone(opts), WithParallelism(1))...)
	if fmt.Sprint(cerr) != fmt.Sprint(err) {
		t.Fatalf("reading layers concurrently gave error %v; one at a time: %v", cerr, err)
	}
	if (res == nil) != (cres == nil) {
		t.Fatalf("reading layers concurrently gave result %v; one at a time: %v", cres, res)
	}
	if res != nil {
		if diff := cmp.Diff(res.Files, cres.Files); diff != "" {
			t.Fatalf("files differ when layers are read concurrently (-sequential +concurrent):\n%s", diff)
		}
		if diff := cmp.Diff(res.Listings, cres.Listings); diff != "" {
			t.Fatalf("listings differ when layers are read concurrently (-sequential +concurrent):\n%s", diff)
		}
		if res.Stats.LayersRead != cres.Stats.LayersRead {
			t.Fatalf("layers merged: %d concurrently, %d one at a time", cres.Stats.LayersRead, res.Stats.LayersRead)
		}
	}
	return res, err
}

func mustScan(t testing.TB, img v1.Image, wants []Want, opts ...Option) *Result {
	t.Helper()
	res, err := scan(t, img, wants, opts...)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return res
}

func content(paths ...string) []Want {
	ws := make([]Want, len(paths))
	for i, p := range paths {
		ws[i] = Want{Path: p, Content: true}
	}
	return ws
}

func wantMissing(t testing.TB, err error) *MissingError {
	t.Helper()
	var m *MissingError
	if !errors.As(err, &m) {
		t.Fatalf("error = %v, want a *MissingError", err)
	}
	return m
}

func fileData(t testing.TB, res *Result, p string) string {
	t.Helper()
	f := res.Files[p]
	if f == nil {
		t.Fatalf("no file %s in result (have %v)", p, res.Files)
	}
	return string(f.Data)
}
