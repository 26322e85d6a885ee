// Package atomicfile writes files so that a reader sees either the old
// content or the new, never a torn write, and so that a set of files is
// replaced all-or-nothing as far as a single process can arrange it.
//
// The rename that makes a write atomic replaces whatever the target path
// names, so the target is looked at first: a symlink is followed and its
// final regular file is the one replaced (the link stays); a directory, a
// device node, a FIFO or a socket is refused with ErrRefused, never replaced
// (as root, a rename onto /dev/full replaces the machine's device).
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// ErrRefused marks a target that is not, and does not lead to, a regular
// file or a free name in a directory: the caller named the wrong output.
var ErrRefused = errors.New("not a regular file")

// lstat is os.Lstat; a test replaces it to present a device node without
// creating one.
var lstat = os.Lstat

// maxLinks bounds symlink chains, as the kernel's own ELOOP limit does.
const maxLinks = 40

// Target returns the path a write of path replaces: path itself, or the
// final target of the symlink chain it names. It refuses a target that
// exists and is not a regular file, and a parent that is not a directory.
func Target(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return p, parentIsDir(path, p)
		case errors.Is(err, syscallENOTDIR):
			return "", refused(path, "is under a path that is not a directory")
		case err != nil:
			return "", fmt.Errorf("output %s: %w", path, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			dst, err := os.Readlink(p)
			if err != nil {
				return "", fmt.Errorf("output %s: %w", path, err)
			}
			if !filepath.IsAbs(dst) {
				dst = filepath.Join(filepath.Dir(p), dst)
			}
			p = dst
			continue
		case fi.Mode().IsRegular():
			return p, nil
		}
		return "", refused(path, "is "+inputfile.KindOf(fi.Mode())+"; give a file path (the output is written to a new file and renamed into place)")
	}
	return "", refused(path, fmt.Sprintf("is a chain of more than %d symlinks", maxLinks))
}

// parentIsDir refuses a missing target whose parent exists and is not a
// directory (`--out FILE` where a directory is wanted); a missing parent is
// created by the write.
func parentIsDir(path, target string) error {
	for dir := filepath.Dir(target); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil:
			return refused(path, dir+" is "+inputfile.KindOf(fi.Mode())+", not a directory")
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("output %s: %w", path, err)
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

func refused(path, why string) error {
	return fmt.Errorf("output %s %s: %w", path, why, ErrRefused)
}

// Write replaces path with data via a temp file in the same directory and a
// rename, so concurrent writers of identical content cannot corrupt it.
func Write(path string, data []byte, perm os.FileMode) error {
	target, err := Target(path)
	if err != nil {
		return err
	}
	sweepStale(target)
	tmp, held, err := stageFile(target, data, perm)
	if err != nil {
		return err
	}
	defer held.Close()
	if err := os.Rename(tmp, target); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, target, err)
	}
	return nil
}

// Set is a group of files that must be written together.
type Set map[string][]byte

// Commit stages every file of the set next to its destination first and
// renames only when all staging succeeded; files whose content is unchanged
// are left untouched (their mtime too). It returns the paths it changed.
// Every target is checked before anything is staged.
func (s Set) Commit(perm os.FileMode) (changed []string, err error) {
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range s {
			if !yield(p) {
				return
			}
		}
	})
	targets := make(map[string]string, len(paths))
	for _, p := range paths {
		if targets[p], err = Target(p); err != nil {
			return nil, err
		}
	}
	type staged struct {
		tmp, dst, name string
		held           *os.File
	}
	var stage []staged
	defer func() {
		for _, st := range stage {
			if st.tmp != "" {
				os.Remove(st.tmp)
			}
			st.held.Close()
		}
	}()
	for _, p := range paths {
		dst := targets[p]
		// Swept even when the content is unchanged: the run after a killed
		// one usually writes the same bytes.
		sweepStale(dst)
		if old, rerr := os.ReadFile(dst); rerr == nil && bytes.Equal(old, s[p]) {
			continue
		} else if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", dst, rerr)
		}
		tmp, held, err := stageFile(dst, s[p], perm)
		if err != nil {
			return nil, err
		}
		stage = append(stage, staged{tmp, dst, p, held})
	}
	for i, st := range stage {
		if err := os.Rename(st.tmp, st.dst); err != nil {
			return changed, fmt.Errorf("rename %s to %s: %w", st.tmp, st.dst, err)
		}
		stage[i].tmp = ""
		changed = append(changed, st.name)
	}
	return changed, nil
}

// tempPrefix is the name every temporary of path starts with; sweepStale
// removes only names with this prefix.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// newPrefix names a temporary in the instant between its creation and its
// lock. A sweep that saw it under tempPrefix then could take the lock first
// and delete a live writer's file, so a temporary gets its swept name only
// once it is locked; an unlocked one under this prefix is swept only when
// it is older than newGrace.
func newPrefix(path string) string { return "." + filepath.Base(path) + ".new-" }

// newGrace is far longer than the microseconds between a temporary's
// creation and its rename to the swept name.
const newGrace = time.Minute

// stageFile writes data to a new temporary next to path and returns its
// name and the open file, which holds the temporary's lock: the caller
// closes it once the temporary is renamed into place or removed, so no
// other writer's sweep takes a live temporary for an abandoned one.
func stageFile(path string, data []byte, perm os.FileMode) (string, *os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, newPrefix(path)+"*")
	if err != nil {
		return "", nil, fmt.Errorf("create temp file for %s: %w", path, err)
	}
	lockTemp(tmp)
	name := filepath.Join(dir, tempPrefix(path)+strings.TrimPrefix(filepath.Base(tmp.Name()), newPrefix(path)))
	werr := os.Rename(tmp.Name(), name)
	if werr != nil {
		name = tmp.Name()
	}
	if werr == nil {
		_, werr = tmp.Write(data)
	}
	if werr == nil {
		werr = tmp.Chmod(perm)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if werr != nil {
		tmp.Close()
		os.Remove(name)
		return "", nil, fmt.Errorf("stage %s: %w", path, werr)
	}
	return name, tmp, nil
}

// sweepStale removes temporaries of path that a killed writer left: regular
// files in path's directory named with path's own temp prefix, whose writer
// no longer holds them. Anything else in the directory is not ours.
func sweepStale(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), prefix):
			if abandoned(p) {
				os.Remove(p)
			}
		case strings.HasPrefix(e.Name(), newPrefix(path)):
			// A writer killed before locking: only the age tells.
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > newGrace && abandoned(p) {
				os.Remove(p)
			}
		}
	}
}
