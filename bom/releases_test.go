package bom

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// testReleases is a valid releases.yaml whose line numbers the cases rely on.
const testReleases = `pairs:
  - {date: 2026-01-09, installer: v1.0.15, daemon: v1.0.21, nccl: 2.28.7-1, source: release-notes}
  - {date: 2025-11-19, installer: v1.0.14, daemon: v1.0.20, nccl: 2.28.7-1, source: release-notes}
  - date: 2025-05-01
    installer: v1.0.9-1
    daemon: v1.0.15
    nccl: "2.21.5–2.23.4"
    source: release-notes
ncclConfigs:
  - installer: v1.0.15
    source: GPUDirect-TCPXO release notes, v1.0.15
    env: &env
      - {name: NCCL_DEBUG, value: "WARN"}
      - {name: NCCL_NVLS_ENABLE, value: "1"}
  - installer: v1.0.14
    source: assumed
    env: *env
retiredDaemonFlags:
  - {flag: --num_nics, fatal: false, note: "retired (accepted, no effect)", source: Google's release notes}
  - flag: --enforce_kernel_ipv6_support
    from: v1.0.21
    fatal: true
    note: "rejected from daemon v1.0.21: the daemon exits"
    source: the round-3 facts
` + gibSection

// gibSection is a valid gIB part of releases.yaml.
const gibSection = `gibReleases:
  - {date: 2026-05-14, installer: v1.1.2, diagnostic: v1.1.2, source: release-notes}
  - {date: 2026-03-09, installer: v1.1.1, diagnostic: v1.1.1, source: manifests}
gibMachineTypes:
  - {machineType: a3-ultragpu-8g, gke: 1.31.4-gke.1183000, source: docs}
  - {machineType: a4-highgpu-8g, gke: 1.32.2-gke.1475000, source: docs}
`

func TestParseReleasesAcceptsFixture(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatalf("ParseReleases: %v", err)
	}
	if p, ok := r.PairFor("v1.0.9-1"); !ok || p.Daemon != "v1.0.15" || p.NCCL != "2.21.5–2.23.4" || p.Date != "2025-05-01" {
		t.Errorf("PairFor(v1.0.9-1) = %+v, %v", p, ok)
	}
	c, ok := r.ConfigFor("v1.0.14")
	if !ok || len(c.Env) != 2 || c.Env[1] != (facts.EnvVar{Name: "NCCL_NVLS_ENABLE", Value: "1"}) {
		t.Errorf("ConfigFor(v1.0.14) through an alias = %+v, %v", c, ok)
	}
	want := []RetiredDaemonFlag{
		{Flag: "--num_nics", Note: "retired (accepted, no effect)", Source: "Google's release notes"},
		{Flag: "--enforce_kernel_ipv6_support", From: "v1.0.21", Fatal: true, Note: "rejected from daemon v1.0.21: the daemon exits", Source: "the round-3 facts"},
	}
	if !slices.Equal(r.RetiredDaemonFlags, want) {
		t.Errorf("RetiredDaemonFlags = %+v, want %+v", r.RetiredDaemonFlags, want)
	}
	if got := r.RetiredDaemonFlagsFor("v1.0.20"); !slices.Equal(got, want[:1]) {
		t.Errorf("the flags retired for daemon v1.0.20 = %+v, want --num_nics only", got)
	}
	if got := r.RetiredDaemonFlagsFor("v1.0.21"); !slices.Equal(got, want) {
		t.Errorf("the flags retired for daemon v1.0.21 = %+v, want both", got)
	}
}

func TestParseReleasesRejects(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		edits edits
		want  []string
	}{
		{name: "duplicate installer row", edits: edits{{"installer: v1.0.14, daemon: v1.0.20", "installer: v1.0.15, daemon: v1.0.20"}},
			want: []string{`releases.yaml:3: pairs[1].installer "v1.0.15" is already listed at line 2: keep one row per installer release`}},
		{name: "row without installer", edits: edits{{"    installer: v1.0.9-1\n", ""}},
			want: []string{"releases.yaml:4: pairs[2].installer is missing: set it to the installer (nccl-plugin-gpudirecttcpx-dev) tag"}},
		{name: "row without daemon", edits: edits{{"    daemon: v1.0.15\n", ""}},
			want: []string{"releases.yaml:4: pairs[2].daemon is missing: set it to the daemon (tcpgpudmarxd-dev) tag published with it"}},
		{name: "row with empty daemon", edits: edits{{"daemon: v1.0.20,", "daemon: \"\","}},
			want: []string{"releases.yaml:3: pairs[1].daemon is empty"}},
		{name: "row without date", edits: edits{{"  - date: 2025-05-01\n    installer", "  - installer"}},
			want: []string{"releases.yaml:4: pairs[2].date is missing: set it to the release note's date, YYYY-MM-DD"}},
		{name: "date without zero padding", edits: edits{{"date: 2025-11-19", "date: 2025-11-9"}},
			want: []string{`releases.yaml:3: pairs[1].date "2025-11-9" is not a date: write it as YYYY-MM-DD`}},
		{name: "date that does not exist", edits: edits{{"date: 2025-11-19", "date: 2025-02-30"}},
			want: []string{`releases.yaml:3: pairs[1].date "2025-02-30" is not a date`}},
		{name: "date in another order", edits: edits{{"date: 2025-05-01", "date: 01-05-2025"}},
			want: []string{`releases.yaml:4: pairs[2].date "01-05-2025" is not a date`}},
		{name: "tag with a slash", edits: edits{{"daemon: v1.0.21,", "daemon: tcpgpudmarxd-dev/v1.0.21,"}},
			want: []string{`releases.yaml:2: pairs[0].daemon "tcpgpudmarxd-dev/v1.0.21" is not an image tag`}},
		{name: "misspelt pair field", edits: edits{{"installer: v1.0.14, daemon:", "installer: v1.0.14, deamon:"}},
			want: []string{`releases.yaml:3: pairs[1].deamon is not a known field: did you mean "daemon"?`, "date, installer, daemon, nccl"}},
		{name: "duplicate key in a flow row", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, nccl: 2.28.9, source: release-notes}\n  - {date: 2025-11-19"}},
			want: []string{"releases.yaml:2: pairs[0].nccl is defined twice (first at line 2)"}},
		{name: "no pairs", edits: edits{{testReleases[:strings.Index(testReleases, "ncclConfigs:")], ""}},
			want: []string{"releases.yaml:1: pairs is missing: list Google's published installer/daemon pairs", `ncclConfigs[0].installer "v1.0.15" is not an installer listed under pairs`}},
		{name: "config for an unlisted installer", edits: edits{{"  - installer: v1.0.14\n", "  - installer: v1.0.16\n"}},
			want: []string{`releases.yaml:15: ncclConfigs[1].installer "v1.0.16" is not an installer listed under pairs: add its published pair first, or correct the tag (listed: v1.0.15, v1.0.14, v1.0.9-1)`}},
		{name: "two configs for one installer", edits: edits{{"  - installer: v1.0.14\n", "  - installer: v1.0.15\n"}},
			want: []string{`releases.yaml:15: ncclConfigs[1].installer "v1.0.15" already has an NCCL config at line 10`}},
		{name: "pair without source", edits: edits{{", source: release-notes}\n  - {date: 2025-11-19", "}\n  - {date: 2025-11-19"}},
			want: []string{"releases.yaml:2: pairs[0].source is missing"}},
		{name: "pair with another source", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, source: blog}\n  - {date: 2025-11-19"}},
			want: []string{`releases.yaml:2: pairs[0].source "blog" is not release-notes or manifests`}},
		{name: "config without source", edits: edits{{"    source: assumed\n", ""}},
			want: []string{"releases.yaml:15: ncclConfigs[1].source is missing: say where the list comes from"}},
		{name: "config without env", edits: edits{{"    env: *env\n", ""}},
			want: []string{"releases.yaml:15: ncclConfigs[1].env is missing"}},
		{name: "duplicate env name", edits: edits{{`{name: NCCL_NVLS_ENABLE, value: "1"}`, `{name: NCCL_DEBUG, value: "INFO"}`}},
			want: []string{`releases.yaml:14: ncclConfigs[0].env[1].name "NCCL_DEBUG" is already set at line 13: keep one entry per variable`}},
		{name: "env name with a dash", edits: edits{{"name: NCCL_DEBUG,", "name: NCCL-DEBUG,"}},
			want: []string{`releases.yaml:13: ncclConfigs[0].env[0].name "NCCL-DEBUG" is not a valid environment variable name`}},
		{name: "env name starting with a digit", edits: edits{{"name: NCCL_DEBUG,", "name: 1NCCL_DEBUG,"}},
			want: []string{`releases.yaml:13: ncclConfigs[0].env[0].name "1NCCL_DEBUG" is not a valid environment variable name`}},
		{name: "env name with a space", edits: edits{{"name: NCCL_DEBUG,", "name: NCCL DEBUG,"}},
			want: []string{`releases.yaml:13: ncclConfigs[0].env[0].name "NCCL DEBUG" is not a valid environment variable name`}},
		{name: "env without value", edits: edits{{`{name: NCCL_DEBUG, value: "WARN"}`, `{name: NCCL_DEBUG, value: }`}},
			want: []string{"releases.yaml:13: ncclConfigs[0].env[0].value is empty: set the value published for NCCL_DEBUG"}},
		{name: "env as a string", edits: edits{{`{name: NCCL_DEBUG, value: "WARN"}`, `NCCL_DEBUG=WARN`}},
			want: []string{"releases.yaml:13: ncclConfigs[0].env[0] must be a mapping, not a string", "(keys: name, value)"}},
		{name: "driver branch of another driver", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, source: release-notes, driver: 580.65.06, driverBranch: R595}\n  - {date: 2025-11-19"}},
			want: []string{"releases.yaml:2: pairs[0].driverBranch R595 is not the branch of driver 580.65.06: set it to R580"}},
		{name: "driver branch without driver", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, source: release-notes, driverBranch: R580}\n  - {date: 2025-11-19"}},
			want: []string{"pairs[0].driver is missing"}},
		{name: "driver branch misspelt", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, source: release-notes, driver: 580.65.06, driverBranch: r580}\n  - {date: 2025-11-19"}},
			want: []string{`pairs[0].driverBranch "r580" is not a driver branch`}},
		{name: "gke floor not a version", edits: edits{{"nccl: 2.28.7-1, source: release-notes}\n  - {date: 2025-11-19", "nccl: 2.28.7-1, source: release-notes, gke: \"1.33\"}\n  - {date: 2025-11-19"}},
			want: []string{`pairs[0].gke "1.33" is not a GKE version`}},
		{name: "relative lib dir", edits: edits{{"    source: assumed\n", "    source: assumed\n    libDir: usr/local/tcpxo/lib64\n"}},
			want: []string{`ncclConfigs[1].libDir "usr/local/tcpxo/lib64" is not an absolute directory`}},
		{name: "empty file", doc: "\n", want: []string{"releases.yaml: holds no data: write a mapping with the keys pairs, ncclConfigs, retiredDaemonFlags"}},
		{name: "retired flag without its name", edits: edits{{"{flag: --num_nics, fatal", "{fatal"}},
			want: []string{"releases.yaml:19: retiredDaemonFlags[0].flag is missing: set it to the flag as the daemon reads it, without a value, e.g. --num_nics"}},
		{name: "retired flag without dashes", edits: edits{{"flag: --num_nics,", "flag: num_nics,"}},
			want: []string{`releases.yaml:19: retiredDaemonFlags[0].flag "num_nics" is not a daemon flag: write the flag's name with its leading --, without a value`}},
		{name: "retired flag with a value", edits: edits{{"flag: --num_nics,", "flag: --num_nics=8,"}},
			want: []string{`releases.yaml:19: retiredDaemonFlags[0].flag "--num_nics=8" is not a daemon flag`}},
		{name: "retired flag listed twice", edits: edits{{"flag: --enforce_kernel_ipv6_support", "flag: --num_nics"}},
			want: []string{`releases.yaml:20: retiredDaemonFlags[1].flag "--num_nics" is already listed at line 19: keep one entry per flag`}},
		{name: "retired flag from an unreadable release", edits: edits{{"from: v1.0.21", "from: latest"}},
			want: []string{`releases.yaml:21: retiredDaemonFlags[1].from "latest" is not a daemon release vMAJOR.MINOR.PATCH: write the first daemon release the rule holds for, e.g. v1.0.21, or leave from out`}},
		{name: "retired flag from an unpublished daemon", edits: edits{{"from: v1.0.21", "from: v1.0.211"}},
			want: []string{`releases.yaml:21: retiredDaemonFlags[1].from "v1.0.211" is not a daemon listed under pairs: use the tag of the published daemon`}},
		{name: "retired flag from a non-tag", edits: edits{{"from: v1.0.21", "from: v1.0.21 or later"}},
			want: []string{`releases.yaml:21: retiredDaemonFlags[1].from "v1.0.21 or later" is not an image tag`}},
		{name: "retired flag without fatal", edits: edits{{"    fatal: true\n", ""}},
			want: []string{"releases.yaml:20: retiredDaemonFlags[1].fatal is missing: say whether the daemon exits at start on the flag: fatal: true, or fatal: false"}},
		{name: "retired flag with empty fatal", edits: edits{{"fatal: false,", "fatal: ,"}},
			want: []string{"releases.yaml:19: retiredDaemonFlags[0].fatal is empty: say whether the daemon exits at start on the flag"}},
		{name: "retired flag with fatal not a boolean", edits: edits{{"fatal: true", "fatal: \"yes\""}},
			want: []string{"releases.yaml:22: retiredDaemonFlags[1].fatal must be true or false, not a string: write true or false, unquoted"}},
		{name: "retired flag without note", edits: edits{{`, note: "retired (accepted, no effect)"`, ""}},
			want: []string{"releases.yaml:19: retiredDaemonFlags[0].note is missing: say what the daemon does with the flag, as bom-check reports it"}},
		{name: "retired flag without source", edits: edits{{"    source: the round-3 facts\n", ""}},
			want: []string{"releases.yaml:20: retiredDaemonFlags[1].source is missing: say where the fact is published"}},
		{name: "retired flag field misspelt", edits: edits{{"    fatal: true\n", "    fatel: true\n"}},
			want: []string{`releases.yaml:22: retiredDaemonFlags[1].fatel is not a known field: did you mean "fatal"? (fields allowed in retiredDaemonFlags[1]: flag, from, fatal, note, source)`}},
		{name: "retired flags as a mapping", doc: testReleases[:strings.Index(testReleases, "retiredDaemonFlags:")] + "retiredDaemonFlags: {flag: --num_nics}\n",
			want: []string{"releases.yaml:18: retiredDaemonFlags must be a list, not a mapping: write it as a list, one entry per line starting with '- '"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if doc == "" {
				doc = tc.edits.apply(t, testReleases)
			}
			r, err := ParseReleases("releases.yaml", []byte(doc))
			if err == nil {
				t.Fatalf("ParseReleases accepted the document: %+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			for _, fe := range fieldErrors(t, err) {
				if fe.File != "releases.yaml" || fe.Fix == "" {
					t.Errorf("rejection without file or fix: %#v", fe)
				}
			}
		})
	}
}

func TestPairForIsExact(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"v1.0.15": true, "v1.0.9-1": true, "v1.0.9": false, "v1.0.15-rc1": false, "V1.0.15": false, "v1.0.15 ": false, "": false} {
		if _, ok := r.PairFor(v); ok != want {
			t.Errorf("PairFor(%q) found = %v, want %v", v, ok, want)
		}
		if _, ok := r.ConfigFor(v); ok && !want {
			t.Errorf("ConfigFor(%q) found a config", v)
		}
	}
}

func TestConfigForReturnsACopy(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.ConfigFor("v1.0.15")
	c.Env[0].Value = "INFO"
	if again, _ := r.ConfigFor("v1.0.15"); again.Env[0].Value != "WARN" {
		t.Errorf("modifying a returned config changed the table: %+v", again.Env[0])
	}
}

func TestPublishedInstallersNewestFirst(t *testing.T) {
	doc := edit(t, testReleases, "  - {date: 2026-01-09, installer: v1.0.15, daemon: v1.0.21, nccl: 2.28.7-1, source: release-notes}\n", "")
	doc = edit(t, doc, "    source: release-notes\n", "    source: release-notes\n  - {date: 2026-01-09, installer: v1.0.15, daemon: v1.0.21, source: release-notes}\n")
	r, err := ParseReleases("releases.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.PublishedInstallers(), []string{"v1.0.15", "v1.0.14", "v1.0.9-1"}; !slices.Equal(got, want) {
		t.Errorf("PublishedInstallers = %v, want %v", got, want)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadAllCrossChecks(t *testing.T) {
	rel := writeFile(t, "releases.yaml", testReleases)
	cases := []struct {
		name  string
		edits edits
		want  []string
	}{
		{name: "unpublished installer", edits: edits{{":v1.0.15@", ":v1.0.16@"}, {"    version: v1.0.15\n", "    version: v1.0.16\n"}},
			want: []string{`bom.yaml:4: images.installer.version "v1.0.16" is not a published installer in ` + rel,
				"add the published pair to " + rel + " or pick a published version: v1.0.15, v1.0.14, v1.0.9-1"}},
		{name: "release candidate of a published installer", edits: edits{{":v1.0.15@", ":v1.0.15-rc1@"}, {"    version: v1.0.15\n", "    version: v1.0.15-rc1\n"}},
			want: []string{`bom.yaml:4: images.installer.version "v1.0.15-rc1" is not a published installer`}},
		{name: "daemon of another release", edits: edits{{":v1.0.21@", ":v1.0.20@"}, {"    version: v1.0.21\n", "    version: v1.0.20\n"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.20" is not the daemon published with installer v1.0.15 (` + rel + `:2 pairs it with v1.0.21)`,
				"pin the daemon to v1.0.21, or pin installer v1.0.14, which was published with v1.0.20"}},
		{name: "daemon of no release", edits: edits{{":v1.0.21@", ":v1.0.22@"}, {"    version: v1.0.21\n", "    version: v1.0.22\n"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.22" is not the daemon published with installer v1.0.15`, "pin the daemon to v1.0.21, or pick the installer published with v1.0.22"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bomPath := writeFile(t, "bom.yaml", tc.edits.apply(t, testBOM))
			b, r, err := LoadAll(bomPath, rel)
			if err == nil {
				t.Fatalf("LoadAll accepted the BOM: %+v %+v", b, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}

	t.Run("published pair", func(t *testing.T) {
		b, r, err := LoadAll(writeFile(t, "bom.yaml", testBOM), rel)
		if err != nil || b == nil || r == nil {
			t.Fatalf("LoadAll = %v, %v, %v", b, r, err)
		}
	})
}

func TestLoadAllReportsBothFiles(t *testing.T) {
	bomPath := writeFile(t, "bom.yaml", edit(t, testBOM, "@"+daemonDigest, ""))
	relPath := writeFile(t, "releases.yaml", edit(t, testReleases, "date: 2025-11-19", "date: 2025-11-9"))
	_, _, err := LoadAll(bomPath, relPath)
	if err == nil {
		t.Fatal("LoadAll accepted two broken files")
	}
	for _, w := range []string{bomPath + ":6: images.daemon.reference", relPath + ":3: pairs[1].date"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
}

func TestLoadReleasesMissingFile(t *testing.T) {
	_, err := LoadReleases(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "bom/releases.yaml") {
		t.Fatalf("LoadReleases error = %v, want a wrapped os.ErrNotExist naming bom/releases.yaml", err)
	}
}

func TestCheckPublishedWithoutLines(t *testing.T) {
	// A BOM built in code has no file positions; the check must still work.
	inst, err := NewImage("example.com/installer:v1.0.99@"+installerDigest, "v1.0.99")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReleases("releases.yaml", []byte(testReleases))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckPublished(&BOM{Images: Images{Installer: inst}}, r)
	if err == nil || !strings.Contains(err.Error(), `images.installer.version "v1.0.99" is not a published installer`) {
		t.Fatalf("CheckPublished = %v", err)
	}
}

// TestManifestsPairIsListedButNotPinnable: a pair known only from Google's
// manifests and source tags loads, and a BOM pinning it is refused.
func TestManifestsPairIsListedButNotPinnable(t *testing.T) {
	rel := writeFile(t, "releases.yaml", edit(t, testReleases, "pairs:\n", "pairs:\n  - {date: 2026-04-30, installer: v1.0.16, daemon: v1.0.22, source: manifests, cuda: \"12.8\"}\n"))
	r, err := LoadReleases(rel)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := r.PairFor("v1.0.16"); !ok || p.Source != SourceManifests || p.CUDA != "12.8" {
		t.Fatalf("manifests pair = %+v, %v", p, ok)
	}
	doc := edit(t, edit(t, edit(t, testBOM, ":v1.0.15@", ":v1.0.16@"), "    version: v1.0.15\n", "    version: v1.0.16\n"), "    version: v1.0.21\n", "    version: v1.0.22\n")
	doc = edit(t, doc, ":v1.0.21@", ":v1.0.22@")
	_, _, err = LoadAll(writeFile(t, "bom.yaml", doc), rel)
	if err == nil || !strings.Contains(err.Error(), "installer v1.0.16 is published only in Google's manifests") || !strings.Contains(err.Error(), "pin a release-notes pair (v1.0.15, v1.0.14, v1.0.9-1)") {
		t.Fatalf("pinning a manifests-only pair: %v", err)
	}
}

// TestNewerPairs: only release-notes pairs dated after the installer's
// count, newest first; a manifests-only pair is not a bump target.
func TestNewerPairs(t *testing.T) {
	r, err := ParseReleases("releases.yaml", []byte(`pairs:
  - {date: 2026-09-01, installer: v1.0.18, daemon: v1.0.24, source: manifests}
  - {date: 2026-06-26, installer: v1.0.17, daemon: v1.0.23, source: release-notes}
  - {date: 2026-04-30, installer: v1.0.16, daemon: v1.0.22, source: release-notes}
  - {date: 2026-01-09, installer: v1.0.15, daemon: v1.0.21, source: release-notes}
ncclConfigs: []
`+gibSection))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.NewerPairs("v1.0.15") {
		got = append(got, p.Installer)
	}
	if strings.Join(got, ",") != "v1.0.17,v1.0.16" {
		t.Errorf("newer than v1.0.15: %v, want v1.0.17,v1.0.16", got)
	}
	if n := r.NewerPairs("v1.0.17"); len(n) != 0 || r.NewerPairs("v9") != nil {
		t.Errorf("newer than the newest or an unknown tag: %v", n)
	}
}
