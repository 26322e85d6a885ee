// Package atomicfile writes files so that a reader sees either the old
// content or the new, never a torn write, and so that a set of files is
// replaced all-or-nothing as far as a single process can arrange it.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Write replaces path with data via a temp file in the same directory and a
// rename, so concurrent writers of identical content cannot corrupt it.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	name := tmp.Name()
	cleanup := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return cleanup(fmt.Errorf("write %s: %w", name, err))
	}
	if err := tmp.Chmod(perm); err != nil {
		return cleanup(fmt.Errorf("chmod %s: %w", name, err))
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(fmt.Errorf("sync %s: %w", name, err))
	}
	if err := tmp.Close(); err != nil {
		return cleanup(fmt.Errorf("close %s: %w", name, err))
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("rename %s to %s: %w", name, path, err)
	}
	return nil
}

// Set is a group of files that must be written together.
type Set map[string][]byte

// Commit stages every file of the set next to its destination first and
// renames only when all staging succeeded; files whose content is unchanged
// are left untouched (their mtime too). It returns the paths it changed.
func (s Set) Commit(perm os.FileMode) (changed []string, err error) {
	paths := make([]string, 0, len(s))
	for p := range s {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	type staged struct{ tmp, dst string }
	var stage []staged
	defer func() {
		for _, st := range stage {
			os.Remove(st.tmp)
		}
	}()
	for _, p := range paths {
		if old, rerr := os.ReadFile(p); rerr == nil && bytes.Equal(old, s[p]) {
			continue
		} else if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", p, rerr)
		}
		tmp, err := stageFile(p, s[p], perm)
		if err != nil {
			return nil, err
		}
		stage = append(stage, staged{tmp, p})
	}
	for i, st := range stage {
		if err := os.Rename(st.tmp, st.dst); err != nil {
			return changed, fmt.Errorf("rename %s to %s: %w", st.tmp, st.dst, err)
		}
		stage[i].tmp = ""
		changed = append(changed, st.dst)
	}
	stage = nil
	return changed, nil
}

func stageFile(path string, data []byte, perm os.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("create temp file for %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(perm)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("stage %s: %w", path, werr)
	}
	return tmp.Name(), nil
}
