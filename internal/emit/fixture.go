package emit

import (
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// FixtureGolden is the emitter's own golden, repo-relative: the code it
// emits for FixtureFacts. `go generate` renders it with every other golden
// (internal/goldens), so a change of the emitter refreshes it and the
// coupling check holds it, instead of leaving a golden only -update writes.
const FixtureGolden = "internal/emit/testdata/tcpxo.golden"

// FixtureFacts are synthetic facts that exercise every field the emitter
// writes, quoting included; no image carries them.
func FixtureFacts() *facts.Facts {
	return &facts.Facts{
		PluginVersion:         "v1.0.15",
		InstallerImage:        "example.com/installer:v1.0.15@sha256:" + strings.Repeat("a", 64),
		DaemonImage:           "example.com/daemon:v1.0.21@sha256:" + strings.Repeat("b", 64),
		DaemonVersion:         "v1.0.21",
		NCCLVersion:           "2.28.7",
		LibDir:                "/usr/local/nvidia/lib64",
		DefaultProfile:        []facts.EnvVar{{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"}, {Name: "NCCL_PROTO", Value: "Simple,LL128"}},
		SimpleProfile:         []facts.EnvVar{{Name: "NCCL_PROTO", Value: "Simple"}, {Name: "NCCL_WEIRD", Value: "a \"quoted\"\nvalue`"}},
		PluginFiles:           []string{"a3plus_tuner_config.textproto", "libnccl-tuner.so"},
		PluginLibraries:       []facts.Library{{Name: "libnccl-net.so", Needed: []string{"libcudart.so.12", "libc.so.6"}}, {Name: "libnccl-tuner.so", Needed: []string{}}},
		Refused:               []string{"nccl-env-profile.sh: ls (line 9)"},
		Normalized:            []string{"LD_LIBRARY_PATH"},
		CUDAVersion:           "12.8.0",
		InstallerEntrypoint:   []string{"/scripts/container_entry.sh"},
		Scripts:               []string{"/scripts/container_entry.sh"},
		SSHDPort:              222,
		AllReducePerfMPI:      "/third_party/nccl-tests-mpi/build/all_reduce_perf",
		DaemonEntrypoint:      []string{"bash", "/fts/entrypoint_rxdm_container.sh"},
		DaemonEntryScript:     "/fts/entrypoint_rxdm_container.sh",
		DaemonEntryScriptMode: 0o644,
		DefaultGuestRules:     []guestconfig.Rule{{Name: "NCCL_PROTO", Value: "Simple,LL128", Policy: "POLICY_ENFORCED"}, {Name: "NCCL_TUNER_PLUGIN", Value: "x \"q\"", Policy: "POLICY_RECOMMENDED"}},
		SimpleGuestRules:      []guestconfig.Rule{{Name: "NCCL_ALGO", Value: "Ring,Tree", Policy: "POLICY_ENFORCED"}},
		DaemonProvenance: facts.ImageProvenance{Pinned: "example.com/daemon:v1.0.21@sha256:" + strings.Repeat("b", 64), Source: "testdata",
			Kind: "testdata", Read: "testdata/daemon/v1.0.21", Digest: "sha256:" + strings.Repeat("f", 64), Substituted: true},
		Provenance: facts.Provenance{
			Pinned: "example.com/installer:v1.0.15@sha256:" + strings.Repeat("a", 64), Source: "testdata", Kind: "testdata",
			Read: "testdata/installer/v1.0.15", Digest: "sha256:" + strings.Repeat("c", 64), Substituted: true,
			DefaultProfileSHA256: strings.Repeat("d", 64), SimpleProfileSHA256: strings.Repeat("e", 64),
		},
	}
}
