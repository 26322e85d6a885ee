package extract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
)

// Installer paths beyond the profiles, from the published tcpxo.dockerfile:
// the installer image is also the image Google runs nccl-tests from.
const (
	// SSHDConfigPath is edited at build so sshd listens on port 222.
	SSHDConfigPath = "/etc/ssh/sshd_config"
	// AllReducePerfMPIPath is the MPI=1 build of nccl-tests. The build under
	// /third_party/nccl-tests/ has no MPI: under mpirun every rank would run
	// its own single-GPU test.
	AllReducePerfMPIPath = "/third_party/nccl-tests-mpi/build/all_reduce_perf"
	// CUDAVersionEnv is set in the image config by the nvidia/cuda base.
	CUDAVersionEnv = "CUDA_VERSION"

	// DaemonTestdataDir holds one tcpxo-daemon reconstruction per version.
	DaemonTestdataDir = "testdata/daemon"
)

// installerFacts reads what the components and the benchmark depend on from
// the installer's config and the files scanned with it.
func installerFacts(cfg *v1.ConfigFile, scan *imagefs.Result, f *facts.Facts) error {
	var errs []error
	f.CUDAVersion = envOf(cfg, CUDAVersionEnv)
	if f.CUDAVersion == "" {
		errs = append(errs, fmt.Errorf("the installer image config sets no %s: tcpxogen cannot tell which CUDA major the worker image needs (the published image inherits it from its nvidia/cuda base)", CUDAVersionEnv))
	} else if _, err := facts.CUDAMajor(f.CUDAVersion); err != nil {
		errs = append(errs, fmt.Errorf("installer image config: %w", err))
	}
	f.InstallerEntrypoint = append([]string(nil), cfg.Config.Entrypoint...)
	if len(f.InstallerEntrypoint) == 0 || f.InstallerEntrypoint[0] != EntryScriptPath {
		errs = append(errs, fmt.Errorf("the installer image's entrypoint is %q, not %s: the installer DaemonSet runs that script; a changed entrypoint needs a tcpxogen change", f.InstallerEntrypoint, EntryScriptPath))
	}
	port, err := sshdPort(SSHDConfigPath, scan.Files[SSHDConfigPath].Data)
	if err != nil {
		errs = append(errs, err)
	}
	f.SSHDPort = port
	f.AllReducePerfMPI = AllReducePerfMPIPath
	f.Scripts = []string{EntryScriptPath}
	return errors.Join(errs...)
}

func envOf(cfg *v1.ConfigFile, name string) string {
	for _, kv := range cfg.Config.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// sshdPort returns the port sshd_config makes sshd listen on. Port lines
// accumulate in sshd, so more than one is ambiguous for the benchmark; with
// none, sshd uses 22 unless an Include'd file (not read here) sets one.
func sshdPort(name string, data []byte) (int, error) {
	port, _, err := sshdPortSet(name, data)
	return port, err
}

// sshdPortSet is sshdPort, also saying whether a Port line set the port
// (false: sshd's default 22).
func sshdPortSet(name string, data []byte) (int, bool, error) {
	var ports []int
	var lines []int
	include := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToLower(fields[0]) {
		case "include":
			include = n
		case "port":
			if len(fields) != 2 {
				return 0, false, fmt.Errorf("%s line %d: a Port line takes one number", name, n)
			}
			p, err := strconv.Atoi(fields[1])
			if err != nil || p < 1 || p > 65535 {
				return 0, false, fmt.Errorf("%s line %d: port %s is not a number from 1 to 65535", name, n, excerpt.Quote(fields[1]))
			}
			ports, lines = append(ports, p), append(lines, n)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, false, fmt.Errorf("read %s: %w", name, err)
	}
	switch {
	case len(ports) > 1:
		return 0, false, fmt.Errorf("%s sets Port on lines %v: sshd listens on all of them, and tcpxogen must learn which one the benchmark dials", name, lines)
	case len(ports) == 1:
		return ports[0], true, nil
	case include > 0:
		return 0, false, fmt.Errorf("%s sets no Port but includes other files (line %d): tcpxogen reads only the main file and cannot tell the port", name, include)
	}
	return 22, false, nil
}

// daemonFacts extracts the tcpxo-daemon's entrypoint and the mode of the
// script it runs. The published image runs its entry script through bash
// because the script has no exec bit; a pod command that execs the script
// directly fails with "permission denied", so the runtime derives its
// invocation from these facts.
func daemonFacts(ctx context.Context, cfg Config, src imagesource.Source, f *facts.Facts) error {
	ref := cfg.BOM.Images.Daemon.Reference
	img, err := src.Image(ctx)
	if err != nil {
		return fmt.Errorf("open daemon image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read daemon image config: %w", err)
	}
	ep := cf.Config.Entrypoint
	script, err := EntryScript(ep)
	if err != nil {
		return fmt.Errorf("daemon %s: %w", cfg.BOM.Images.Daemon.Version, err)
	}
	res, err := imagefs.Scan(ctx, img, []imagefs.Want{{Path: script}}, imagefs.WithLimits(cfg.Limits))
	if err != nil {
		return fmt.Errorf("daemon %s: its entrypoint runs %s: %w", cfg.BOM.Images.Daemon.Version, script, err)
	}
	f.DaemonEntrypoint = append([]string(nil), ep...)
	f.DaemonEntryScript = script
	f.DaemonEntryScriptMode = int(res.Files[script].Mode.Perm())
	p := src.Describe()
	f.DaemonProvenance = facts.ImageProvenance{Pinned: ref, Kind: p.Kind, Read: p.Read, Digest: p.Digest, Substituted: p.Substituted}
	return nil
}

// EntryScript returns the script an image entrypoint runs: the first
// element, or the second when the first is a shell.
func EntryScript(entrypoint []string) (string, error) {
	script := ""
	switch {
	case len(entrypoint) == 0:
		return "", fmt.Errorf("the image config has no entrypoint: tcpxogen cannot tell how the daemon starts")
	case facts.IsInterpreter(entrypoint[0]) && len(entrypoint) > 1:
		script = entrypoint[1]
	default:
		script = entrypoint[0]
	}
	if !path.IsAbs(script) || path.Clean(script) != script {
		return "", fmt.Errorf("the entrypoint %q runs %s, which is not an absolute path: tcpxogen must learn this entrypoint's shape", entrypoint, excerpt.Quote(script))
	}
	return script, nil
}
