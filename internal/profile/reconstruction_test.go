package profile

// Tests of the reconstructed installer trees under testdata/installer: this
// package evaluates their profiles, so it checks that they compute what the
// facts record, and that real bash computes the same.

import (
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"

	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var reconstructedVersions = []string{"v1.0.14", "v1.0.15"}

// defaultProfile is what the facts record nccl-env-profile.sh v1.0.15
// exporting, in order, for a given NCCL_LIB_DIR (after normalization).
func defaultProfile(libDir string) []Var {
	return vars(
		"LD_LIBRARY_PATH="+libDir,
		"NCCL_FASTRAK_IFNAME=eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
		"NCCL_FASTRAK_CTRL_DEV=eth0",
		"NCCL_SOCKET_IFNAME=eth0",
		"NCCL_CROSS_NIC=0",
		"NCCL_PROTO=Simple,LL128",
		"NCCL_MIN_NCHANNELS=4",
		"NCCL_NVLSTREE_MAX_CHUNKSIZE=131072",
		"NCCL_P2P_NET_CHUNKSIZE=524288",
		"NCCL_P2P_PCI_CHUNKSIZE=524288",
		"NCCL_P2P_NVL_CHUNKSIZE=1048576",
		"NCCL_FASTRAK_NUM_FLOWS=2",
		"NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL=0",
		"NCCL_BUFFSIZE=8388608",
		"NCCL_FASTRAK_USE_SNAP=1",
		"NCCL_FASTRAK_USE_LLCM=1",
		"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
		"NCCL_NET_GDR_LEVEL=PIX",
		"NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING=0",
		"NCCL_TUNER_PLUGIN=libnccl-tuner.so",
		"NCCL_TUNER_CONFIG_PATH="+libDir+"/a3plus_tuner_config.textproto",
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE="+libDir+"/a3plus_guest_config.textproto",
		"NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS=600000",
		"NCCL_DEBUG=WARN",
		"NCCL_DEBUG_SUBSYS=INIT,NET,ENV,COLL,GRAPH",
	)
}

// simpleProfile is the default profile with the documented differences:
// NCCL_PROTO=Simple followed by NCCL_ALGO and NCCL_NVLS_ENABLE, no
// NCCL_NVLSTREE_MAX_CHUNKSIZE, and the _simple configs.
func simpleProfile(libDir string) []Var {
	var out []Var
	for _, v := range defaultProfile(libDir) {
		switch v.Name {
		case "NCCL_PROTO":
			out = append(out, vars("NCCL_PROTO=Simple", "NCCL_ALGO=Ring,Tree", "NCCL_NVLS_ENABLE=0")...)
		case "NCCL_NVLSTREE_MAX_CHUNKSIZE":
		case "NCCL_TUNER_CONFIG_PATH", "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE":
			v.Value = strings.Replace(v.Value, "_config.textproto", "_config_simple.textproto", 1)
			out = append(out, v)
		default:
			out = append(out, v)
		}
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// scriptPath is where the release's script lives on disk: in its own
// scripts layer or the one it shares with the release that introduced it.
func scriptPath(t *testing.T, version, name string) string {
	t.Helper()
	p, err := reconstruction.LayerFile(filepath.Join(repoRoot(t), "testdata", "installer", version), "scripts/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// layerOwner is the release whose tree holds the layer directory ld: a
// placeholder names that release, which the sharing releases reference.
func layerOwner(ld string) string { return filepath.Base(filepath.Dir(filepath.Dir(ld))) }

func evaluateFile(t *testing.T, path string, opts Options) *Result {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(t.Context(), filepath.Base(path), src, opts)
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", path, err)
	}
	return res
}

func TestReconstructedProfiles(t *testing.T) {
	for _, version := range reconstructedVersions {
		for _, tc := range []struct {
			script string
			want   func(string) []Var
		}{
			{"nccl-env-profile.sh", defaultProfile},
			{"nccl-env-profile-simple.sh", simpleProfile},
		} {
			t.Run(version+"/"+tc.script, func(t *testing.T) {
				for _, libDir := range []string{"", "/opt/tcpxo/lib"} {
					res := evaluateFile(t, scriptPath(t, version, tc.script), Options{LibDir: libDir})
					want := tc.want(libDir)
					if libDir == "" {
						want = tc.want(DefaultLibDir)
					}
					assertVars(t, res, want)
					if !reflect.DeepEqual(res.Normalized, []string{"LD_LIBRARY_PATH"}) {
						t.Errorf("Normalized = %v, want [LD_LIBRARY_PATH]: the profile leaves a trailing ':'", res.Normalized)
					}
					// Discovery was attempted and refused; the defaults stood.
					if len(res.Refused) == 0 || res.Refused[0].Command != "ls" || res.Refused[0].Line == 0 {
						t.Errorf("Refused = %+v, want the NIC discovery's ls with its line", res.Refused)
					}
				}
			})
		}
	}
	if n := len(defaultProfile("/x")); n != 25 {
		t.Fatalf("the facts list 25 variables, the test has %d", n)
	}
}

// TestReconstructedProfilesMatchBash sources each profile in real bash, with
// a clean environment, and compares what it exports with the evaluator's
// result. Only the normalization of LD_LIBRARY_PATH may differ. On this kind
// of machine /sys/class/net exists but no NIC has the A3 Mega layout, so
// discovery in bash ends at the defaults, as it does in the sandbox.
func TestReconstructedProfilesMatchBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	for _, version := range reconstructedVersions {
		for _, script := range []string{"nccl-env-profile.sh", "nccl-env-profile-simple.sh"} {
			t.Run(version+"/"+script, func(t *testing.T) {
				path := scriptPath(t, version, script)
				libDir := t.TempDir()
				got := map[string]string{}
				for _, v := range evaluateFile(t, path, Options{LibDir: libDir}).Vars {
					got[v.Name] = v.Value
				}
				want := bashExports(t, bash, path, libDir)
				if ld := want["LD_LIBRARY_PATH"]; ld != libDir+":" {
					t.Errorf("bash LD_LIBRARY_PATH = %q, want %q (the trailing ':' the evaluator normalizes)", ld, libDir+":")
				}
				want["LD_LIBRARY_PATH"] = dropEmptyElements(want["LD_LIBRARY_PATH"])
				if !reflect.DeepEqual(got, want) {
					t.Errorf("evaluator and bash disagree:\nevaluator %v\n     bash %v", got, want)
				}
			})
		}
	}
}

// bashExports sources script in bash with only NCCL_LIB_DIR and PATH set,
// and returns the environment variables the script added or changed.
func bashExports(t *testing.T, bash, script, libDir string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	cmd := exec.Command(bash, "-c", `env -0 > "$2" && . "$1" && env -0 > "$3"`, "bash", script, before, after)
	cmd.Env = []string{"NCCL_LIB_DIR=" + libDir, "PATH=/usr/bin:/bin"}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v; stderr: %s", err, stderr.String())
	}
	envOf := func(path string) map[string]string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
			name, value, _ := strings.Cut(kv, "=")
			env[name] = value
		}
		return env
	}
	old, now := envOf(before), envOf(after)
	changed := map[string]string{}
	for name, value := range now {
		if prev, ok := old[name]; (!ok || prev != value) && name != "_" { // bash sets _ itself
			changed[name] = value
		}
	}
	return changed
}

// TestReconstructedProfilesRequireLibDir runs the profiles in bash without
// NCCL_LIB_DIR, sourced and executed: both must fail with the message.
func TestReconstructedProfilesRequireLibDir(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	for _, version := range reconstructedVersions {
		for _, script := range []string{"nccl-env-profile.sh", "nccl-env-profile-simple.sh"} {
			path := scriptPath(t, version, script)
			for _, how := range [][]string{
				{"-c", `. "$1"; echo "sourced script returned $?" >&2; exit 7`, "bash", path},
				{path},
			} {
				cmd := exec.Command(bash, how...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "NCCL_LIB_DIR="}
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || !strings.Contains(string(out), "NCCL_LIB_DIR is not set") {
					t.Errorf("%s %s: err = %v, output %q; want a failure naming NCCL_LIB_DIR", version, how, err, out)
				}
				if len(how) > 1 && (exit == nil || exit.ExitCode() != 7 || !strings.Contains(string(out), "returned 1")) {
					t.Errorf("%s sourced: want the script to return 1 to its caller, got %v, %q", version, err, out)
				}
			}
		}
	}
}

func TestReconstructedEntrypoint(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	for _, version := range reconstructedVersions {
		path := scriptPath(t, version, "container_entry.sh")
		if out, err := exec.Command(bash, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s: bash -n: %v: %s", path, err, out)
		}
		for _, args := range [][]string{nil, {"uninstall"}, {"install", "--bogus"}} {
			cmd := exec.Command(bash, append([]string{path}, args...)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "usage:") {
				t.Errorf("%s %v: err = %v, output %q; want usage and status 2", version, args, err, out)
			}
		}
	}
}

// publishedLayers is the layer order of google/nccl-plugin-gpudirect-tcpxo's
// tcpxo.dockerfile (tags v1.0.14..v1.0.17), top of the image last: the
// nvidia/cuda devel base, apt upgrade, apt install (openssh-server,
// libopenmpi-dev, build tools), NCCL core, nccl-tests (plain, then MPI=1),
// CMake, googletest, abseil, protobuf, licenses, sshd on port 222 with keys,
// libnccl-net.so, the precompiled tuner/shim libraries and textproto configs,
// then the scripts. Extraction is only exercised honestly on this shape.
var publishedLayers = []string{"00-base", "10-apt-upgrade", "20-apt-install", "30-nccl", "40-nccl-tests", "41-nccl-tests-mpi",
	"50-cmake", "51-googletest", "52-abseil", "53-protobuf", "60-licenses", "65-sshd", "70-plugin", "80-precompiled", "90-scripts"}

// TestReconstructedTrees checks the shape the image builder and the
// extractor rely on: the published layer order, the files, the symlinks,
// executable scripts, and placeholders that say what they are and for which
// version.
func TestReconstructedTrees(t *testing.T) {
	for _, version := range reconstructedVersions {
		root := filepath.Join(repoRoot(t), "testdata", "installer", version)
		dirs, err := reconstruction.LayerDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		layer := map[string]string{}
		for _, ld := range dirs {
			names = append(names, filepath.Base(ld))
			layer[filepath.Base(ld)] = ld
		}
		if !reflect.DeepEqual(names, publishedLayers) {
			t.Errorf("%s layers = %v, want the published order %v", version, names, publishedLayers)
		}
		// at resolves "NN-name/path" in the layer of that name the release
		// declares (its own or a shared one).
		at := func(p string) string {
			name, rest, _ := strings.Cut(p, "/")
			return filepath.Join(layer[name], filepath.FromSlash(rest))
		}
		placeholders := []string{
			"00-base/usr/local/cuda/version.json",
			"30-nccl/third_party/nccl-netsupport/build/lib/libnccl.so.2.28.7",
			"40-nccl-tests/third_party/nccl-tests/build/all_reduce_perf",
			"41-nccl-tests-mpi/third_party/nccl-tests-mpi/build/all_reduce_perf",
		}
		// The /plugins shared objects are small ELF files carrying the
		// DT_NEEDED lists we believe (needed.json says so, and
		// reconstruction's TestPlaceholderLibraries holds them to it); the
		// rest of /plugins is text that says what it stands for.
		for _, p := range []string{"a3plus_tuner_config.textproto", "a3plus_tuner_config_simple.textproto"} {
			placeholders = append(placeholders, "80-precompiled/plugins/"+p)
		}
		sshd, err := os.ReadFile(at("65-sshd/etc/ssh/sshd_config"))
		if err != nil || !strings.Contains(string(sshd), "\nPort 222\n") {
			t.Errorf("%s: the sshd layer must set Port 222 as the published image does (err %v)", version, err)
		}
		for _, p := range placeholders {
			data, err := os.ReadFile(at(p))
			if err != nil {
				t.Error(err)
				continue
			}
			owner := layerOwner(layer[strings.SplitN(p, "/", 2)[0]])
			if s := strings.ToLower(string(data)); !strings.Contains(s, "placeholder") || !strings.Contains(s, owner) || !strings.Contains(s, "reconstruction") {
				t.Errorf("%s/%s does not say it is a %s reconstruction placeholder: %q", version, p, owner, data)
			}
		}
		lib := at("30-nccl/third_party/nccl-netsupport/build/lib")
		for link, target := range map[string]string{"libnccl.so.2": "libnccl.so.2.28.7", "libnccl.so": "libnccl.so.2"} {
			if got, err := os.Readlink(filepath.Join(lib, link)); err != nil || got != target {
				t.Errorf("%s %s -> %q (%v), want a relative symlink to %s", version, link, got, err, target)
			}
		}
		for _, s := range []string{"nccl-env-profile.sh", "nccl-env-profile-simple.sh", "container_entry.sh"} {
			path := scriptPath(t, version, s)
			info, err := os.Stat(path)
			if err != nil {
				t.Error(err)
				continue
			}
			// tcpxo_scripts/ of the published tags: the entrypoint is 0755, the
			// profiles 0644 (they are sourced, not run).
			if exec := info.Mode().Perm()&0o111 != 0; exec != (s == "container_entry.sh") {
				t.Errorf("%s/%s: executable = %v, want the published mode (0755 entrypoint, 0644 profiles)", version, s, exec)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if owner := layerOwner(layer["90-scripts"]); !strings.Contains(string(data), "installer "+owner) || !strings.Contains(string(data), "tcpxogen reconstruction") {
				t.Errorf("%s/%s does not say it is the tcpxogen reconstruction of installer %s", version, s, owner)
			}
		}
		if readme, err := os.ReadFile(filepath.Join(root, "README.md")); err != nil || !strings.Contains(string(readme), "reconstruction") {
			t.Errorf("%s/README.md missing or does not explain the reconstruction: %v", version, err)
		}
	}
}
