package extract

import (
	"archive/tar"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// gibImage builds the gIB reconstruction with extra layers on top, each
// layer one list of entries.
func gibImage(t *testing.T, tops ...[]reconstruction.Entry) v1.Image {
	t.Helper()
	root := repoRoot(t)
	return treeImage(t, filepath.Join(root, GIBTestdataDir, loadBOM(t, root).Images.GIBInstaller.Version), tops...)
}

// diagnosticImage builds the gIB diagnostic image's reconstruction with
// extra layers on top.
func diagnosticImage(t *testing.T, tops ...[]reconstruction.Entry) v1.Image {
	t.Helper()
	root := repoRoot(t)
	return treeImage(t, filepath.Join(root, GIBDiagnosticTestdataDir, loadBOM(t, root).Images.GIBDiagnostic.Version), tops...)
}

func treeImage(t *testing.T, tree string, tops ...[]reconstruction.Entry) v1.Image {
	t.Helper()
	layers, err := reconstruction.TreeLayers(tree)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := reconstruction.LoadConfig(tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range tops {
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

func runGIBOn(t *testing.T, img v1.Image) (*Result, error) {
	t.Helper()
	return runGIBOnBoth(t, img, diagnosticImage(t))
}

// runGIBOnBoth extracts from the installer image img and the diagnostic
// image diag.
func runGIBOnBoth(t *testing.T, img, diag v1.Image) (*Result, error) {
	t.Helper()
	root := repoRoot(t)
	b := loadBOM(t, root)
	td := SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}
	cfg := Config{Root: root, BOM: b, LibDir: DefaultLibDir, Source: td, GIBSource: td, GIBDiagnosticSource: td}
	return runGIB(context.Background(), cfg,
		imagesource.FromImage(b.Images.GIBInstaller.Reference, imagesource.KindTestdata, "test", img),
		imagesource.FromImage(b.Images.GIBDiagnostic.Reference, imagesource.KindTestdata, "test-diagnostic", diag))
}

func envOfProfile(env []facts.EnvVar, name string) (string, bool) {
	i := slices.IndexFunc(env, func(v facts.EnvVar) bool { return v.Name == name })
	if i < 0 {
		return "", false
	}
	return env[i].Value, true
}

// The script is evaluated once per gIB machine type with that machine's
// GPU: the tuner config follows the machine, everything the script
// exports reaches the facts, and the files the env names were found.
func TestGIBFactsComeFromTheImage(t *testing.T) {
	res, err := runGIBOn(t, gibImage(t))
	if err != nil {
		t.Fatal(err)
	}
	f := res.Facts
	if f.Fabric != "gib" || len(f.MachineProfiles) != 2 {
		t.Fatalf("fabric %q, %d machine profiles", f.Fabric, len(f.MachineProfiles))
	}
	tuners := map[string]string{}
	for _, m := range f.MachineProfiles {
		if v, _ := envOfProfile(m.Env, "NCCL_NET"); v != "gIB" {
			t.Errorf("%s: NCCL_NET=%q", m.MachineType, v)
		}
		tuners[m.MachineType], _ = envOfProfile(m.Env, "NCCL_TUNER_CONFIG_PATH")
	}
	if tuners["a3-ultragpu-8g"] == tuners["a4-highgpu-8g"] || !strings.HasPrefix(tuners["a4-highgpu-8g"], GIBMountPath+"/configs/") {
		t.Errorf("tuner configs per machine type: %v", tuners)
	}
	for _, want := range []string{tuners["a3-ultragpu-8g"], tuners["a4-highgpu-8g"]} {
		if !slices.Contains(f.ConfigFiles, want) {
			t.Errorf("config files %v lack %s", f.ConfigFiles, want)
		}
	}
	if len(f.DefaultGuestRules) == 0 || f.NCCLVersion == "" || len(f.PluginLibraries) == 0 || len(f.InstallerEntrypoint) == 0 {
		t.Errorf("rules %d, NCCL %q, libraries %d, entrypoint %v", len(f.DefaultGuestRules), f.NCCLVersion, len(f.PluginLibraries), f.InstallerEntrypoint)
	}
}

func script(body string) []reconstruction.Entry {
	return []reconstruction.Entry{{Name: strings.TrimPrefix(GIBEnvScript, "/"), Type: tar.TypeReg, Body: []byte(body), Mode: 0o644}}
}

// Bad images are named refusals: nothing is pinned from them.
func TestGIBBadImagesAreRefused(t *testing.T) {
	const probe = "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0)\n"
	for _, tc := range []struct {
		name string
		top  []reconstruction.Entry
		want []string
	}{
		{"script moved elsewhere", []reconstruction.Entry{
			{Name: "opt/gib/scripts/.wh.set_nccl_env.sh", Type: tar.TypeReg},
			{Name: "usr/lib/gib/set_nccl_env.sh", Type: tar.TypeReg, Body: []byte("export NCCL_NET=gIB\n"), Mode: 0o644},
		}, []string{"not laid out as tcpxogen believes", "/usr/lib/gib/set_nccl_env.sh", "/opt/gib/configs/guest_config.txtpb"}},
		{"script runs a command", script("export NCCL_NET=gIB\nexport NCCL_IB_GID_INDEX=$(show_gids | tail -1)\nexport NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=/usr/local/gib/configs/guest_config.txtpb\n"),
			[]string{"NCCL_IB_GID_INDEX", "show_gids"}},
		{"script probes the machine otherwise", script("gpu=$(nvidia-smi -L)\nexport NCCL_NET=gIB\nexport NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/$gpu\n"),
			[]string{"NCCL_TUNER_CONFIG_PATH", "nvidia-smi"}},
		{"script reads a file", script("export NCCL_NET=gIB\nexport NCCL_IB_TC=$(cat /sys/class/net/eth2/tc)\n"),
			[]string{"NCCL_IB_TC"}},
		{"env names a config the image lacks", script(probe + "export NCCL_NET=gIB\nexport NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=/usr/local/gib/configs/guest_config.txtpb\nexport NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a5.txtpb\n"),
			[]string{"the env names /usr/local/gib/configs/tuner_config_a5.txtpb", "which the image lacks"}},
		{"env contradicts an enforced rule", script(probe + "export NCCL_NET=gIB\nexport NCCL_IB_TC=41\nexport NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE=/usr/local/gib/configs/guest_config.txtpb\n"),
			[]string{"contradicts", "NCCL_IB_TC"}},
		{"env without a checker", script(probe + "export NCCL_NET=gIB\n"), []string{"sets no NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"}},
		{"two NCCL versions", []reconstruction.Entry{{Name: "opt/gib/lib64/libnccl.so.2.31.0", Type: tar.TypeReg, Body: []byte("x"), Mode: 0o644}},
			[]string{"2 libnccl.so.X.Y.Z files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runGIBOn(t, gibImage(t, tc.top))
			if err == nil {
				t.Fatalf("extracted %+v", res.Facts)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// Pushed to a real registry and read as a declared substitute, the gIB
// reconstruction gives the offline facts.
func TestGIBFromARegistry(t *testing.T) {
	root := repoRoot(t)
	b := loadBOM(t, root)
	reg := registrytest.Start(t)
	img := gibImage(t)
	tag, err := name.NewTag(reg.Host + "/gpudirect-gib/nccl-plugin-gib:" + b.Images.GIBInstaller.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	td := mustSpec(t, SourceTestdata)
	offline, err := RunGIB(context.Background(), Config{Root: root, BOM: b, Source: td})
	if err != nil {
		t.Fatal(err)
	}
	remoteRes, err := RunGIB(context.Background(), Config{Root: root, BOM: b, Source: td, GIBSource: mustSpec(t, tag.Context().String()+"@"+d.String()), GIBDiagnosticSource: td})
	if err != nil {
		t.Fatal(err)
	}
	got, want := *remoteRes.Facts, *offline.Facts
	if !got.Provenance.Substituted || got.Provenance.Digest != d.String() {
		t.Errorf("provenance %+v: want a substitute read of %s", got.Provenance, d)
	}
	got.Provenance, want.Provenance = facts.Provenance{}, facts.Provenance{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registry facts differ from the offline ones (-offline +registry):\n%s", diff)
	}
}

// The benchmark's facts come from the diagnostic image: the port its
// sshd_config sets, its MPI builds of both collectives Google's test and
// the benchmark run, its entrypoint, and where it was read from.
func TestGIBDiagnosticFactsComeFromTheImage(t *testing.T) {
	res, err := runGIBOn(t, gibImage(t))
	if err != nil {
		t.Fatal(err)
	}
	f := res.Facts
	if f.SSHDPort != 222 {
		t.Errorf("sshd port %d, want 222 (the reconstruction's sshd_config)", f.SSHDPort)
	}
	if f.AllGatherPerfMPI != "/third_party/nccl-tests-mpi/build/all_gather_perf" || f.AllReducePerfMPI != "/third_party/nccl-tests-mpi/build/all_reduce_perf" {
		t.Errorf("perf binaries %q, %q", f.AllGatherPerfMPI, f.AllReducePerfMPI)
	}
	if !slices.Equal(f.DiagnosticEntrypoint, []string{"/scripts/container_entry.sh"}) {
		t.Errorf("diagnostic entrypoint %q", f.DiagnosticEntrypoint)
	}
	b := loadBOM(t, repoRoot(t))
	if p := f.DiagnosticProvenance; p.Pinned != b.Images.GIBDiagnostic.Reference || p.Read != "test-diagnostic" || p.Source != SourceTestdata {
		t.Errorf("diagnostic provenance %+v", p)
	}
	if f.DiagnosticImage != b.Images.GIBDiagnostic.Reference {
		t.Errorf("diagnostic image %q, want the BOM's %q", f.DiagnosticImage, b.Images.GIBDiagnostic.Reference)
	}
}

// A diagnostic image without what the benchmark runs is a named refusal:
// no port, a missing perf binary, a missing sshd_config.
func TestGIBBadDiagnosticImagesAreRefused(t *testing.T) {
	sshd := func(body string) []reconstruction.Entry {
		return []reconstruction.Entry{{Name: "etc/ssh/sshd_config", Type: tar.TypeReg, Body: []byte(body), Mode: 0o644}}
	}
	for _, tc := range []struct {
		name string
		top  []reconstruction.Entry
		want []string
	}{
		{"sshd_config sets no port", sshd("PermitRootLogin prohibit-password\n"),
			[]string{"gIB diagnostic image v1.1.2", "/etc/ssh/sshd_config sets no Port", "222"}},
		{"sshd_config sets two ports", sshd("Port 222\nPort 2222\n"), []string{"/etc/ssh/sshd_config sets Port on lines [1 2]"}},
		{"sshd_config port out of range", sshd("Port 70000\n"), []string{"/etc/ssh/sshd_config line 1", "70000"}},
		{"no sshd_config", []reconstruction.Entry{{Name: "etc/ssh/.wh.sshd_config", Type: tar.TypeReg}},
			[]string{"lacks /etc/ssh/sshd_config (the port"}},
		{"no all_gather_perf", []reconstruction.Entry{{Name: "third_party/nccl-tests-mpi/build/.wh.all_gather_perf", Type: tar.TypeReg}},
			[]string{"lacks /third_party/nccl-tests-mpi/build/all_gather_perf (the MPI build of all_gather_perf", "the image has /etc/ssh/sshd_config, /third_party/nccl-tests-mpi/build/all_reduce_perf,"}},
		{"perf binaries moved", []reconstruction.Entry{
			{Name: "third_party/nccl-tests-mpi/.wh..wh..opq", Type: tar.TypeReg},
			{Name: "usr/local/bin/all_gather_perf_mpi", Type: tar.TypeReg, Body: []byte("x"), Mode: 0o755},
		}, []string{"all_gather_perf (the MPI build", "all_reduce_perf (the MPI build", "the image has", "/usr/local/bin/all_gather_perf_mpi", "pipeline/extract/gib.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runGIBOnBoth(t, gibImage(t), diagnosticImage(t, tc.top))
			if err == nil {
				t.Fatalf("extracted %+v", res.Facts)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// NCCL core in the payload's lib64 is not read for its dynamic section:
// a release's libnccl.so is far larger than a plugin library may be read
// at, and only the plugins' DT_NEEDED decide the worker's CUDA.
func TestGIBNCCLCoreIsNotReadAsAPlugin(t *testing.T) {
	big := make([]byte, 64<<10)
	img := gibImage(t, []reconstruction.Entry{{Name: "opt/gib/lib64/libnccl.so.2.30.4", Type: tar.TypeReg, Body: big, Mode: 0o644}})
	root := repoRoot(t)
	b := loadBOM(t, root)
	td := SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}
	cfg := Config{Root: root, BOM: b, LibDir: DefaultLibDir, Source: td, GIBSource: td, GIBDiagnosticSource: td, MaxLibraryBytes: 32 << 10}
	diag := imagesource.FromImage(b.Images.GIBDiagnostic.Reference, imagesource.KindTestdata, "test-diagnostic", diagnosticImage(t))
	res, err := runGIB(context.Background(), cfg, imagesource.FromImage(b.Images.GIBInstaller.Reference, imagesource.KindTestdata, "test", img), diag)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range res.Facts.PluginLibraries {
		names = append(names, l.Name)
	}
	if slices.ContainsFunc(names, isNCCLCore) || !slices.Contains(names, "libnccl-net.so") || res.Facts.NCCLVersion != "2.30.4" {
		t.Errorf("libraries %v, NCCL %q: want the plugins only, and the version still read from the core's name", names, res.Facts.NCCLVersion)
	}
	// A plugin library over the bound is still refused.
	img = gibImage(t, []reconstruction.Entry{{Name: "opt/gib/lib64/libnccl-net.so", Type: tar.TypeReg, Body: big, Mode: 0o644}})
	if _, err := runGIB(context.Background(), cfg, imagesource.FromImage(b.Images.GIBInstaller.Reference, imagesource.KindTestdata, "test", img), diag); err == nil {
		t.Error("an oversized plugin library was read")
	}
}
