package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestCommitWritesChangedOnly(t *testing.T) {
	dir := t.TempDir()
	same, changed := filepath.Join(dir, "same.go"), filepath.Join(dir, "sub", "new.go")
	if err := Write(same, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1000, 0)
	os.Chtimes(same, old, old)
	got, err := Set{same: []byte("a"), changed: []byte("b")}.Commit(0o644)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != changed {
		t.Fatalf("changed = %v, want only %s", got, changed)
	}
	if st, err := os.Stat(same); err != nil || !st.ModTime().Equal(old) {
		t.Errorf("an unchanged file was rewritten (%v)", err)
	}
	if data, err := os.ReadFile(changed); err != nil || string(data) != "b" {
		t.Errorf("new file holds %q (%v)", data, err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

// A set that cannot be staged completely changes nothing.
func TestCommitIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.go")
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "b.go") // parent is a file: staging fails
	if _, err := (Set{good: []byte("new"), bad: []byte("new")}).Commit(0o644); err == nil {
		t.Fatal("commit into an impossible path succeeded")
	}
	if _, err := os.Stat(good); !os.IsNotExist(err) {
		t.Fatalf("a file of a failed set was written: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("leftovers after a failed commit: %v", entries)
	}
}

// TestConcurrentWritersOfOnePath: every writer sweeps the directory before
// it stages; no sweep may take another live writer's temporary (the race
// that made a concurrent cache fill fail with "rename …: no such file").
func TestConcurrentWritersOfOnePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	const writers = 16
	errs := make(chan error, writers*20)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				errs <- Write(path, []byte("same content"), 0o644)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
