package extract

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

func TestParseSource(t *testing.T) {
	for in, want := range map[string]SourceSpec{
		"registry":                             {Kind: SourceRegistry, Raw: "registry"},
		"testdata":                             {Kind: SourceTestdata, Raw: "testdata"},
		"oci-layout:out/layout":                {Kind: SourceOCILayout, Arg: "out/layout", Raw: "oci-layout:out/layout"},
		"mirror.example/x@sha256:" + digestHex: {Kind: SourceSubstitute, Arg: "mirror.example/x@sha256:" + digestHex, Raw: "mirror.example/x@sha256:" + digestHex},
	} {
		got, err := ParseSource(in)
		if err != nil || got != want {
			t.Errorf("ParseSource(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "oci-layout:", "mirror.example/x:v1.0.15", "Registry"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
		}
	}
}

const digestHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestRecordedSource(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "zz_generated.go")
	if s, err := RecordedSource(p); err != nil || s != "" {
		t.Fatalf("missing file: %q, %v; want empty and no error", s, err)
	}
	os.WriteFile(p, []byte("package tcpxo\n\nconst (\n\tOther = \"x\"\n\tProvenanceSource = \"oci-layout:l\"\n)\n"), 0o644)
	if s, err := RecordedSource(p); err != nil || s != "oci-layout:l" {
		t.Fatalf("got %q, %v", s, err)
	}
	os.WriteFile(p, []byte("package tcpxo\nconst = broken"), 0o644)
	if _, err := RecordedSource(p); err == nil || !strings.Contains(err.Error(), "--source") {
		t.Fatalf("a hand-broken generated file must fail with a hint, got %v", err)
	}
	os.WriteFile(p, []byte("package tcpxo\n"), 0o644)
	if _, err := RecordedSource(p); err == nil {
		t.Fatal("a generated file without ProvenanceSource must not silently pick a source")
	}
}

// imageWithTop builds the v1.0.15 reconstruction with extra layers on top.
func imageWithTop(t *testing.T, top ...reconstruction.Entry) v1.Image {
	t.Helper()
	tree := filepath.Join(repoRoot(t), TestdataDir, "v1.0.15")
	layers, err := reconstruction.TreeLayers(tree)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := reconstruction.LoadConfig(tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) > 0 {
		l, err := reconstruction.LayerFromEntries(top)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := reconstruction.Image(cfg, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func runOn(t *testing.T, img v1.Image) (*Result, error) {
	t.Helper()
	return runOnWith(t, img, func(*Config) {})
}

func runOnWith(t *testing.T, img v1.Image, edit func(*Config)) (*Result, error) {
	t.Helper()
	root := repoRoot(t)
	b := loadBOM(t, root)
	td := SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}
	cfg := Config{Root: root, BOM: b, LibDir: DefaultLibDir, Source: td, DaemonSource: td}
	edit(&cfg)
	src := imagesource.FromImage(b.Images.Installer.Reference, imagesource.KindTestdata, "test", img)
	return run(context.Background(), cfg, src)
}

func TestReferencedFileMissingFails(t *testing.T) {
	img := imageWithTop(t, reconstruction.Entry{Name: "plugins/.wh.a3plus_tuner_config.textproto", Type: tar.TypeReg})
	_, err := runOn(t, img)
	if err == nil || !strings.Contains(err.Error(), "/plugins/a3plus_tuner_config.textproto") {
		t.Fatalf("a profile pointing at a file the image lacks must fail naming it, got %v", err)
	}
}

// TestImageFactsComeFromTheImage changes each fact in a layer on top of the
// reconstruction and expects extraction to report the image's value, not a
// transcribed one.
func TestImageFactsComeFromTheImage(t *testing.T) {
	res, err := runOn(t, imageWithTop(t, reconstruction.Entry{Name: "etc/ssh/sshd_config", Type: tar.TypeReg, Body: []byte("# edited\nPort 2222\n")}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Facts.SSHDPort != 2222 {
		t.Errorf("sshd port = %d, want 2222 from the top layer's sshd_config", res.Facts.SSHDPort)
	}
	if res.Facts.AllReducePerfMPI != AllReducePerfMPIPath || res.Facts.CUDAVersion != "12.8.0" {
		t.Errorf("all_reduce_perf %q, CUDA %q", res.Facts.AllReducePerfMPI, res.Facts.CUDAVersion)
	}
	if want := []string{"bash", "/fts/entrypoint_rxdm_container.sh"}; !slices.Equal(res.Facts.DaemonEntrypoint, want) || res.Facts.DaemonEntryScriptMode != 0o644 {
		t.Errorf("daemon entrypoint %q mode %o, want %q mode 0644 (the daemon reconstruction's)", res.Facts.DaemonEntrypoint, res.Facts.DaemonEntryScriptMode, want)
	}

	img, err := mutate.Config(imageWithTop(t), v1.Config{Entrypoint: []string{EntryScriptPath}, Env: []string{"CUDA_VERSION=13.2.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = runOn(t, img); err != nil || res.Facts.CUDAVersion != "13.2.0" {
		t.Fatalf("CUDA version from the config: %v, %+v", err, res)
	}
}

// TestMissingImageFactsAreNamedErrors: a fact the image does not carry is an
// extraction error naming it, never a default.
func TestMissingImageFactsAreNamedErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		top  []reconstruction.Entry
		cfg  *v1.Config
		want string
	}{
		{name: "entry script", top: []reconstruction.Entry{{Name: "scripts/.wh.container_entry.sh", Type: tar.TypeReg}}, want: EntryScriptPath},
		{name: "MPI all_reduce_perf", top: []reconstruction.Entry{{Name: "third_party/nccl-tests-mpi/build/.wh.all_reduce_perf", Type: tar.TypeReg}}, want: AllReducePerfMPIPath},
		{name: "sshd_config", top: []reconstruction.Entry{{Name: "etc/ssh/.wh.sshd_config", Type: tar.TypeReg}}, want: SSHDConfigPath},
		{name: "two ports", top: []reconstruction.Entry{{Name: "etc/ssh/sshd_config", Type: tar.TypeReg, Body: []byte("Port 22\nPort 222\n")}}, want: "lines [1 2]"},
		{name: "bad port", top: []reconstruction.Entry{{Name: "etc/ssh/sshd_config", Type: tar.TypeReg, Body: []byte("Port 0x16\n")}}, want: "line 1"},
		{name: "include without port", top: []reconstruction.Entry{{Name: "etc/ssh/sshd_config", Type: tar.TypeReg, Body: []byte("Include /etc/ssh/sshd_config.d/*.conf\n")}}, want: "cannot tell the port"},
		{name: "no CUDA_VERSION", cfg: &v1.Config{Entrypoint: []string{EntryScriptPath}}, want: "CUDA_VERSION"},
		{name: "bad CUDA_VERSION", cfg: &v1.Config{Entrypoint: []string{EntryScriptPath}, Env: []string{"CUDA_VERSION=latest"}}, want: "major version"},
		{name: "entrypoint", cfg: &v1.Config{Entrypoint: []string{"/bin/sh"}, Env: []string{"CUDA_VERSION=12.8.0"}}, want: "entrypoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := imageWithTop(t, tc.top...)
			if tc.cfg != nil {
				var err error
				if img, err = mutate.Config(img, *tc.cfg); err != nil {
					t.Fatal(err)
				}
			}
			_, err := runOn(t, img)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestEntryScript(t *testing.T) {
	for _, tc := range []struct {
		ep   []string
		want string
	}{
		{[]string{"bash", "/fts/entrypoint_rxdm_container.sh"}, "/fts/entrypoint_rxdm_container.sh"},
		{[]string{"/fts/entrypoint_rxdm_container.sh", "--x"}, "/fts/entrypoint_rxdm_container.sh"},
		{[]string{"bash", "relative.sh"}, ""},
		{nil, ""},
	} {
		got, err := EntryScript(tc.ep)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("EntryScript(%q) = %q, %v; want %q", tc.ep, got, err, tc.want)
		}
	}
}

func TestNCCLVersionMustBeReadable(t *testing.T) {
	img := imageWithTop(t,
		reconstruction.Entry{Name: "third_party/nccl-netsupport/build/lib/libnccl.so", Type: tar.TypeSymlink, Linkname: "libnccl-custom.so"},
		reconstruction.Entry{Name: "third_party/nccl-netsupport/build/lib/libnccl-custom.so", Type: tar.TypeReg, Body: []byte("x")})
	_, err := runOn(t, img)
	if err == nil || !strings.Contains(err.Error(), "NCCL version") {
		t.Fatalf("want an error about the unreadable NCCL version, got %v", err)
	}
}

func TestProfileThatFetchesFails(t *testing.T) {
	img := imageWithTop(t, reconstruction.Entry{Name: "scripts/nccl-env-profile.sh", Type: tar.TypeReg,
		Body: []byte("export NCCL_SOCKET_IFNAME=$(curl -s http://metadata.google.internal/nic)\n")})
	_, err := runOn(t, img)
	if err == nil || !strings.Contains(err.Error(), "NCCL_SOCKET_IFNAME") {
		t.Fatalf("want the fetched variable named, got %v", err)
	}
}

func TestEmptyProfileFails(t *testing.T) {
	img := imageWithTop(t, reconstruction.Entry{Name: "scripts/nccl-env-profile-simple.sh", Type: tar.TypeReg, Body: []byte("# nothing\n")})
	if _, err := runOn(t, img); err == nil || !strings.Contains(err.Error(), "no variables") {
		t.Fatalf("an empty profile must not be pinned, got %v", err)
	}
}

// TestHostileGuestConfigsAreNamedErrors puts each hostile checker file of
// internal/guestconfig's corpus in the image and expects extraction to stop
// with an error naming the file and what is wrong.
func TestHostileGuestConfigsAreNamedErrors(t *testing.T) {
	for file, want := range map[string]string{
		"unknown-field.textproto":       "unknown field",
		"unknown-policy.textproto":      "POLICY_",
		"malformed.textproto":           DefaultGuestConfigPath + ":",
		"duplicate.textproto":           "NCCL_",
		"empty-name.textproto":          "name",
		"contradicts-profile.textproto": "nccl-env-profile.sh contradicts " + DefaultGuestConfigPath,
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(repoRoot(t), "internal", "guestconfig", "testdata", "hostile", file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = runOn(t, imageWithTop(t, reconstruction.Entry{Name: strings.TrimPrefix(DefaultGuestConfigPath, "/"), Type: tar.TypeReg, Body: data}))
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), DefaultGuestConfigPath) {
				t.Fatalf("err = %v, want one naming %s and %q", err, DefaultGuestConfigPath, want)
			}
		})
	}
}

func TestGuestRulesComeFromTheImage(t *testing.T) {
	res, err := runOn(t, imageWithTop(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Facts.DefaultGuestRules) == 0 || len(res.Facts.SimpleGuestRules) == 0 {
		t.Fatalf("no guest rules extracted: %+v / %+v", res.Facts.DefaultGuestRules, res.Facts.SimpleGuestRules)
	}
	body := "# proto-message: guest_config_checker.GuestConfigValidatorConfig\nenv_var { check_policy: POLICY_ENFORCED name: \"NCCL_CROSS_NIC\" value: \"0\" }\n"
	res, err = runOn(t, imageWithTop(t, reconstruction.Entry{Name: strings.TrimPrefix(SimpleGuestConfigPath, "/"), Type: tar.TypeReg, Body: []byte(body)}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []guestconfig.Rule{{Name: "NCCL_CROSS_NIC", Value: "0", Policy: "POLICY_ENFORCED"}}; !slices.Equal(res.Facts.SimpleGuestRules, want) {
		t.Errorf("simple rules = %+v, want the top layer's %+v", res.Facts.SimpleGuestRules, want)
	}
}
