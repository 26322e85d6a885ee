// Command copycrds copies the CRDs of every supported Kubeflow Trainer version
// from the Go module cache into validators/linkedtrainer/crds/<version>/, so
// the binary embeds them and never needs a module cache at run time. The
// supported versions are the trainer versions the module's modfiles require:
// go.mod's and each validators/realize/trainer-*.mod. Run it through
// `go generate ./...` (generated/generate.go); it downloads a missing trainer
// module through the usual GOPROXY.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

// extraModfiles matches the modfiles besides go.mod that each pin one
// supported trainer version, relative to the module root.
const extraModfiles = "validators/realize/trainer-*.mod"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "copycrds:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := goOut("", "env", "GOMOD")
	if err != nil {
		return err
	}
	if root == "" || root == os.DevNull {
		return errors.New("not inside the tcpxogen module; run go generate ./... from the checkout")
	}
	root = filepath.Dir(root)
	extra, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(extraModfiles)))
	if err != nil {
		return err
	}
	modfiles := append([]string{filepath.Join(root, "go.mod")}, extra...)
	out := filepath.Join(root, "validators", "linkedtrainer", linkedtrainer.EmbedDir)
	// Rewrite the whole tree so a version no modfile pins any more is dropped.
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	var versions []string
	for _, mf := range modfiles {
		dir, version, err := trainerModule(root, mf)
		if err != nil {
			return err
		}
		if slices.Contains(versions, version) {
			continue
		}
		versions = append(versions, version)
		n, err := copyCRDs(filepath.Join(dir, filepath.FromSlash(linkedtrainer.ModuleCRDDir)), filepath.Join(out, version))
		if err != nil {
			return fmt.Errorf("trainer %s (%s): %w", version, filepath.Base(mf), err)
		}
		fmt.Fprintf(os.Stderr, "copycrds: trainer %s: %d CRDs from %s\n", version, n, filepath.Base(mf))
	}
	return nil
}

// trainerModule returns the module-cache directory and version of the trainer
// module that modfile requires, downloading it if needed.
func trainerModule(root, modfile string) (dir, version string, err error) {
	out, err := goOut(root, "mod", "download", "-json", "-modfile="+modfile, linkedtrainer.Module)
	if err != nil {
		return "", "", err
	}
	var m struct{ Version, Dir, Error string }
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return "", "", fmt.Errorf("go mod download -modfile=%s: %w", filepath.Base(modfile), err)
	}
	if m.Error != "" || m.Dir == "" || m.Version == "" {
		return "", "", fmt.Errorf("go mod download -modfile=%s %s: no module directory: %s", filepath.Base(modfile), linkedtrainer.Module, m.Error)
	}
	return m.Dir, m.Version, nil
}

func copyCRDs(from, to string) (int, error) {
	paths, err := filepath.Glob(filepath.Join(from, linkedtrainer.CRDGlob))
	if err != nil {
		return 0, err
	}
	if len(paths) == 0 {
		return 0, fmt.Errorf("no %s in %s: the trainer module layout changed; update linkedtrainer.ModuleCRDDir", linkedtrainer.CRDGlob, from)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return 0, err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, err
		}
		// Module cache files are read-only; the copy must be writable so the
		// next run can replace it.
		if err := os.WriteFile(filepath.Join(to, filepath.Base(p)), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(paths), nil
}

func goOut(dir string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
