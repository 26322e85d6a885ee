package sbom

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tcpxogen/tcpxogen/bom"
)

// imageRef is a container image reference split into the parts a pkg:oci
// purl and a CycloneDX component need.
type imageRef struct {
	literal    string // as written in the manifest
	registry   string // e.g. us-docker.pkg.dev; Docker Hub is docker.io
	repository string // the path inside the registry, e.g. library/debian
	tag        string // empty when the reference has none
	digest     string // sha256:<64 hex>, empty when not pinned
}

// dockerHub is how Docker Hub is written in a repository_url. go-containerregistry
// reports its API host (index.docker.io); the purl oci type's own examples and
// Docker's normalised names (docker.io/library/debian) use docker.io.
const dockerHub = "docker.io"

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// parseImageRef accepts what a kubelet would pull: [registry/]repo[:tag][@digest].
// go-containerregistry does the validation and the registry defaulting, so
// "pytorch/pytorch" and "docker.io/pytorch/pytorch" come out as one image.
// Only sha256 digests are accepted: the pkg:oci version is defined as one.
func parseImageRef(ref string) (imageRef, error) {
	base, dig, pinned := strings.Cut(ref, "@")
	if pinned {
		if _, err := name.NewDigest(ref); err != nil {
			return imageRef{}, fmt.Errorf("image %q: %w", ref, err)
		}
		if !sha256Digest.MatchString(dig) {
			return imageRef{}, fmt.Errorf("image %q: digest %q is not sha256:<64 lowercase hex>, which a pkg:oci purl requires", ref, dig)
		}
	}
	repoPart, tag, _ := bom.SplitReference(base)
	if tag != "" {
		if _, err := name.NewTag(base); err != nil {
			return imageRef{}, fmt.Errorf("image %q: %w", ref, err)
		}
	}
	repo, err := name.NewRepository(repoPart)
	if err != nil {
		return imageRef{}, fmt.Errorf("image %q: %w", ref, err)
	}
	registry := repo.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = dockerHub
	}
	return imageRef{literal: ref, registry: registry, repository: repo.RepositoryStr(), tag: tag, digest: dig}, nil
}

// location is registry/repository, the repository_url of the purl.
func (r imageRef) location() string { return r.registry + "/" + r.repository }

// purl is the pkg:oci Package URL of the image, per the purl oci type: no
// namespace; the name is the last segment of the repository, lowercased;
// the version is the digest; repository_url and tag are qualifiers, sorted
// by key as the canonical form requires.
//
// The spec texts disagree on two characters, so the choice is deliberate:
// the digest's ':' is written %3A and repository_url keeps its '/' (and a
// registry port's ':') unencoded, exactly as in the oci type's published
// examples (pkg:oci/debian@sha256%3A244fd...?repository_url=docker.io/library/debian),
// which is also what common scanners emit. Every conforming parser
// percent-decodes both forms to the same components.
func (r imageRef) purl() string {
	var b strings.Builder
	b.WriteString("pkg:oci/")
	b.WriteString(escape(strings.ToLower(r.repository[strings.LastIndexByte(r.repository, '/')+1:]), ""))
	if r.digest != "" {
		b.WriteString("@")
		b.WriteString(escape(r.digest, ""))
	}
	b.WriteString("?repository_url=")
	b.WriteString(escape(r.location(), "/:"))
	if r.tag != "" {
		b.WriteString("&tag=")
		b.WriteString(escape(r.tag, ""))
	}
	return b.String()
}

// golangPURL is the pkg:golang Package URL of a Go module: the module path's
// elements become namespace and name, e.g. pkg:golang/github.com/kubeflow/trainer/v2@v2.2.0.
func golangPURL(module, version string) string {
	segs := strings.Split(module, "/")
	for i, s := range segs {
		segs[i] = escape(s, "")
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + escape(version, "")
	}
	return p
}

// escape percent-encodes s as the purl spec requires of a component:
// everything but ASCII letters, digits and ".-_~" becomes %XX (uppercase hex),
// except the characters in keep.
func escape(s, keep string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0f])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_~", c) >= 0
}
