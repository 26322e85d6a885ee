package bom

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestNewImage(t *testing.T) {
	valid := []struct{ ref, version, repo, tag string }{
		{daemonRepo + ":v1.0.13_1@" + daemonDigest, "v1.0.13_1", daemonRepo, "v1.0.13_1"},
		{daemonRepo + ":v1.0.09@" + daemonDigest, "v1.0.09", daemonRepo, "v1.0.09"},
		{"pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime@" + daemonDigest, "2.11.0-cuda12.8-cudnn9-runtime", "pytorch/pytorch", "2.11.0-cuda12.8-cudnn9-runtime"},
		{"localhost:5000/a/b:v1@" + daemonDigest, "v1", "localhost:5000/a/b", "v1"},
	}
	for _, v := range valid {
		img, err := NewImage(v.ref, v.version)
		if err != nil {
			t.Errorf("NewImage(%q): %v", v.ref, err)
			continue
		}
		if img.Repository() != v.repo || img.Tag() != v.tag || img.Digest() != daemonDigest {
			t.Errorf("NewImage(%q) parts = %q %q %q", v.ref, img.Repository(), img.Tag(), img.Digest())
		}
		if got := img.Repository() + ":" + img.Tag() + "@" + img.Digest(); got != v.ref {
			t.Errorf("parts of %q reassemble to %q", v.ref, got)
		}
	}

	invalid := []struct{ ref, version, want string }{
		{"", "v1", "reference is missing"},
		{daemonRepo + ":v1.0.21@" + daemonDigest, "", `version is missing: set it to "v1.0.21"`},
		{daemonRepo + ":v1.0.21@" + daemonDigest, "v1.0.21-rc1", `version "v1.0.21-rc1" does not match the reference's tag "v1.0.21"`},
		{daemonRepo + ":v1.0.21", "v1.0.21", "has no digest"},
		{daemonRepo + "@" + daemonDigest, "v1.0.21", "has no tag"},
		{daemonRepo + ":@" + daemonDigest, "v1.0.21", "has no tag"},
		{daemonRepo + ":v1 .0@" + daemonDigest, "v1 .0", "is not a valid image reference"},
	}
	for _, v := range invalid {
		img, err := NewImage(v.ref, v.version)
		if err == nil || !strings.Contains(err.Error(), v.want) {
			t.Errorf("NewImage(%q, %q) = %+v, %v; want an error containing %q", v.ref, v.version, img, err, v.want)
			continue
		}
		if img != (Image{}) {
			t.Errorf("NewImage(%q) returned a partial image %+v with its error", v.ref, img)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Line != 0 || fe.File != "" {
			t.Errorf("NewImage(%q) error %#v: want a FieldError without a location", v.ref, fe)
		}
	}
}

func TestImageZeroValueHasNoParts(t *testing.T) {
	// Parts come only from validation, so an unvalidated Image never looks pinned.
	img := Image{Reference: daemonRepo + ":v1.0.21@" + daemonDigest, Version: "v1.0.21"}
	if img.Repository() != "" || img.Tag() != "" || img.Digest() != "" {
		t.Errorf("unvalidated image has parts %q %q %q", img.Repository(), img.Tag(), img.Digest())
	}
}

func TestSplitReference(t *testing.T) {
	for ref, want := range map[string][3]string{
		"gke.gcr.io/pause:3.8@sha256:abc": {"gke.gcr.io/pause", "3.8", "sha256:abc"},
		"localhost:5000/x/y:v1.0.9-1":     {"localhost:5000/x/y", "v1.0.9-1", ""},
		"localhost:5000/x/y@sha256:abc":   {"localhost:5000/x/y", "", "sha256:abc"},
		"pytorch/pytorch":                 {"pytorch/pytorch", "", ""},
	} {
		repo, tag, dig := SplitReference(ref)
		if got := [3]string{repo, tag, dig}; got != want {
			t.Errorf("SplitReference(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestDigestOnlyPinNeedsASource(t *testing.T) {
	const ref = "gcr.io/gke-release/nri-device-injector@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
	img := Image{Reference: ref, Source: "Google's nri-device-injector.yaml"}
	if probs := img.parse(); len(probs) != 0 || img.Tag() != "" || img.Repository() != "gcr.io/gke-release/nri-device-injector" {
		t.Fatalf("digest-only pin with a source: %+v, %+v", probs, img)
	}
	noSource := Image{Reference: ref}
	if probs := noSource.parse(); len(probs) == 0 || !strings.Contains(probs[0].what, "has no tag") {
		t.Fatalf("digest-only pin without a source accepted: %+v", probs)
	}
	withVersion := Image{Reference: ref, Source: "x", Version: "1.0"}
	if probs := withVersion.parse(); len(probs) != 1 || probs[0].field != "version" {
		t.Fatalf("digest-only pin with a version: %+v", probs)
	}
	unpinned := Image{Reference: "gcr.io/gke-release/nri-device-injector", Source: "x"}
	if probs := unpinned.parse(); len(probs) == 0 {
		t.Fatal("a source must not excuse a missing digest")
	}
}

// A user's image meets the BOM's rule, and cannot be digest-only: only the
// BOM, with a source, may pin one.
func TestParsePinned(t *testing.T) {
	good := "registry.example/nccl-tests:v2@sha256:" + strings.Repeat("0", 64)
	img, err := ParsePinned(good)
	if err != nil || img.Tag() != "v2" || img.Digest() != "sha256:"+strings.Repeat("0", 64) || img.Version != "v2" {
		t.Fatalf("ParsePinned(%q) = %+v, %v", good, img, err)
	}
	for ref, want := range map[string]string{
		"":                                       "empty",
		"x:latest":                               "has no digest",
		"x:latest@sha256:not-hex":                "digest has 7 hex characters, want 64",
		"x@sha256:" + strings.Repeat("a", 64):    "has no tag",
		"x:v1@sha256:" + strings.Repeat("A", 64): "uppercase",
	} {
		if _, err := ParsePinned(ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePinned(%q) = %v, want an error mentioning %q", ref, err, want)
		}
	}
}

// TestPinnedPatternAgreesWithParsePinned: the pattern the Helm chart's
// schema checks the worker image with accepts what ParsePinned accepts and
// refuses what it refuses for its shape.
func TestPinnedPatternAgreesWithParsePinned(t *testing.T) {
	re := regexp.MustCompile(PinnedPattern)
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, ref := range []string{
		"us-docker.pkg.dev/p/r/worker:v1@" + dig,
		"registry:5000/team/worker:2.1-cuda12@" + dig,
		"worker:latest@" + dig,
		"us-docker.pkg.dev/p/r/worker@" + dig,                // no tag
		"registry:5000/team/worker@" + dig,                   // a port, no tag
		"us-docker.pkg.dev/p/r/worker:v1",                    // no digest
		"us-docker.pkg.dev/p/r/worker:v1@sha256:0123",        // short digest
		"us-docker.pkg.dev/p/r/worker:v1@" + dig + "@" + dig, // two digests
		"us-docker.pkg.dev/p/r/worker:v1@" + strings.ToUpper(dig),
		"",
	} {
		_, err := ParsePinned(ref)
		if got, want := re.MatchString(ref), err == nil; got != want {
			t.Errorf("%q: PinnedPattern matches %v, ParsePinned accepts %v (%v)", ref, got, want, err)
		}
	}
}
