package bom

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// The release notes are Google's (container-engine-accelerators
// gpudirect-tcpxo/README.md); they are never copied into this tree. The test
// reads them from $TCPXOGEN_REFERENCE_DIR/google/gpudirect-tcpxo-README.md,
// or from the first shared/reference/ above the checkout, and holds every
// ncclConfigs list of releases.yaml to its section entry for entry.
const notesFile = "google/gpudirect-tcpxo-README.md"

func findNotes(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("TCPXOGEN_REFERENCE_DIR"); dir != "" {
		return filepath.Join(dir, notesFile)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "shared", "reference", notesFile)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if filepath.Dir(dir) == dir {
			t.Skipf("Google's release notes are not here: set TCPXOGEN_REFERENCE_DIR to a folder holding %s", notesFile)
		}
	}
}

var (
	// A section of the notes starts at "## <date>"; its installer is the
	// nccl-plugin-gpudirecttcpx-dev tag it names.
	sectionRE   = regexp.MustCompile(`(?m)^## `)
	installerRE = regexp.MustCompile(`nccl-plugin-gpudirecttcpx-dev:(\S+)`)
	configsRE   = regexp.MustCompile("(?s)#### NCCL configs:\\s*\n```\n(.*?)```")
	// One entry is one double-quoted string with backslash escapes; commas
	// between entries are optional, because the notes miss some.
	entryRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// publishedLists reads every section's NCCL configs list, keyed by installer tag.
func publishedLists(notes string) (map[string][]facts.EnvVar, error) {
	out := map[string][]facts.EnvVar{}
	for _, sec := range sectionRE.Split(notes, -1) {
		inst, body := installerRE.FindStringSubmatch(sec), configsRE.FindStringSubmatch(sec)
		if inst == nil || body == nil {
			continue
		}
		var env []facts.EnvVar
		for _, line := range strings.Split(body[1], "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue // the notes' own comments
			}
			for _, m := range entryRE.FindAllStringSubmatch(line, -1) {
				var entry string
				if err := json.Unmarshal([]byte(`"`+m[1]+`"`), &entry); err != nil {
					return nil, fmt.Errorf("%s: entry %s: %w", inst[1], m[0], err)
				}
				name, value, ok := strings.Cut(entry, "=")
				if !ok {
					return nil, fmt.Errorf("%s: entry %s is not NAME=VALUE", inst[1], m[0])
				}
				// A shell-quoted value (LD_LIBRARY_PATH="...") is stored unwrapped.
				if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
					value = value[1 : len(value)-1]
				}
				env = append(env, facts.EnvVar{Name: name, Value: value})
			}
		}
		out[inst[1]] = env
	}
	return out, nil
}

// TestPublishedListParser holds the parser to a section written for this
// test in the notes' shape: a missing comma, a blank line, a comment, an
// escaped shell-quoted value.
func TestPublishedListParser(t *testing.T) {
	const notes = "## Jan 1, 2030\n#### NCCL plugin installer image:\n```\nexample/nccl-plugin-gpudirecttcpx-dev:v9.9.9\n```\n" +
		"#### NCCL configs:\n```\n\"A=\\\"${A}:/x\\\"\",\n\n# a comment naming \"B=2\"\n\"C=1\"\n\"D=eth1,eth2\"\n```\n## Jan 2, 2030\nno list\n"
	got, err := publishedLists(notes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]facts.EnvVar{"v9.9.9": {{Name: "A", Value: "${A}:/x"}, {Name: "C", Value: "1"}, {Name: "D", Value: "eth1,eth2"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parsed lists (-want +got):\n%s", d)
	}
}

func TestNCCLConfigsAsPublished(t *testing.T) {
	path := findNotes(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := publishedLists(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	_, r := loadReal(t)
	if len(r.NCCLConfigs) == 0 {
		t.Fatal("releases.yaml has no ncclConfigs")
	}
	for _, cfg := range r.NCCLConfigs {
		want, ok := lists[cfg.Installer]
		if !ok {
			t.Errorf("%s: %s publishes no NCCL configs list for installer %s", ReleasesRepoPath, path, cfg.Installer)
			continue
		}
		if d := cmp.Diff(want, cfg.Env); d != "" {
			t.Errorf("%s: the %s list is not the one %s publishes (-published +releases.yaml):\n%s", ReleasesRepoPath, cfg.Installer, path, d)
		}
		if cfg.LibDir != "" && !strings.Contains(string(data), cfg.LibDir) {
			t.Errorf("%s: libDir %s of %s appears nowhere in the notes", ReleasesRepoPath, cfg.LibDir, cfg.Installer)
		}
	}
}
