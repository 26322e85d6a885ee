package bom

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// GIBRelease is one published NCCL/gIB release (x86 64-bit): the
// installer and diagnostic images share its tag.
type GIBRelease struct {
	Date       string `yaml:"date"` // YYYY-MM-DD of the release note
	Installer  string `yaml:"installer"`
	Diagnostic string `yaml:"diagnostic,omitempty"`
	// Source is SourceReleaseNotes for a release Google's gIB release
	// notes publish with digests, SourceManifests for a tag known only
	// from Google's manifests. Only a release-notes release may be pinned.
	Source string `yaml:"source"`
	// NCCL, CUDA and Driver are what the notes state: the bundled NCCL,
	// the minimum CUDA runtime and the minimum driver.
	NCCL   string `yaml:"nccl,omitempty"`
	CUDA   string `yaml:"cuda,omitempty"`
	Driver string `yaml:"driver,omitempty"`
}

// GIBMachineType is the GKE floor for GPUDirect RDMA on one machine type.
type GIBMachineType struct {
	MachineType string `yaml:"machineType"`
	GKE         string `yaml:"gke"`
	Source      string `yaml:"source"`
}

// GIBReleaseFor returns the gIB release whose installer tag is exactly v.
func (r *Releases) GIBReleaseFor(v string) (GIBRelease, bool) {
	i := slices.IndexFunc(r.GIBReleases, func(g GIBRelease) bool { return g.Installer == v })
	if i < 0 {
		return GIBRelease{}, false
	}
	return r.GIBReleases[i], true
}

// GIBRollBack is RollBack for gIB releases: whether moving the pin from
// gIB release from to release to goes back to one published earlier, by
// the release notes' dates; false when either is not in the table.
func (r *Releases) GIBRollBack(from, to string) (was, now GIBRelease, back bool) {
	was, okFrom := r.GIBReleaseFor(from)
	now, okTo := r.GIBReleaseFor(to)
	return was, now, okFrom && okTo && now.Date < was.Date
}

// GKEFloor returns the minimum GKE version for GPUDirect RDMA on machine
// type mt, with its source.
func (r *Releases) GKEFloor(mt string) (GIBMachineType, bool) {
	i := slices.IndexFunc(r.GIBMachineTypes, func(g GIBMachineType) bool { return g.MachineType == mt })
	if i < 0 {
		return GIBMachineType{}, false
	}
	return r.GIBMachineTypes[i], true
}

func (r *Releases) validateGIB(c *checker) {
	seen := map[string]int{}
	if c.section(path("gibReleases"), "list Google's published NCCL/gIB releases under gibReleases:") {
		for i, g := range r.GIBReleases {
			p := path("gibReleases").index(i)
			if c.require(p.key("date"), g.Date, "set it to the release note's date, YYYY-MM-DD") {
				if _, err := time.Parse(dateLayout, g.Date); err != nil {
					c.add(p.key("date"), fmt.Sprintf("%s is not a date", quote(g.Date)), "write it as YYYY-MM-DD, e.g. 2026-05-14", err)
				}
			}
			if c.require(p.key("source"), g.Source, "say where the release is published: "+SourceReleaseNotes+" or "+SourceManifests) &&
				g.Source != SourceReleaseNotes && g.Source != SourceManifests {
				c.add(p.key("source"), fmt.Sprintf("%s is not %s or %s", quote(g.Source), SourceReleaseNotes, SourceManifests),
					"use release-notes for a release in Google's NCCL/gIB release notes, manifests for a tag known only from Google's manifests", nil)
			}
			if g.Diagnostic != "" {
				c.tag(p.key("diagnostic"), g.Diagnostic, "the diagnostic image (nccl-plugin-gib-diagnostic) tag of the release")
			}
			if !c.tag(p.key("installer"), g.Installer, "the installer (nccl-plugin-gib) tag") {
				continue
			}
			if first, dup := seen[g.Installer]; dup {
				line, _ := c.lines.Line(string(path("gibReleases").index(first)))
				c.add(p.key("installer"), fmt.Sprintf("%s is already listed at line %d", quote(g.Installer), line), "keep one row per gIB release", nil)
				continue
			}
			seen[g.Installer] = i
		}
	}
	types := map[string]bool{}
	if c.section(path("gibMachineTypes"), "list the GKE floor of every gIB machine type under gibMachineTypes:") {
		for i, m := range r.GIBMachineTypes {
			p := path("gibMachineTypes").index(i)
			if c.require(p.key("machineType"), m.MachineType, "name the machine type, e.g. a3-ultragpu-8g") {
				if _, ok := fabric.GIB.MachineType(m.MachineType); !ok {
					c.add(p.key("machineType"), fmt.Sprintf("%s is not a gIB machine type", quote(m.MachineType)),
						"use one of "+strings.Join(fabric.GIB.MachineTypeNames(), ", "), nil)
				} else if types[m.MachineType] {
					c.add(p.key("machineType"), fmt.Sprintf("%s is listed twice", m.MachineType), "keep one row per machine type", nil)
				}
				types[m.MachineType] = true
			}
			if c.require(p.key("gke"), m.GKE, "set the minimum GKE version as published, e.g. 1.31.4-gke.1183000") && !gkeRE.MatchString(m.GKE) {
				c.add(p.key("gke"), fmt.Sprintf("%s is not a GKE version", quote(m.GKE)), "write the minimum GKE version as published, e.g. 1.31.4-gke.1183000", nil)
			}
			c.require(p.key("source"), m.Source, "say which Google document states the floor")
		}
		for _, mt := range fabric.GIB.MachineTypeNames() {
			if !types[mt] {
				c.add(path("gibMachineTypes"), fmt.Sprintf("machine type %s has no GKE floor", mt), "add - {machineType: "+mt+", gke: <version>, source: <document>}", nil)
			}
		}
	}
}

// checkGIBPublished rejects a BOM whose gIB installer is not a release-notes
// release, or whose diagnostic image is of another release.
func checkGIBPublished(c *checker, b *BOM, r *Releases) {
	installer, diag := b.Images.GIBInstaller.Version, b.Images.GIBDiagnostic.Version
	rel, ok := r.GIBReleaseFor(installer)
	if !ok {
		var listed []string
		for _, g := range r.GIBReleases {
			listed = append(listed, g.Installer)
		}
		c.add(path("images").key(RoleGIBInstaller).key("version"), fmt.Sprintf("%s is not a gIB release in %s", quote(installer), r.Path),
			fmt.Sprintf("add the release to gibReleases in %s or pick a listed one: %s", r.Path, strings.Join(listed, ", ")), nil)
		return
	}
	if rel.Source != SourceReleaseNotes {
		c.add(path("images").key(RoleGIBInstaller).key("version"),
			fmt.Sprintf("gIB %s is known only from Google's manifests (%s): the release notes publish no digest for it", installer, r.Path),
			"pin a release-notes gIB release, whose digests the notes publish", nil)
	}
	if diag != rel.Diagnostic {
		c.add(path("images").key(RoleGIBDiagnostic).key("version"),
			fmt.Sprintf("%s is not the diagnostic image of gIB %s (%s lists %s)", quote(diag), installer, r.Path, quote(rel.Diagnostic)),
			"pin the diagnostic image of the same release as the installer: its nccl-tests are built against that release's NCCL", nil)
	}
}

// InstallerOf is the installer image bom.yaml pins for fabric f: the one
// whose DaemonSet prepares f's nodes (installer for TCPXO, gibInstaller
// for gIB).
func (b *BOM) InstallerOf(f fabric.Fabric) (Image, string) {
	if f.Name == fabric.GIB.Name {
		return b.Images.GIBInstaller, RoleGIBInstaller
	}
	return b.Images.Installer, RoleInstaller
}
