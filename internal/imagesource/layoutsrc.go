package imagesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// layoutFetcher reads blobs from an OCI image layout. go-containerregistry's
// layout package opens blob files without checking them; store does.
type layoutFetcher struct {
	dir  string
	path layout.Path
}

func (f *layoutFetcher) where() string { return "layout " + f.dir }

func (f *layoutFetcher) manifest(ctx context.Context, h v1.Hash) ([]byte, error) {
	rc, err := f.blob(ctx, h)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Bounded so a hostile layout cannot make us buffer a huge "manifest";
	// one byte more than the limit is read to detect the overflow.
	b, err := io.ReadAll(io.LimitReader(rc, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest %s from layout %s: %w", h, f.dir, err)
	}
	return b, nil
}

func (f *layoutFetcher) blob(_ context.Context, h v1.Hash) (io.ReadCloser, error) {
	rc, err := f.path.Blob(h)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("layout %s has no blob %s (blobs/%s/%s): the layout is incomplete or the digest is wrong: %w", f.dir, h, h.Algorithm, h.Hex, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s in layout %s: %w", h, f.dir, err)
	}
	return rc, nil
}
