package sbom

// Structural checks the JSON schema cannot express: purls that parse per the
// purl specification, bom-refs that are unique, and a dependency graph whose
// every reference resolves. The purl parser follows the spec's "how to parse"
// algorithm and is written independently of the encoder in purl.go, so a
// mistake in one is not mirrored by the other.

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

type parsedPURL struct {
	Type, Namespace, Name, Version string
	Qualifiers                     map[string]string
	QualifierKeys                  []string // in written order
	Subpath                        string
}

var (
	purlType  = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)
	purlQKey  = regexp.MustCompile(`^[a-z][a-z0-9._-]*$`)
	purlChars = regexp.MustCompile(`^[A-Za-z0-9.\-_~%:/@?=&#]*$`)
	badEscape = regexp.MustCompile(`%([^0-9A-Fa-f]|.[^0-9A-Fa-f]|.?$)`)
)

// parsePURL parses a canonical purl, rejecting what the spec forbids.
func parsePURL(s string) (parsedPURL, error) {
	var p parsedPURL
	if !purlChars.MatchString(s) {
		return p, fmt.Errorf("%q has characters outside the purl permitted set", s)
	}
	if badEscape.MatchString(s) {
		return p, fmt.Errorf("%q has a malformed percent-encoding", s)
	}
	rest, sub, _ := cutLast(s, "#")
	if sub != "" {
		var segs []string
		for _, seg := range strings.Split(strings.Trim(sub, "/"), "/") {
			d, err := url.PathUnescape(seg)
			if err != nil || d == "" || d == "." || d == ".." || strings.Contains(d, "/") {
				return p, fmt.Errorf("%q: bad subpath segment %q", s, seg)
			}
			segs = append(segs, d)
		}
		p.Subpath = strings.Join(segs, "/")
	}
	rest, quals, hasQ := cutLast(rest, "?")
	if hasQ {
		p.Qualifiers = map[string]string{}
		for _, kv := range strings.Split(quals, "&") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !purlQKey.MatchString(k) {
				return p, fmt.Errorf("%q: bad qualifier %q", s, kv)
			}
			d, err := url.PathUnescape(v)
			if err != nil || d == "" {
				return p, fmt.Errorf("%q: bad qualifier value %q", s, v)
			}
			if _, dup := p.Qualifiers[k]; dup {
				return p, fmt.Errorf("%q: qualifier %q given twice", s, k)
			}
			p.Qualifiers[k] = d
			p.QualifierKeys = append(p.QualifierKeys, k)
		}
	}
	scheme, rest, ok := strings.Cut(rest, ":")
	if !ok || scheme != "pkg" {
		return p, fmt.Errorf("%q: scheme is not pkg", s)
	}
	rest = strings.TrimLeft(rest, "/")
	typ, rest, ok := strings.Cut(rest, "/")
	if !ok || !purlType.MatchString(typ) {
		return p, fmt.Errorf("%q: bad or missing type %q", s, typ)
	}
	p.Type = typ
	rest, ver, hasV := cutLast(rest, "@")
	if hasV {
		d, err := url.PathUnescape(ver)
		if err != nil || d == "" {
			return p, fmt.Errorf("%q: bad version %q", s, ver)
		}
		p.Version = d
	}
	rest = strings.Trim(rest, "/")
	ns, name, found := cutLast(rest, "/")
	if !found { // no '/': the whole remainder is the name
		ns, name = "", rest
	}
	d, err := url.PathUnescape(name)
	if err != nil || d == "" {
		return p, fmt.Errorf("%q: bad or missing name %q", s, name)
	}
	p.Name = d
	if ns != "" {
		var segs []string
		for _, seg := range strings.Split(ns, "/") {
			d, err := url.PathUnescape(seg)
			if err != nil || d == "" || strings.Contains(d, "/") {
				return p, fmt.Errorf("%q: bad namespace segment %q", s, seg)
			}
			segs = append(segs, d)
		}
		p.Namespace = strings.Join(segs, "/")
	}
	return p, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

var ociDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// checkPURL parses a purl and applies the canonical-form and type rules
// this SBOM relies on.
func checkPURL(s string) (parsedPURL, error) {
	p, err := parsePURL(s)
	if err != nil {
		return p, err
	}
	if !slices.IsSorted(p.QualifierKeys) {
		return p, fmt.Errorf("%q: qualifier keys %v are not sorted as the canonical form requires", s, p.QualifierKeys)
	}
	switch p.Type {
	case "oci":
		repo := p.Qualifiers["repository_url"]
		switch {
		case p.Namespace != "":
			return p, fmt.Errorf("%q: an oci purl has no namespace", s)
		case p.Name != strings.ToLower(p.Name):
			return p, fmt.Errorf("%q: an oci name is lowercase", s)
		case repo == "" || p.Name != strings.ToLower(repo[strings.LastIndexByte(repo, '/')+1:]):
			return p, fmt.Errorf("%q: the name must be the last segment of repository_url %q", s, repo)
		case p.Version != "" && !ociDigest.MatchString(p.Version):
			return p, fmt.Errorf("%q: an oci version is sha256:<64 hex>, got %q", s, p.Version)
		}
	case "golang":
		if p.Namespace == "" || p.Version == "" {
			return p, fmt.Errorf("%q: a Go module purl needs the module path and version", s)
		}
	}
	return p, nil
}

// checkStructure returns every structural problem of a decoded document.
func checkStructure(b *cdx.BOM) []string {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if b.BOMFormat != cdx.BOMFormat {
		add("bomFormat is %q, want %q", b.BOMFormat, cdx.BOMFormat)
	}
	if b.SpecVersion != cdx.SpecVersion1_6 {
		add("specVersion is %s, want 1.6", b.SpecVersion)
	}
	if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(b.SerialNumber) {
		add("serialNumber %q is not a urn:uuid", b.SerialNumber)
	}

	refs := map[string]int{}
	var products []string // components the dependency graph must cover
	var visit func(where string, c cdx.Component, product bool)
	visit = func(where string, c cdx.Component, product bool) {
		if c.Type == "" || c.Name == "" || c.BOMRef == "" {
			add("%s: component %q (bom-ref %q) lacks a type, name or bom-ref", where, c.Name, c.BOMRef)
		}
		if refs[c.BOMRef]++; c.BOMRef != "" && refs[c.BOMRef] == 2 {
			add("bom-ref %q is used twice", c.BOMRef)
		}
		if product {
			products = append(products, c.BOMRef)
		}
		if c.PackageURL != "" {
			if _, err := checkPURL(c.PackageURL); err != nil {
				add("%s: %v", where, err)
			}
		}
		if c.Components != nil {
			for _, sub := range *c.Components {
				visit(where+"/"+c.BOMRef, sub, product)
			}
		}
	}
	if b.Metadata != nil {
		if b.Metadata.Component != nil {
			visit("metadata.component", *b.Metadata.Component, true)
		}
		if b.Metadata.Tools != nil && b.Metadata.Tools.Components != nil {
			for _, c := range *b.Metadata.Tools.Components {
				visit("metadata.tools", c, false)
			}
		}
	}
	if b.Components != nil {
		for _, c := range *b.Components {
			visit("components", c, true)
		}
	}

	inGraph := map[string]bool{}
	if b.Dependencies != nil {
		for _, d := range *b.Dependencies {
			if inGraph[d.Ref] {
				add("dependency %q is listed twice", d.Ref)
			}
			inGraph[d.Ref] = true
			if refs[d.Ref] == 0 {
				add("dependency ref %q names no bom-ref", d.Ref)
			}
			if d.Dependencies != nil {
				for _, on := range *d.Dependencies {
					if refs[on] == 0 {
						add("%q depends on %q, which names no bom-ref", d.Ref, on)
					}
				}
			}
		}
	}
	for _, r := range products {
		if !inGraph[r] {
			add("component %q has no dependency entry (CycloneDX reads that as unknown, not none)", r)
		}
	}
	return errs
}

func TestParsePURL(t *testing.T) {
	for in, want := range map[string]parsedPURL{
		// Examples of the purl spec's oci type definition.
		"pkg:oci/debian@sha256%3A244fd47e07d10?arch=amd64&repository_url=docker.io/library/debian&tag=latest": {
			Type: "oci", Name: "debian", Version: "sha256:244fd47e07d10",
			Qualifiers: map[string]string{"arch": "amd64", "repository_url": "docker.io/library/debian", "tag": "latest"},
		},
		"pkg:golang/github.com/kubeflow/trainer/v2@v2.2.0": {Type: "golang", Namespace: "github.com/kubeflow/trainer", Name: "v2", Version: "v2.2.0"},
		"pkg:generic/openssl@1.1.10g?download_url=https://openssl.org/source/openssl-1.1.0g.tar.gz": {
			Type: "generic", Name: "openssl", Version: "1.1.10g",
			Qualifiers: map[string]string{"download_url": "https://openssl.org/source/openssl-1.1.0g.tar.gz"},
		},
		"pkg://npm/%40angular/core@1.0#dist/x": {Type: "npm", Namespace: "@angular", Name: "core", Version: "1.0", Subpath: "dist/x"},
	} {
		got, err := parsePURL(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got.QualifierKeys = nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %+v\nwant %+v", in, got, want)
		}
	}
	for _, bad := range []string{
		"oci/debian@sha256:1",               // no scheme
		"pkg:oci",                           // no name
		"pkg:1oci/debian",                   // type starts with a digit
		"pkg:oci/deb ian",                   // space
		"pkg:oci/debian?tag=a&tag=b",        // duplicate qualifier
		"pkg:oci/debian?Tag=a",              // uppercase key
		"pkg:oci/debian@sha256%3",           // truncated escape
		"pkg:oci/debian?repository_url=&x=", // empty values
	} {
		if _, err := parsePURL(bad); err == nil {
			t.Errorf("%q parsed; want an error", bad)
		}
	}
	for _, bad := range []string{
		"pkg:oci/Debian@sha256%3A" + strings.Repeat("a", 64) + "?repository_url=docker.io/library/Debian",
		"pkg:oci/debian@latest?repository_url=docker.io/library/debian",
		"pkg:oci/debian?tag=x&repository_url=docker.io/library/debian",
		"pkg:oci/ubuntu?repository_url=docker.io/library/debian",
		"pkg:oci/library/debian?repository_url=docker.io/library/debian",
	} {
		if _, err := checkPURL(bad); err == nil {
			t.Errorf("checkPURL(%q) passed; want an error", bad)
		}
	}
}

// checkStructure must catch each structural fault it exists for.
func TestCheckStructureFindsFaults(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(b *cdx.BOM)
		want   string
	}{
		"duplicate bom-ref": {func(b *cdx.BOM) {
			cs := *b.Components
			cs[1].BOMRef = cs[0].BOMRef
		}, "used twice"},
		"dangling dependsOn": {func(b *cdx.BOM) {
			d := (*b.Dependencies)[0]
			d.Dependencies = &[]string{"pkg:oci/ghost"}
			(*b.Dependencies)[0] = d
		}, `"pkg:oci/ghost", which names no bom-ref`},
		"dangling ref": {func(b *cdx.BOM) { (*b.Dependencies)[0].Ref = "nowhere" }, `"nowhere" names no bom-ref`},
		"missing name": {func(b *cdx.BOM) { (*b.Components)[0].Name = "" }, "lacks a type, name or bom-ref"},
		"bad purl": {func(b *cdx.BOM) {
			for i, c := range *b.Components {
				if c.Type == cdx.ComponentTypeContainer {
					(*b.Components)[i].PackageURL = strings.Replace(c.PackageURL, "?", "?zone=x&", 1)
					return
				}
			}
		}, "not sorted"},
		"no graph entry": {func(b *cdx.BOM) {
			deps := (*b.Dependencies)[1:]
			b.Dependencies = &deps
		}, "has no dependency entry"},
		"wrong spec version": {func(b *cdx.BOM) { b.SpecVersion = cdx.SpecVersion1_5 }, "want 1.6"},
	} {
		t.Run(name, func(t *testing.T) {
			b := decodeBOM(t, encodeReal(t))
			tc.mutate(b)
			errs := checkStructure(b)
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("problems %q do not mention %q", errs, tc.want)
			}
		})
	}
}
