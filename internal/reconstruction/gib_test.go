package reconstruction_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"mvdan.cc/sh/v3/syntax"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

// The gIB reconstructions: Google's NCCL/gIB installer and diagnostic
// images v1.1.2, whose layout no public source gives. The layout these
// tests hold the trees to is the one the trees' READMEs fix as our belief,
// so that extraction can be written against it.
var (
	gibInstaller  = filepath.Join("..", "..", "testdata", "gib-installer", "v1.1.2")
	gibDiagnostic = filepath.Join("..", "..", "testdata", "gib-diagnostic", "v1.1.2")
)

// gibPath is the image config's PATH: Alpine's (and Ubuntu's) default.
const gibPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// entry is what a layer holds at one path: a regular file with its mode,
// or a symlink with its target. Directories are not listed.
type entry struct {
	mode int64
	link string
}

var (
	exe  = entry{mode: 0o755}
	data = entry{mode: 0o644}
)

func link(target string) entry { return entry{mode: 0o777, link: target} }

// believedNeeded is the DT_NEEDED list needed.json declares for every
// library of the gIB payload: the C/C++ runtime only, no libcudart, no
// verbs libraries.
var believedNeeded = []string{"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"}

// Each gIB image is built twice from the committed tree and once from a
// copy with other mtimes, permissions and location: one digest.
func TestGIBTreesBuildReproducibly(t *testing.T) {
	for _, tree := range []string{gibInstaller, gibDiagnostic} {
		t.Run(filepath.Base(filepath.Dir(tree)), func(t *testing.T) {
			first := digest(t, tree)
			if again := digest(t, tree); again != first {
				t.Fatalf("two builds of %s: %s and %s", tree, first, again)
			}
			copied := filepath.Join(t.TempDir(), "elsewhere", filepath.Base(tree))
			copyTree(t, tree, copied)
			if other := digest(t, copied); other != first {
				t.Fatalf("%s built %s, its copy (other mtimes, modes, place) %s", tree, first, other)
			}
		})
	}
}

// The installer's layers hold exactly the layout its README fixes, with
// the modes and symlinks given; the config is the Alpine family's.
func TestGIBInstallerLayout(t *testing.T) {
	img := build(t, gibInstaller)
	checkConfig(t, img)
	lib := "opt/gib/lib64/"
	checkLayers(t, gibInstaller, img, []layerWant{
		{"00-base", map[string]entry{"etc/os-release": data, "etc/alpine-release": data}},
		{"10-payload", map[string]entry{
			lib + "libnccl.so.2.30.4":       data,
			lib + "libnccl.so.2":            link("libnccl.so.2.30.4"),
			lib + "libnccl.so":              link("libnccl.so.2"),
			lib + "libnccl-net.so":          data,
			lib + "libnccl-net_internal.so": data,
			lib + "libnccl-tuner.so":        data,
			// Sourced, as TCPXO's profiles are: not executable.
			"opt/gib/scripts/set_nccl_env.sh":        data,
			"opt/gib/scripts/show_gids.sh":           exe,
			"opt/gib/scripts/run_nccl_tests.sh":      exe,
			"opt/gib/configs/guest_config.txtpb":     data,
			"opt/gib/configs/tuner_config_a3u.txtpb": data,
			"opt/gib/configs/tuner_config_a4.txtpb":  data,
		}},
		{"20-scripts", map[string]entry{"scripts/container_entry.sh": exe}},
	})

	osRelease := read(t, gibInstaller, "etc/os-release")
	for _, line := range []string{"ID=alpine", "VERSION_ID=3.21.0"} {
		if !slices.Contains(strings.Split(osRelease, "\n"), line) {
			t.Errorf("etc/os-release has no line %q", line)
		}
	}
	if first, _, _ := strings.Cut(read(t, gibInstaller, "etc/alpine-release"), "\n"); first != "3.21.0" {
		t.Errorf("etc/alpine-release starts %q, want the release 3.21.0 on its first line", first)
	}

	// The libraries are the ELF shared objects needed.json declares,
	// named after their files, none needing the CUDA runtime.
	for _, name := range []string{"libnccl.so.2.30.4", "libnccl-net.so", "libnccl-net_internal.so", "libnccl-tuner.so"} {
		f, err := elf.NewFile(bytes.NewReader([]byte(read(t, gibInstaller, lib+name))))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		needed, err := f.DynString(elf.DT_NEEDED)
		if err != nil || !slices.Equal(needed, believedNeeded) {
			t.Errorf("%s: DT_NEEDED %v (%v), want %v", name, needed, err, believedNeeded)
		}
		if soname, err := f.DynString(elf.DT_SONAME); err != nil || !slices.Equal(soname, []string{name}) {
			t.Errorf("%s: DT_SONAME %v (%v)", name, soname, err)
		}
	}
}

// The diagnostic image holds the MPI build of nccl-tests, sshd on port 222
// and the entry scripts, with the installer's entrypoint and env.
func TestGIBDiagnosticLayout(t *testing.T) {
	img := build(t, gibDiagnostic)
	checkConfig(t, img)
	tests := map[string]entry{}
	for _, name := range []string{"all_gather_perf", "all_reduce_perf", "alltoall_perf", "reduce_scatter_perf", "sendrecv_perf"} {
		tests["third_party/nccl-tests-mpi/build/"+name] = exe
	}
	checkLayers(t, gibDiagnostic, img, []layerWant{
		{"00-base", map[string]entry{"etc/os-release": data}},
		{"10-packages", map[string]entry{"usr/sbin/sshd": exe, "usr/bin/mpirun": exe}},
		{"20-nccl-tests-mpi", tests},
		{"30-sshd", map[string]entry{"etc/ssh/sshd_config": data, "root/.ssh/authorized_keys": data}},
		{"40-scripts", map[string]entry{"scripts/container_entry.sh": exe, "scripts/init_ssh.sh": exe}},
	})
	osRelease := strings.Split(read(t, gibDiagnostic, "etc/os-release"), "\n")
	if !slices.Contains(osRelease, "ID=ubuntu") || !slices.Contains(osRelease, `VERSION_ID="22.04"`) {
		t.Errorf("etc/os-release is not the Ubuntu 22.04 stand-in:\n%s", strings.Join(osRelease, "\n"))
	}
	var ports []string
	for _, line := range strings.Split(read(t, gibDiagnostic, "etc/ssh/sshd_config"), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Port" {
			ports = append(ports, f[1])
		}
	}
	if !slices.Equal(ports, []string{"222"}) {
		t.Errorf("sshd_config sets Port %v, want 222 alone", ports)
	}
}

// No public source exists for either image: every file of both trees, the
// README and the image description say the content is tcpxogen's belief
// that only the published image can confirm. The placeholder libraries,
// which hold no text, are covered by needed.json's about.
func TestGIBFilesSayBelief(t *testing.T) {
	for _, tree := range []string{gibInstaller, gibDiagnostic} {
		checked := 0
		err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.HasPrefix(body, []byte(elf.ELFMAG)) {
				return nil
			}
			checked++
			// Comment markers and line breaks do not split the sentence.
			text := strings.Join(strings.Fields(strings.ReplaceAll(string(body), "#", " ")), " ")
			for _, say := range []string{"tcpxogen", "belief", "published image"} {
				if !strings.Contains(text, say) {
					t.Errorf("%s does not say %q: every file of a gIB reconstruction says it is tcpxogen's belief that only the published image can confirm", p, say)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if checked < 5 {
			t.Fatalf("%s: checked %d files; the walk is broken", tree, checked)
		}
	}
	n, ok, err := reconstruction.LoadNeeded(gibInstaller)
	if err != nil || !ok {
		t.Fatalf("%s: %v (has one: %v)", reconstruction.NeededFile, err, ok)
	}
	for _, say := range []string{"belief", "published image", "libcudart"} {
		if !strings.Contains(n.About, say) {
			t.Errorf("%s's about does not say %q", reconstruction.NeededFile, say)
		}
	}
	if _, ok, err := reconstruction.LoadNeeded(gibDiagnostic); err != nil || ok {
		t.Errorf("the diagnostic tree declares libraries (%v, %v); it holds none", ok, err)
	}
}

// export is one variable set_nccl_env.sh exports: its name and its value
// as written.
type export struct{ Name, Value string }

// wantExports are the variables set_nccl_env.sh exports, in order: the
// values the facts list from Google's 2024 cluster-toolkit A3 Ultra script.
var wantExports = []export{
	{"NCCL_NET", "gIB"},
	{"NCCL_CROSS_NIC", "0"},
	{"NCCL_NET_GDR_LEVEL", "PIX"},
	{"NCCL_P2P_NET_CHUNKSIZE", "131072"},
	{"NCCL_P2P_PCI_CHUNKSIZE", "131072"},
	{"NCCL_P2P_NVL_CHUNKSIZE", "524288"},
	{"NCCL_NVLS_CHUNKSIZE", "524288"},
	{"NCCL_IB_GID_INDEX", "3"},
	{"NCCL_IB_ADAPTIVE_ROUTING", "1"},
	{"NCCL_IB_QPS_PER_CONNECTION", "4"},
	{"NCCL_IB_TC", "52"},
	{"NCCL_IB_FIFO_TC", "84"},
	{"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", "/usr/local/gib/configs/guest_config.txtpb"},
	{"NCCL_TUNER_CONFIG_PATH", "/usr/local/gib/configs/${tuner_config}"},
}

// set_nccl_env.sh parses as bash (mvdan.cc/sh, the profile sandbox's
// parser) and, read as syntax, is what the sandbox can run: one machine
// probe, exactly as the layout fixes it, a case on its result choosing the
// tuner file, no other command than echo and return, no pipe, process
// substitution, sourcing or LD_LIBRARY_PATH; then the exports in order.
// Evaluating it is extraction's business, not this test's.
func TestGIBEnvScriptParses(t *testing.T) {
	f := parseEnvScript(t)
	var probes, commands []string
	branches := map[string]string{} // case pattern to the tuner file it selects, or its return
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				commands = append(commands, n.Args[0].Lit())
				if n.Args[0].Lit() == "nvidia-smi" {
					probes = append(probes, printed(t, n))
				}
			}
			for _, a := range n.Assigns {
				if a.Name.Value == "LD_LIBRARY_PATH" {
					t.Errorf("line %d sets LD_LIBRARY_PATH; the pod sets it (Google's manifests)", a.Pos().Line())
				}
			}
		case *syntax.ProcSubst:
			t.Errorf("line %d: process substitution", n.Pos().Line())
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				t.Errorf("line %d: a pipe", n.Pos().Line())
			}
		case *syntax.CaseClause:
			for _, item := range n.Items {
				var does []string
				syntax.Walk(&syntax.File{Stmts: item.Stmts}, func(m syntax.Node) bool {
					if c, ok := m.(*syntax.CallExpr); ok {
						for _, a := range c.Assigns {
							if a.Name.Value == "tuner_config" {
								does = append(does, a.Value.Lit())
							}
						}
						if len(c.Args) > 0 && c.Args[0].Lit() == "return" {
							does = append(does, printed(t, c))
						}
					}
					return true
				})
				for _, pat := range item.Patterns {
					branches[pat.Lit()] = strings.Join(does, "; ")
				}
			}
		}
		return true
	})
	if want := []string{"nvidia-smi --query-gpu=name --format=csv,noheader --id=0"}; !slices.Equal(probes, want) {
		t.Errorf("machine probes %q, want exactly %q", probes, want)
	}
	for _, c := range commands {
		if !slices.Contains([]string{"nvidia-smi", "echo", "return"}, c) {
			t.Errorf("runs %q; the sandbox allows the machine probe, echo and return", c)
		}
	}
	if want := map[string]string{"*H200*": "tuner_config_a3u.txtpb", "*B200*": "tuner_config_a4.txtpb", "*": "return 1"}; !maps.Equal(branches, want) {
		t.Errorf("the case on the GPU name does %q, want %q", branches, want)
	}
	if diff := cmp.Diff(wantExports, exports(t, f)); diff != "" {
		t.Errorf("exports (-want +got):\n%s", diff)
	}
}

// The checker's rules agree with the script: each rule's variable is
// exported with the rule's value, the enforced/recommended split is the
// one the README records, and every file the env names under
// /usr/local/gib (the host copy of the payload) is in the payload.
func TestGIBGuestConfigAgreesWithScript(t *testing.T) {
	exported := map[string]string{}
	for _, e := range exports(t, parseEnvScript(t)) {
		exported[e.Name] = e.Value
	}
	p, err := reconstruction.LayerFile(gibInstaller, "opt/gib/configs/guest_config.txtpb")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := guestconfig.Parse(p, body)
	if err != nil {
		t.Fatal(err)
	}
	byPolicy := map[guestconfig.Policy][]string{}
	for _, r := range rules {
		byPolicy[r.Policy] = append(byPolicy[r.Policy], r.Name)
		if got, ok := exported[r.Name]; !ok || got != r.Value {
			t.Errorf("%s:%d: %s %q; set_nccl_env.sh exports %q (exported: %v)", p, r.Line, r.Name, r.Value, got, ok)
		}
	}
	want := map[guestconfig.Policy][]string{
		guestconfig.Enforced: {"NCCL_NET", "NCCL_CROSS_NIC", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_FIFO_TC"},
		guestconfig.Recommended: {"NCCL_NET_GDR_LEVEL", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE",
			"NCCL_P2P_NVL_CHUNKSIZE", "NCCL_NVLS_CHUNKSIZE", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_QPS_PER_CONNECTION"},
	}
	if diff := cmp.Diff(want, byPolicy); diff != "" {
		t.Errorf("rules by policy (-want +got):\n%s", diff)
	}

	named := []string{exported["NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"]}
	for _, tuner := range []string{"tuner_config_a3u.txtpb", "tuner_config_a4.txtpb"} {
		named = append(named, strings.ReplaceAll(exported["NCCL_TUNER_CONFIG_PATH"], "${tuner_config}", tuner))
	}
	for _, file := range named {
		rel, ok := strings.CutPrefix(file, "/usr/local/gib/")
		if !ok {
			t.Errorf("the env names %s, outside /usr/local/gib", file)
			continue
		}
		if _, err := reconstruction.LayerFile(gibInstaller, "opt/gib/"+rel); err != nil {
			t.Errorf("the env names %s, which the payload lacks: %v", file, err)
		}
	}
}

func parseEnvScript(t *testing.T) *syntax.File {
	t.Helper()
	p, err := reconstruction.LayerFile(gibInstaller, "opt/gib/scripts/set_nccl_env.sh")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(src), p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// exports lists the script's export statements' assignments in order.
func exports(t *testing.T, f *syntax.File) []export {
	t.Helper()
	var out []export
	syntax.Walk(f, func(n syntax.Node) bool {
		d, ok := n.(*syntax.DeclClause)
		if !ok || d.Variant.Value != "export" {
			return true
		}
		for _, a := range d.Args {
			if a.Naked || a.Value == nil {
				t.Errorf("line %d: export without a value", a.Pos().Line())
				continue
			}
			out = append(out, export{a.Name.Value, printed(t, a.Value)})
		}
		return true
	})
	return out
}

// printed is the node as the shell printer writes it.
func printed(t *testing.T, n syntax.Node) string {
	t.Helper()
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// layerWant is one layer of a tree: its directory name and every file and
// symlink it holds, by path inside the image.
type layerWant struct {
	name  string
	files map[string]entry
}

// checkLayers holds the tree's layers, in order, to want: each layer is
// the declared directory and holds exactly the files and symlinks listed.
func checkLayers(t *testing.T, tree string, img v1.Image, want []layerWant) {
	t.Helper()
	dirs, err := reconstruction.LayerDirs(tree)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(want) || len(layers) != len(want) {
		t.Fatalf("%s: %d layer directories, %d image layers; want %d", tree, len(dirs), len(layers), len(want))
	}
	for i, w := range want {
		if got := filepath.Base(dirs[i]); got != w.name {
			t.Errorf("layer %d is %s, want %s", i, got, w.name)
		}
		if diff := cmp.Diff(w.files, layerEntries(t, layers[i]), cmp.AllowUnexported(entry{})); diff != "" {
			t.Errorf("layer %d (%s) (-want +got):\n%s", i, w.name, diff)
		}
	}
}

// layerEntries lists a layer's files and symlinks by path.
func layerEntries(t *testing.T, l v1.Layer) map[string]entry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			out[h.Name] = entry{mode: h.Mode}
		case tar.TypeSymlink:
			out[h.Name] = entry{mode: h.Mode, link: h.Linkname}
		case tar.TypeDir:
		default:
			t.Errorf("%s: unexpected entry type %q", h.Name, h.Typeflag)
		}
	}
}

// checkConfig holds an image config to the gIB family's: the entrypoint
// Google's manifests run, Alpine's PATH alone (no CUDA_VERSION), and a
// description that says the image is our belief.
func checkConfig(t *testing.T, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/scripts/container_entry.sh"}; !slices.Equal(cfg.Config.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", cfg.Config.Entrypoint, want)
	}
	if want := []string{gibPath}; !slices.Equal(cfg.Config.Env, want) {
		t.Errorf("env %q, want %q", cfg.Config.Env, want)
	}
	desc := cfg.Config.Labels["org.opencontainers.image.description"]
	for _, say := range []string{"reconstruction", "belief", "published image", "no CUDA_VERSION"} {
		if !strings.Contains(desc, say) {
			t.Errorf("the description does not say %q: %s", say, desc)
		}
	}
}

func build(t *testing.T, tree string) v1.Image {
	t.Helper()
	img, err := reconstruction.Build(tree)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, tree string) v1.Hash {
	t.Helper()
	d, err := build(t, tree).Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// read is the content of the file at name in the tree's merged image view.
func read(t *testing.T, tree, name string) string {
	t.Helper()
	p, err := reconstruction.LayerFile(tree, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyTree copies the tree at src to dst as another checkout might hold
// it: symlinks kept, files owner-only (executables keep an exec bit), and
// mtimes now.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	now := time.Now()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if info.Mode()&0o111 != 0 {
			mode = 0o700
		}
		if err := os.WriteFile(to, body, mode); err != nil {
			return err
		}
		return os.Chtimes(to, now, now)
	})
	if err != nil {
		t.Fatal(err)
	}
}
