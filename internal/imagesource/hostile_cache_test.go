package imagesource

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// A cache entry that is not a regular file is refused with a remedy: a FIFO
// hung the read, a symlink could lead anywhere. The image is not handed out.
func TestCacheEntryNotARegularFile(t *testing.T) {
	reg := registrytest.Start(t)
	want := testImage(t, 1)
	pinned := push(t, reg, "installer", want)
	d, _ := want.Digest()
	for name, replace := range map[string]func(p string) error{
		"FIFO": func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"symlink out of the cache": func(p string) error {
			outside := t.TempDir() + "/manifest"
			if err := os.WriteFile(outside, []byte("{}"), 0o600); err != nil {
				return err
			}
			return os.Symlink(outside, p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			warmCache(t, pinned, dir, 0)
			p := cachePath(dir, d)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := replace(p); err != nil {
				t.Fatal(err)
			}
			src, err := Registry(pinned, WithCache(dir), WithTransport(&offline{}), fast)
			if err != nil {
				t.Fatal(err)
			}
			_, err = src.Image(context.Background())
			mustContain(t, err, "cache entry", "remove it")
		})
	}
}
