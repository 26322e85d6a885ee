// Package trainerinstall renders the pinned Kubeflow Trainer's install
// manifests offline, from the files of the trainer Go module this binary
// links, with the kustomize Go library: no kubectl, no network.
//
// The trainer's manager overlay (manifests/overlays/manager) pulls JobSet
// from a release URL (manifests/third-party/jobset). Here that resource is
// the JobSet Go module's own config/default instead, at the version the
// trainer's go.mod requires, with JobSet's staging image replaced by the
// release one. Images are pinned by digest where the BOM knows the digest;
// neither upstream kustomization pins one.
package trainerinstall

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	TrainerModule = "github.com/kubeflow/trainer/v2"
	JobSetModule  = "sigs.k8s.io/jobset"

	// managerOverlay is the trainer's install kustomization, relative to
	// its module root: the one its release notes apply.
	managerOverlay = "manifests/overlays/manager"
	// jobsetKustomization is the trainer's JobSet resource, which names a
	// release URL.
	jobsetKustomization = "manifests/third-party/jobset/kustomization.yaml"
	// jobsetStagingImage is the image JobSet's config/default names (its
	// release process rewrites it); jobsetReleaseImage is the release's.
	jobsetStagingImage = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset"
	jobsetReleaseImage = "registry.k8s.io/jobset/jobset"
	trainerImage       = "ghcr.io/kubeflow/trainer/trainer-controller-manager"
)

// Images pins the controller images of the install.
type Images struct {
	// Trainer is the trainer controller image, repo:tag or
	// repo:tag@sha256:digest (the BOM's controllerImage).
	Trainer string
	// JobSetTag is the JobSet release tag (e.g. v0.11.1); JobSetDigest its
	// sha256 digest, empty when not known.
	JobSetTag, JobSetDigest string
}

// Sources are the module source trees the install is rendered from.
type Sources struct {
	TrainerDir, JobSetDir string
}

// LinkedSources finds the trainer and JobSet modules this binary links in
// the Go module cache (see moduleDir).
func LinkedSources() (Sources, error) {
	t, err := moduleDir(TrainerModule)
	if err != nil {
		return Sources{}, err
	}
	j, err := moduleDir(JobSetModule)
	if err != nil {
		return Sources{}, err
	}
	return Sources{TrainerDir: t, JobSetDir: j}, nil
}

// Render returns the install as multi-document YAML, in kustomize's order.
func Render(src Sources, img Images) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	if err := copyTree(mem, filepath.Join(src.TrainerDir, "manifests"), "/trainer/manifests"); err != nil {
		return nil, fmt.Errorf("copying the trainer's manifests: %w", err)
	}
	if err := copyTree(mem, filepath.Join(src.JobSetDir, "config"), "/jobset/config"); err != nil {
		return nil, fmt.Errorf("copying JobSet's config: %w", err)
	}
	if err := localJobSet(mem); err != nil {
		return nil, err
	}
	if err := pinImages(mem, img); err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(mem, "/trainer/"+managerOverlay)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", managerOverlay, err)
	}
	return res.AsYaml()
}

// localJobSet points the trainer's third-party/jobset at JobSet's
// config/default in place of its release URL, keeping its patches.
func localJobSet(mem filesys.FileSystem) error {
	p := "/trainer/" + jobsetKustomization
	data, err := mem.ReadFile(p)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fmt.Errorf("%s: %w", jobsetKustomization, err)
	}
	if len(k.Resources) != 1 || !strings.HasPrefix(k.Resources[0], "https://github.com/kubernetes-sigs/jobset/releases/") {
		return fmt.Errorf("%s: resources %v, want one JobSet release URL: the trainer's layout changed, update trainerinstall", jobsetKustomization, k.Resources)
	}
	k.Resources = []string{"../../../../jobset/config/default"}
	out, err := yamlOf(&k)
	if err != nil {
		return err
	}
	return mem.WriteFile(p, out)
}

// pinImages adds image transformers to the manager overlay: the trainer
// image as the BOM pins it, JobSet's staging image to the release image.
func pinImages(mem filesys.FileSystem, img Images) error {
	p := "/trainer/" + managerOverlay + "/kustomization.yaml"
	data, err := mem.ReadFile(p)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fmt.Errorf("%s: %w", managerOverlay, err)
	}
	name, tag, digest, err := splitImage(img.Trainer)
	if err != nil {
		return fmt.Errorf("trainer image: %w", err)
	}
	if name != trainerImage {
		return fmt.Errorf("trainer image %s is not %s", img.Trainer, trainerImage)
	}
	var images []types.Image
	for _, i := range k.Images {
		if i.Name != trainerImage {
			images = append(images, i)
		}
	}
	images = append(images,
		types.Image{Name: trainerImage, NewTag: tag, Digest: digest},
		types.Image{Name: jobsetStagingImage, NewName: jobsetReleaseImage, NewTag: img.JobSetTag, Digest: img.JobSetDigest},
	)
	k.Images = images
	out, err := yamlOf(&k)
	if err != nil {
		return err
	}
	return mem.WriteFile(p, out)
}

// splitImage splits repo:tag[@sha256:hex].
func splitImage(ref string) (name, tag, digest string, err error) {
	base, digest, _ := strings.Cut(ref, "@")
	i := strings.LastIndexByte(base, ':')
	if i < 0 || strings.Contains(base[i+1:], "/") {
		return "", "", "", fmt.Errorf("%s has no tag", ref)
	}
	return base[:i], base[i+1:], digest, nil
}

// yamlOf marshals a kustomization; its types carry JSON tags.
func yamlOf(k *types.Kustomization) ([]byte, error) {
	return yaml.Marshal(k)
}

// copyTree copies the regular files under dir into mem at to.
func copyTree(mem filesys.FileSystem, dir, to string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		target := path.Join(to, filepath.ToSlash(rel))
		if d.IsDir() {
			return mem.MkdirAll(target)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(target, data)
	})
}

// moduleDir finds a module's source tree. A binary knows from its build
// info which version it links, and the go command keeps that version's
// source in the module cache; test binaries carry no dependency build
// info and run inside the module, where `go list -m` gives go.mod's
// version, the same one.
func moduleDir(mod string) (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path != mod {
				continue
			}
			if m.Replace != nil {
				m = m.Replace
				if m.Version == "" {
					return m.Path, nil
				}
			}
			cache, err := goModCache()
			if err != nil {
				return "", err
			}
			dir := filepath.Join(cache, filepath.FromSlash(escapePath(m.Path))+"@"+m.Version)
			if _, err := os.Stat(dir); err != nil {
				return "", fmt.Errorf("%s@%s is not in the Go module cache (%w): run `go mod download %s@%s`", m.Path, m.Version, err, m.Path, m.Version)
			}
			return dir, nil
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list -m %s: %v: %s", mod, err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %w", mod, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: no directory: run `go mod download %s`", mod, mod)
	}
	return dir, nil
}

func goModCache() (string, error) {
	if dir := os.Getenv("GOMODCACHE"); dir != "" {
		return dir, nil
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("`go env GOMODCACHE` is empty; set GOMODCACHE or GOPATH")
	}
	return dir, nil
}

// escapePath is the module cache's case encoding: an upper-case letter
// becomes '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
