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

	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/reconstruction"
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

func TestReferencedPluginFiles(t *testing.T) {
	lib := "/usr/local/nvidia/lib64"
	got := ReferencedPluginFiles(lib, []facts.EnvVar{
		{Name: "LD_LIBRARY_PATH", Value: lib + ":/other"},
		{Name: "NCCL_TUNER_PLUGIN", Value: "libnccl-tuner.so"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: lib + "/a3plus_tuner_config.textproto"},
	}, []facts.EnvVar{
		{Name: "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", Value: lib + "/a3plus_guest_config.textproto"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: lib + "/a3plus_tuner_config.textproto"},
		{Name: "ELSEWHERE", Value: "/opt/x.textproto"},
	})
	want := []string{"a3plus_guest_config.textproto", "a3plus_tuner_config.textproto", "libnccl-tuner.so"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// imageWithTop builds the v1.0.15 reconstruction with extra layers on top.
func imageWithTop(t *testing.T, top ...reconstruction.Entry) v1.Image {
	t.Helper()
	layers, err := reconstruction.TreeLayers(filepath.Join(repoRoot(t), TestdataDir, "v1.0.15"))
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
	img, err := reconstruction.Image(layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func runOn(t *testing.T, img v1.Image) (*Result, error) {
	t.Helper()
	root := repoRoot(t)
	b := loadBOM(t, root)
	cfg := Config{Root: root, BOM: b, LibDir: DefaultLibDir, Source: SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}}
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

func TestEntryScriptIsOptional(t *testing.T) {
	img := imageWithTop(t, reconstruction.Entry{Name: "scripts/.wh.container_entry.sh", Type: tar.TypeReg})
	res, err := runOn(t, img)
	if err != nil {
		t.Fatal(err)
	}
	if res.Facts.EntryScriptPresent {
		t.Fatal("a whited-out entry script reported present")
	}
	res, err = runOn(t, imageWithTop(t))
	if err != nil || !res.Facts.EntryScriptPresent {
		t.Fatalf("entry script of the reconstruction not found: %v", err)
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
