package bom

import (
	"strings"
	"testing"
)

func TestGIBReleasesRejects(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want string }{
		{"machine type of another fabric", "machineType: a4-highgpu-8g", "machineType: a3-megagpu-8g",
			`"a3-megagpu-8g" is not a gIB machine type: use one of a3-ultragpu-8g, a4-highgpu-8g`},
		{"machine type without a floor", "  - {machineType: a4-highgpu-8g, gke: 1.32.2-gke.1475000, source: docs}\n", "",
			"machine type a4-highgpu-8g has no GKE floor"},
		{"floor that is no GKE version", "gke: 1.31.4-gke.1183000", "gke: 1.31.4", `"1.31.4" is not a GKE version`},
		{"release listed twice", "installer: v1.1.1,", "installer: v1.1.2,", `"v1.1.2" is already listed`},
		{"unknown source", "source: manifests}", "source: blog}", `"blog" is not release-notes or manifests`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseReleases("releases.yaml", []byte(edit(t, testReleases, tc.old, tc.new)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
}

// Only a release-notes gIB release may be pinned, and its diagnostic image
// must be of the same release.
func TestCheckGIBPublished(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"manifests-only release", "nccl-plugin-gib:v1.1.2@", "nccl-plugin-gib:v1.1.1@", "known only from Google's manifests"},
		{"unlisted release", "nccl-plugin-gib:v1.1.2@", "nccl-plugin-gib:v1.1.9@", `"v1.1.9" is not a gIB release`},
		{"diagnostic of another release", "nccl-plugin-gib-diagnostic:v1.1.2@", "nccl-plugin-gib-diagnostic:v1.1.1@", `"v1.1.1" is not the diagnostic image of gIB v1.1.2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := edit(t, testBOM, tc.old, tc.new)
			ver := tc.new[strings.Index(tc.new, ":")+1 : len(tc.new)-1]
			if strings.Contains(tc.old, "diagnostic") {
				doc = edit(t, doc, "    version: v1.1.2\ntrainer:", "    version: "+ver+"\ntrainer:")
			} else {
				doc = edit(t, doc, "    version: v1.1.2\n  gibDiagnostic:", "    version: "+ver+"\n  gibDiagnostic:")
			}
			b, err := Parse("bom.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckPublished(b, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
	b, err := Parse("bom.yaml", []byte(testBOM))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPublished(b, r); err != nil {
		t.Errorf("the fixture's pins: %v", err)
	}
	if f, ok := r.GKEFloor("a4-highgpu-8g"); !ok || f.GKE != "1.32.2-gke.1475000" {
		t.Errorf("GKEFloor(a4-highgpu-8g) = %+v, %v", f, ok)
	}
}

// The rollback rule reads the notes' dates: v1.1.1 (2026-03-09) is older
// than v1.1.2 (2026-05-14); an unlisted tag is never a rollback.
func TestGIBRollBack(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatal(err)
	}
	if was, now, back := r.GIBRollBack("v1.1.2", "v1.1.1"); !back || was.Installer != "v1.1.2" || now.Installer != "v1.1.1" {
		t.Errorf("v1.1.2 -> v1.1.1: %v, %v, back %v", was.Installer, now.Installer, back)
	}
	for _, pair := range [][2]string{{"v1.1.1", "v1.1.2"}, {"v1.1.2", "v1.1.2"}, {"v1.1.2", "v9"}} {
		if _, _, back := r.GIBRollBack(pair[0], pair[1]); back {
			t.Errorf("%s -> %s counted as a rollback", pair[0], pair[1])
		}
	}
}
