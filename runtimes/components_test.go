package runtimes

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
)

// The expectations below are Google's published node side
// (GoogleCloudPlatform/container-engine-accelerators:
// gpudirect-tcpxo/nccl-tcpxo-installer.yaml and
// nri_device_injector/nri-device-injector.yaml); each one fails when the
// element is removed from the builders.

func componentsByName(t *testing.T) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for _, ds := range Components(loadInputs(t)) {
		out[ds.Name] = ds.Spec.Template.Spec
	}
	return out
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q", name)
	}
	return cs[i]
}

func hostPath(spec corev1.PodSpec, volume string) string {
	for _, v := range spec.Volumes {
		if v.Name == volume && v.HostPath != nil {
			return v.HostPath.Path
		}
	}
	return ""
}

func TestInstallerPreparesTheHostFirst(t *testing.T) {
	in := loadInputs(t)
	spec := componentsByName(t)[names.InstallerDaemonSet]
	if !spec.HostNetwork || !spec.HostPID {
		t.Errorf("installer pod hostNetwork=%v hostPID=%v: nsenter into PID 1 and the iptables rule need both", spec.HostNetwork, spec.HostPID)
	}
	if len(spec.InitContainers) < 2 || spec.InitContainers[0].Name != PrepareContainer {
		t.Fatalf("the first init container must be %s, got %v", PrepareContainer, spec.InitContainers)
	}
	prep := spec.InitContainers[0]
	if want := []string{"nsenter", "-at", "1", "--", "sh", "-c", HostPrepareScript}; !slices.Equal(prep.Command, want) {
		t.Errorf("%s command = %q, want the host script through nsenter", PrepareContainer, prep.Command)
	}
	if prep.Image != in.Facts.InstallerImage {
		t.Errorf("%s image = %q, want the pinned installer image (no unpinned ubuntu)", PrepareContainer, prep.Image)
	}
	if prep.SecurityContext == nil || prep.SecurityContext.Privileged == nil || !*prep.SecurityContext.Privileged {
		t.Errorf("%s must be privileged to nsenter the host", PrepareContainer)
	}
	inst := container(t, spec.InitContainers, names.InstallerContainer)
	script := strings.Join(inst.Command, " ")
	for _, want := range []string{strings.Join(in.Facts.InstallerEntrypoint, " ") + " install --install-nccl", "cp -r /var/lib/tcpxo/lib64/. " + in.Facts.LibDir} {
		if !strings.Contains(script, want) {
			t.Errorf("installer command %q lacks %q", script, want)
		}
	}
	mounts := map[string]string{}
	for _, m := range inst.VolumeMounts {
		mounts[m.MountPath] = hostPath(spec, m.Name)
	}
	// LibDir (/usr/local/nvidia/lib64) inside the container must land in
	// HostLibDir on the host, which workload pods mount.
	if mounts["/var/lib"] != "/var/lib" || mounts["/usr/local"] != "/home/kubernetes/bin" || !strings.HasPrefix(in.Facts.LibDir, LibMountPath) {
		t.Errorf("installer mounts %v: want host /var/lib at /var/lib and host /home/kubernetes/bin at /usr/local", mounts)
	}
	if q := inst.Resources.Requests.Cpu(); q.MilliValue() != 150 {
		t.Errorf("installer cpu request %v, want 150m", q)
	}
}

func TestInjectorSeesHostDevices(t *testing.T) {
	spec := componentsByName(t)[InjectorName]
	c := container(t, spec.Containers, InjectorName)
	found := false
	for _, m := range c.VolumeMounts {
		found = found || (m.MountPath == "/dev" && hostPath(spec, m.Name) == "/dev")
	}
	if !found {
		t.Errorf("the injector must mount the host's /dev at /dev: devices created after it starts are otherwise invisible (mounts %v)", c.VolumeMounts)
	}
	if c.Image != loadInputs(t).BOM.Images.NRIInjector.Reference {
		t.Errorf("injector image %q is not the BOM's", c.Image)
	}
}

func TestDaemonRunsThroughTheImageEntrypoint(t *testing.T) {
	p := facts.Facts{DaemonImage: "d", LibDir: "/l", DaemonEntrypoint: []string{"bash", "/fts/x.sh"}}
	c := DaemonSidecar(p)
	if !slices.Equal(c.Command, p.DaemonEntrypoint) || !slices.Equal(c.Args, []string{DaemonHops}) {
		t.Errorf("daemon command %q args %q, want the image entrypoint %q then %s", c.Command, c.Args, p.DaemonEntrypoint, DaemonHops)
	}
	p.DaemonEntrypoint[0] = "changed"
	if c.Command[0] != "bash" {
		t.Error("the sidecar shares its command slice with the pins")
	}
}

// fakeNode runs HostPrepareScript in an in-process shell against a fake
// node: every external command is answered from the node's state and
// recorded. It checks what the script does, not how it is spelled.
type fakeNode struct {
	apertures  []string        // BDFs of 1ae0:0084 devices
	iptables   bool            // the ACCEPT rule is present
	mounted    map[string]bool // bind-mounted aperture targets
	calls      []string
	moduleLoad int
}

func (n *fakeNode) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	n.calls = append(n.calls, strings.Join(args, " "))
	switch args[0] {
	case "iptables":
		if args[1] == "-C" && !n.iptables {
			return interp.ExitStatus(1)
		}
		if args[1] == "-I" {
			n.iptables = true
		}
	case "modprobe":
		if len(args) != 2 || args[1] != "import-helper" {
			return interp.ExitStatus(1)
		}
		n.moduleLoad++
	case "lspci":
		fmt.Fprintln(hc.Stdout, "0000:00:04.0 Ethernet controller [0200]: Google, Inc. Compute Engine Virtual Ethernet [gVNIC] [1ae0:0042]")
		for _, b := range n.apertures {
			fmt.Fprintf(hc.Stdout, "%s Memory controller [0580]: Google, Inc. Device [1ae0:0084]\n", b)
		}
	case "awk":
		// The script filters lspci for the aperture ID and prints the BDF.
		data, _ := io.ReadAll(hc.Stdin)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "1ae0:0084") {
				fmt.Fprintln(hc.Stdout, strings.Fields(line)[0])
			}
		}
	case "readlink":
		fmt.Fprintln(hc.Stdout, "/sys/devices/pci0000:00/"+args[len(args)-1][len("/sys/bus/pci/devices/"):])
	case "umount":
		if !n.mounted[args[len(args)-1]] {
			return interp.ExitStatus(32)
		}
		delete(n.mounted, args[len(args)-1])
	case "mount":
		target := args[len(args)-1]
		if n.mounted[target] {
			return fmt.Errorf("%s mounted twice", target)
		}
		n.mounted[target] = true
	case "mkdir", "chmod", "echo":
	default:
		return fmt.Errorf("unexpected command %q", args)
	}
	return nil
}

func (n *fakeNode) run(t *testing.T) error {
	t.Helper()
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(HostPrepareScript), "pre-installation")
	if err != nil {
		t.Fatalf("the host script is not POSIX sh: %v", err)
	}
	r, err := interp.New(interp.Env(expand.ListEnviron("PATH=/usr/bin")), interp.StdIO(nil, io.Discard, io.Discard),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return n.exec }))
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(context.Background(), file)
}

func TestHostPrepareScriptOnANode(t *testing.T) {
	n := &fakeNode{apertures: []string{"0000:06:00.1", "0000:0c:00.1"}, mounted: map[string]bool{}}
	for run := 1; run <= 2; run++ {
		if err := n.run(t); err != nil {
			t.Fatalf("run %d: %v (calls %q)", run, err, n.calls)
		}
		if len(n.mounted) != 2 || !n.mounted[ApertureDevices+"/0000:06:00.1"] || !n.mounted[ApertureDevices+"/0000:0c:00.1"] {
			t.Fatalf("run %d: mounted %v, want every aperture bound under %s exactly once", run, n.mounted, ApertureDevices)
		}
	}
	if n.moduleLoad != 2 || !n.iptables {
		t.Errorf("import-helper loaded %d times, iptables rule %v", n.moduleLoad, n.iptables)
	}
	inserts := 0
	for _, c := range n.calls {
		if strings.HasPrefix(c, "iptables -I") {
			inserts++
		}
	}
	if inserts != 1 {
		t.Errorf("iptables -I ran %d times over two runs: a re-run must not stack rules", inserts)
	}
	for _, want := range []string{"chmod -R a+r " + ApertureDevices + "/", "chmod a+rw " + ApertureDevices + "/*/resource*"} {
		if !slices.Contains(n.calls, want) {
			t.Errorf("no %q: the plugin could not read or map the apertures (calls %q)", want, n.calls)
		}
	}

	empty := &fakeNode{mounted: map[string]bool{}}
	if err := empty.run(t); err == nil {
		t.Error("a node without apertures must fail the init container, not leave an empty directory")
	}
}
