package bom

import (
	"embed"
	"errors"
	"fmt"
	"strings"
)

// The reviewed inputs as this binary was built, so that commands that need
// only them (check trainjob, render runtime, render components) work from a
// binary installed outside any checkout. The generated constants they are
// reviewed against are compiled in the same way, so the two always agree.
//
//go:embed bom.yaml releases.yaml overrides.yaml
var embedded embed.FS

// EmbeddedSuffix marks, in error messages, a file read from the binary.
const EmbeddedSuffix = " (built into tcpxogen)"

// LoadEmbedded returns the BOM, release table and reviewed overrides built
// into this binary, checked exactly as LoadAll and LoadOverrides check the
// files of a checkout.
func LoadEmbedded() (*BOM, *Releases, *Overrides, error) {
	read := func(repoPath string) (string, []byte, error) {
		data, err := embedded.ReadFile(strings.TrimPrefix(repoPath, "bom/"))
		return repoPath + EmbeddedSuffix, data, err
	}
	name, data, err := read(RepoPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read the built-in bill of materials: %w", err)
	}
	b, berr := Parse(name, data)
	if name, data, err = read(ReleasesRepoPath); err != nil {
		return nil, nil, nil, fmt.Errorf("read the built-in release table: %w", err)
	}
	r, rerr := ParseReleases(name, data)
	if name, data, err = read(OverridesRepoPath); err != nil {
		return nil, nil, nil, fmt.Errorf("read the built-in reviewed overrides: %w", err)
	}
	o, oerr := ParseOverrides(name, data)
	if err := errors.Join(berr, rerr, oerr); err != nil {
		return nil, nil, nil, err
	}
	if err := CheckPublished(b, r); err != nil {
		return nil, nil, nil, err
	}
	return b, r, o, nil
}
