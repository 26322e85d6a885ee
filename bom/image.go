package bom

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Image is a container image pinned as repo:tag@sha256:<digest>. The digest is
// what a pull trusts; the tag is kept because it is the version of record (the
// installer's version is not stored anywhere inside its image) and Version
// repeats it so a reviewer sees the version without parsing the reference.
type Image struct {
	Reference string `yaml:"reference"`
	Version   string `yaml:"version,omitempty"`
	// Source says where the pin was read from. It is required for a
	// reference without a tag: some publishers pin by digest alone (Google's
	// NRI device injector manifest does), and then the published manifest,
	// not a tag, is the record of what the digest is.
	Source string `yaml:"source,omitempty"`
	// CUDAMajor is the CUDA major the image's libraries are built for; the
	// worker image must declare it, because the NCCL plugin loads the
	// libcudart its libraries need (PluginCUDA) from the workload image.
	CUDAMajor int `yaml:"cudaMajor,omitempty"`

	// Parsed parts, filled by the loader and NewImage.
	repository, tag, digest string
}

// Repository is the reference up to the tag, as written (no registry or
// "library/" defaulting), so Repository():Tag()@Digest() == Reference.
func (i Image) Repository() string { return i.repository }

// Tag is the reference's tag, exactly as written.
func (i Image) Tag() string { return i.tag }

// Digest is "sha256:<64 lowercase hex>".
func (i Image) Digest() string { return i.digest }

// NewImage validates reference and version as the loader does and returns the
// image with its parts parsed, for code that builds a BOM without a file.
func NewImage(reference, version string) (Image, error) {
	img := Image{Reference: reference, Version: version}
	probs := img.parse()
	if len(probs) == 0 {
		return img, nil
	}
	c := &checker{}
	c.addProblems("", probs)
	return Image{}, c.err()
}

// PinnedPattern is the shape ParsePinned accepts, repo:tag@sha256:<64
// hex>, as a regular expression in the syntax RE2 and ECMA-262 share, for
// validators outside Go (the Helm chart's values.schema.json). It admits
// no reference ParsePinned refuses for its shape (no tag, no or a short
// digest, a second '@'); ParsePinned also checks the repository's grammar.
const PinnedPattern = `^[^\s@]+:[^\s@:/]+@sha256:[0-9a-f]{64}$`

// ParsePinned is the one definition of "pinned by digest" for an image a
// user gives (a flag, a recipe, a manifest): repo:tag@sha256:<64 hex>, the
// rule every shipped image meets. A digest-only reference is refused: only
// the BOM, with a source that vouches for it, may pin one.
func ParsePinned(reference string) (Image, error) {
	if strings.TrimSpace(reference) == "" {
		return Image{}, errors.New("the image reference is empty: pin the image as repo:tag@sha256:<64 hex>")
	}
	_, tag, _ := SplitReference(reference)
	if tag == "" {
		// NewImage would add a missing version to the missing tag; the tag
		// is the one thing to fix.
		_, probs := parsePinned(reference, true)
		c := &checker{}
		c.addProblems("", probs)
		return Image{}, c.err()
	}
	return NewImage(reference, tag)
}

// parse fills the parsed parts and reports every problem with the pin.
func (i *Image) parse() []problem {
	var probs []problem
	tag, hasTag := "", false
	switch {
	case strings.TrimSpace(i.Reference) == "":
		probs = append(probs, problem{field: "reference", absent: true,
			fix: "pin the image as repo:tag@sha256:<64 hex> (find the digest with: crane digest repo:tag)"})
	default:
		var ref pinnedRef
		ref, probs = parsePinned(i.Reference, true)
		if i.Source != "" {
			probs = slices.DeleteFunc(probs, func(p problem) bool { return p.tagless })
			if len(probs) == 0 && ref.tag == "" {
				var err error
				if ref, err = digestOnly(i.Reference); err != nil {
					probs = append(probs, problem{what: fmt.Sprintf("%s is not a valid image reference (%s)", quoteRef(i.Reference), errExcerpt(err)),
						fix: "use the form registry/repository@sha256:<64 hex>; repositories are lowercase", err: err})
				}
			}
		}
		if len(probs) == 0 {
			i.repository, i.tag, i.digest = ref.repository, ref.tag, ref.digest
		}
		tag, hasTag = ref.tag, ref.tag != ""
	}
	if !hasTag && i.Source != "" && len(probs) == 0 {
		// Digest-only pin: the source is the record, there is no tag to repeat.
		if i.Version != "" {
			probs = append(probs, problem{field: "version", what: fmt.Sprintf("%s has no tag to match", quoteRef(i.Reference)),
				fix: "drop version: a digest-only pin's record is its source"})
		}
		return probs
	}
	for k := range probs {
		probs[k].field = "reference"
	}

	switch {
	case i.Version == "":
		fix := "set it to the reference's tag"
		if hasTag {
			fix = fmt.Sprintf("set it to %s, the reference's tag", quoteRef(tag))
		}
		probs = append(probs, problem{field: "version", absent: true, fix: fix})
	case hasTag && i.Version != tag:
		// Exact comparison on purpose: tags like v1.0.9-1 and v1.0.13_1 are
		// distinct releases, and v1.0.21-rc1 must never pass for v1.0.21.
		probs = append(probs, problem{field: "version",
			what: fmt.Sprintf("%s does not match the reference's tag %s", quote(i.Version), quote(tag)),
			fix:  fmt.Sprintf("set version to exactly %s, or pin the image whose tag is %s (tags compare as exact strings)", quoteRef(tag), quoteRef(i.Version))})
	}
	if len(probs) > 0 {
		i.repository, i.tag, i.digest = "", "", ""
	}
	return probs
}

type pinnedRef struct{ repository, tag, digest string }

// digestOnly parses a repo@sha256:… reference the tag check refused; the
// caller has established that a source vouches for it.
func digestOnly(ref string) (pinnedRef, error) {
	if _, err := name.NewDigest(ref); err != nil {
		return pinnedRef{}, err
	}
	repo, dig, _ := strings.Cut(ref, "@")
	return pinnedRef{repository: repo, digest: dig}, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// parsePinned splits repo:tag[@digest]. The digest is required when
// requireDigest is set; the tag always is, because it carries the version.
// Problems are independent checks reported together; a go-containerregistry
// parse runs last so its terser message only appears when ours found nothing.
func parsePinned(ref string, requireDigest bool) (pinnedRef, []problem) {
	var probs []problem
	base, dig, hasDigest := strings.Cut(ref, "@")
	switch {
	case strings.Contains(dig, "@"):
		return pinnedRef{}, []problem{{what: fmt.Sprintf("%s has more than one '@'", quoteRef(ref)),
			fix: "write it as repo:tag@sha256:<64 hex>"}}
	case !hasDigest && requireDigest:
		probs = append(probs, problem{what: fmt.Sprintf("%s has no digest", quoteRef(ref)),
			fix: fmt.Sprintf("pin it as repo:tag@sha256:<64 hex> (find the digest with: crane digest %s)", ref)})
	case hasDigest:
		if what := digestProblem(dig); what != "" {
			probs = append(probs, problem{what: fmt.Sprintf("%s: %s", quoteRef(ref), what),
				fix: fmt.Sprintf("copy the full digest printed by: crane digest %s", base)})
		}
	}

	repo, tag, hasTag := splitTag(base)
	if !hasTag {
		probs = append(probs, problem{what: fmt.Sprintf("%s has no tag", quoteRef(ref)), tagless: true,
			fix: "write it as repo:TAG@sha256:<64 hex>, so the version is visible in every manifest (or, when the publisher pins by digest alone, add source: saying where)"})
	}
	if len(probs) > 0 {
		return pinnedRef{tag: tag}, probs
	}

	var err error
	if hasDigest {
		_, err = name.NewDigest(ref)
	} else {
		_, err = name.NewTag(ref)
	}
	if err != nil {
		return pinnedRef{tag: tag}, []problem{{what: fmt.Sprintf("%s is not a valid image reference (%s)", quoteRef(ref), errExcerpt(err)),
			fix: "use the form registry/repository:tag@sha256:<64 hex>; repositories are lowercase", err: err}}
	}
	return pinnedRef{repository: repo, tag: tag, digest: dig}, nil
}

// digestProblems are checked in order; the first that applies is reported.
var digestProblems = []struct {
	bad  func(alg, hex string) bool
	what func(alg, hex string) string
}{
	{func(alg, _ string) bool { return alg != "sha256" },
		func(alg, _ string) string { return fmt.Sprintf("digest algorithm %q is not sha256", alg) }},
	{func(_, hex string) bool { return len(hex) != 64 },
		func(_, hex string) string { return fmt.Sprintf("digest has %d hex characters, want 64", len(hex)) }},
	{uppercaseHex,
		func(string, string) string { return "digest has uppercase hex; digests are lowercase" }},
	{func(_, hex string) bool { return !sha256Hex.MatchString(hex) },
		func(string, string) string { return "digest has characters that are not hex digits" }},
}

// uppercaseHex singles out the one malformation with an obvious fix: the
// digest is right but was copied from a tool that prints uppercase.
func uppercaseHex(_, hex string) bool {
	return hex != strings.ToLower(hex) && sha256Hex.MatchString(strings.ToLower(hex))
}

func digestProblem(dig string) string {
	alg, hex, ok := strings.Cut(dig, ":")
	if !ok {
		return fmt.Sprintf("digest %q has no algorithm; want sha256:<64 hex>", dig)
	}
	for _, p := range digestProblems {
		if p.bad(alg, hex) {
			return p.what(alg, hex)
		}
	}
	return ""
}

// SplitReference splits an image reference repo[:tag][@digest] into its
// parts without validating them: tools that only need to compare or
// describe references (the coupling check, the SBOM) share this one rule.
func SplitReference(ref string) (repo, tag, digest string) {
	base, digest, _ := strings.Cut(ref, "@")
	repo, tag, _ = splitTag(base)
	return repo, tag, digest
}

// splitTag splits repo:tag with go-containerregistry's rule: the last ':' is
// a tag separator only if no '/' follows it, so registry:port/repo has no tag.
func splitTag(base string) (repo, tag string, ok bool) {
	i := strings.LastIndexByte(base, ':')
	if i < 0 || strings.Contains(base[i+1:], "/") {
		return base, "", false
	}
	return base[:i], base[i+1:], base[i+1:] != ""
}
