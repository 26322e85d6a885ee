package linkedtrainer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Every trainer version is realized by a binary that links it, and the
// binaries ship side by side: the one linking the trainer the BOM pins is
// tcpxogen, each other supported version's is tcpxogen-trainer-<version>
// (built with -modfile=validators/realize/trainer-<version>.mod; `make
// build` writes both into bin/). A binary finds another version's binary
// next to its own executable by that name, never on PATH: a stray tcpxogen
// elsewhere could link anything.

// SiblingSuffix joins a binary's base name to the trainer version it links,
// for every version but the pinned one.
const SiblingSuffix = "-trainer-"

// ErrNoSibling reports that the binary realizing a trainer version is not
// installed next to this one.
var ErrNoSibling = errors.New("the binary that links it is not installed")

// BinaryName is the file name of the binary that links version, given the
// base name of the one linking the pinned version ("tcpxogen").
func BinaryName(base, version, pinned string) string {
	if version == pinned {
		return base
	}
	return base + SiblingSuffix + version
}

// MakeTarget is the make target that builds the binary of version.
func MakeTarget(version, pinned string) string {
	return "bin/" + BinaryName("tcpxogen", version, pinned)
}

// baseName strips this binary's own "-trainer-<linked>" suffix (and a
// Windows .exe) from its file name: what is left names the family.
func baseName(self, linked string) string {
	name := strings.TrimSuffix(filepath.Base(self), ".exe")
	return strings.TrimSuffix(name, SiblingSuffix+linked)
}

// Sibling returns the path of the binary that links version, next to the
// executable self (this binary, linking linked; pinned is the BOM's
// trainer version). It fails with ErrNoSibling, naming the make target
// that builds it, when no regular executable file is there.
func Sibling(self, linked, version, pinned string) (string, error) {
	dir := filepath.Dir(self)
	path := filepath.Join(dir, BinaryName(baseName(self, linked), version, pinned))
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("realized by %s, which does not exist (%w): build it with `make %s` (or `make build`, which builds one binary per trainer version) and keep it next to %s",
			path, ErrNoSibling, MakeTarget(version, pinned), self)
	case err != nil:
		return "", fmt.Errorf("realized by %s (%w): %w", path, ErrNoSibling, err)
	case !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("realized by %s, which is not an executable file (%s; %w): rebuild it with `make %s`",
			path, info.Mode(), ErrNoSibling, MakeTarget(version, pinned))
	}
	return path, nil
}
