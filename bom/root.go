package bom

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// ModulePath is tcpxogen's Go module.
const ModulePath = "github.com/tcpxogen/tcpxogen"

// FindRoot walks up from dir to the checkout holding tcpxogen's go.mod, so
// tools work from `go generate` (cwd generated/), from a package's tests
// and from the repository root alike.
func FindRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		// Through the input helper: a FIFO named go.mod in any parent would
		// otherwise hang every command that looks for the checkout.
		data, err := inputfile.Read(filepath.Join(d, "go.mod"), inputfile.Spec{Max: inputfile.MaxSource})
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module "+ModulePath) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no tcpxogen go.mod above %s: run inside the repository or pass --root", dir)
		}
	}
}

// ResolveRoot resolves a --root flag: the flag if given, else the checkout
// enclosing the working directory.
func ResolveRoot(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return FindRoot(wd)
}
