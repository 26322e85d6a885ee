package bom

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO named go.mod on the way up no longer hangs the search for the
// checkout; it is passed over like any file that is not tcpxogen's go.mod.
func TestFindRootPassesOverAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "go.mod"), 0o600); err != nil {
		t.Fatal(err)
	}
	if root, err := FindRoot(dir); err == nil {
		t.Errorf("FindRoot = %s, want no checkout found", root)
	}
}
