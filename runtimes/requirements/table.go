package requirements

import (
	"fmt"
	"strconv"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
)

// Row is one required element: where it must appear, what its leaves must
// hold, the published source that requires it and the file that ships it.
type Row struct {
	Artefact string // repo-relative golden path
	Object   string // Kind/name
	Path     string // the element's path in the object (structdiff's grammar)
	Kind     Kind
	// Want are leaves under Path (relative, "" for the element itself) that
	// must hold these values; a leaf not named here may hold anything.
	Want map[string]string
	// Source is what requires the element: a published manifest, note or
	// image fact, by repository and path; or, for tcpxogen's own protocol,
	// the reviewed file and the reason.
	Source string
	// ShippedBy is the file whose builder or reviewed input puts the
	// element into the artefact: where a change removed it.
	ShippedBy string
}

// Published sources. The manifests are Google's at the upstream snapshot
// whose versions the BOM pins (installer v1.0.15, daemon v1.0.21); the
// daemon's readiness note is only in the later best-practice page.
const (
	google         = "GoogleCloudPlatform/container-engine-accelerators@992db812 "
	srcUnpriv      = google + "gpudirect-tcpxo/nccl-test-unprivileged-without-hostnetwork.yaml"
	srcNCCLTest    = google + "gpudirect-tcpxo/nccl-test.yaml"
	srcInstaller   = google + "gpudirect-tcpxo/nccl-tcpxo-installer.yaml"
	srcInjector    = google + "nri_device_injector/nri-device-injector.yaml"
	srcBestPrac    = "GoogleCloudPlatform/container-engine-accelerators@7c35fd88 gpudirect-tcpxo/best-practice.md (tcpxo-daemon health check)"
	srcReadme      = "GoogleCloudPlatform/container-engine-accelerators@7c35fd88 gpudirect-tcpxo/README.md (NCCL configs)"
	srcMPIEntry    = "the installer image's /scripts/demo_mpi_entry_with_config_profile.sh (google/nccl-plugin-gpudirect-tcpxo tcpxo_scripts), which " + srcNCCLTest + " runs in every rank through /scripts/demo-run-nccl-test-tcpxo-via-mpi.sh"
	byTorch        = "runtimes/torch.go"
	srcTrainerMPI  = "kubeflow/trainer v2.2.0 MPI plugin: mpirun forwards the launcher's variables to the ranks with -x (Open MPI mpirun(1))"
	byWiring       = "runtimes/wiring.go"
	byComponents   = "runtimes/components.go"
	byDerive       = "validators/performance/derive/derive.go"
	byBOM          = bom.RepoPath
	byOverrides    = bom.OverridesRepoPath
	byGenerated    = generated.FactsFile
	apertureDevDir = "/dev/aperture_devices"
	pluginLibDir   = "/usr/local/nvidia/lib64"
)

// site is one pod template of an artefact that the table holds.
type site struct{ artefact, object, pod string }

func (s site) row(kind Kind, rel string, want map[string]string, source, by string) Row {
	return Row{Artefact: s.artefact, Object: s.object, Path: s.pod + rel, Kind: kind, Want: want, Source: source, ShippedBy: by}
}

// srcCapabilityName is what requires a capability's name as the row
// spells it, without the CAP_ prefix: a prefixed one is another element,
// which no row explains.
const srcCapabilityName = "written without the " + fabric.CapPrefix + " prefix: " + fabric.CapPrefixDropped + " (" + fabric.CapPrefixSource + ")"

// capability is the row of a capability the container at c adds, with the
// source that requires it and the one that requires its spelling.
func (s site) capability(c, name, source string) Row {
	return s.row(Capability, c+".securityContext.capabilities.add["+name+"]", nil, source+"; "+srcCapabilityName, byWiring)
}

func is(v string) map[string]string { return map[string]string{"": v} }

const (
	daemon = ".spec.initContainers[name=" + names.DaemonContainer + "]"
	worker = ".spec.containers[name=" + runtimes.NodeContainer + "]"
)

func replicatedPod(job string) string {
	return "spec.template.spec.replicatedJobs[name=" + job + "].template.spec.template"
}

// Table is every element the shipped runtime, the components and the
// benchmark must carry, for the pins in in (the image facts come from the
// generated constants, the images from the BOM).
func Table(in *runtimes.Inputs) ([]Row, error) {
	env, err := workerEnv(in)
	if err != nil {
		return nil, err
	}
	runtime := site{runtimes.GoldenRuntime, "ClusterTrainingRuntime/" + names.Runtime, replicatedPod("node")}
	benchObject := "TrainingRuntime/" + names.Benchmark
	benchNode := site{runtimes.GoldenBenchmark, benchObject, replicatedPod("node")}
	launcher := site{runtimes.GoldenBenchmark, benchObject, replicatedPod("launcher")}

	var rows []Row
	rows = append(rows, wiredPod(runtime, env, in.BOM.Images.Daemon.Reference)...)
	rows = append(rows, runtime.row(Image, worker+".image", is(in.BOM.Images.Worker.Reference),
		"bom/bom.yaml worker role: the default torch image, whose CUDA major the installer's plugin needs", byBOM))

	rows = append(rows, wiredPod(benchNode, env, in.BOM.Images.Daemon.Reference)...)
	rows = append(rows,
		benchNode.row(Image, worker+".image", is(in.BOM.Images.Installer.Reference),
			srcNCCLTest+": nccl-tests run from the installer image (its MPI build of all_reduce_perf and its sshd)", byDerive),
		benchNode.row(Port, worker+".readinessProbe.tcpSocket.port", is(strconv.Itoa(in.Facts.SSHDPort)),
			"the installer image's sshd_config (generated/tcpxo SSHDPort): the launcher dials sshd there", byGenerated),
		site{benchNode.artefact, benchObject, "metadata"}.row(Annotation, `.annotations["tcpxogen.dev/derived-from"]`, is("ClusterTrainingRuntime/"+names.Runtime),
			"tcpxogen's own: the benchmark names the runtime whose wiring it measures, which bom-check's benchmark-wiring rule compares", byDerive),
		launcher.row(Image, worker+".image", is(in.BOM.Images.Installer.Reference),
			srcNCCLTest+": mpirun runs from the installer image", byDerive),
	)
	rows = append(rows, launcher.row(Limit, worker+".args["+benchmark.RankPrelude+"]", nil,
		srcMPIEntry+": `ulimit -n 1048576` before the benchmark in every rank", byDerive))
	for _, e := range env {
		rows = append(rows, launcher.row(Env, worker+".env[name="+e.name+"]", map[string]string{".value": e.value}, e.source+"; "+srcTrainerMPI, e.by+", copied to the launcher by "+byDerive))
	}
	rows = append(rows, components(in)...)
	gib, err := gibTable(in)
	if err != nil {
		return nil, err
	}
	return append(rows, gib...), nil
}

// wiredPod is what a pod must carry to reach the fabric without privileged
// mode: Google's unprivileged sample, with the daemon as a native sidecar.
func wiredPod(s site, env []envRow, daemonImage string) []Row {
	var rows []Row
	for _, d := range []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3", "/dev/nvidia4", "/dev/nvidia5", "/dev/nvidia6", "/dev/nvidia7", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"} {
		rows = append(rows, s.row(Device, `.metadata.annotations["devices.gke.io/container.tcpxo-daemon"](YAML)[path=`+d+`]`, nil,
			srcUnpriv+": the NRI device injector gives the unprivileged tcpxo-daemon the GPUs and the dmabuf import helper", byWiring))
	}
	ifaces := map[string]string{"(JSON)[0].interfaceName": "eth0", "(JSON)[0].network": "default"}
	for i := 1; i <= 8; i++ {
		ifaces[fmt.Sprintf("(JSON)[%d].interfaceName", i)] = fmt.Sprintf("eth%d", i)
	}
	rows = append(rows,
		s.row(Annotation, `.metadata.annotations["networking.gke.io/default-interface"]`, is("eth0"), srcUnpriv+": eth0 stays the default route", byWiring),
		s.row(Annotation, `.metadata.annotations["networking.gke.io/interfaces"]`, ifaces, srcUnpriv+": eth0 on the pod network, then eth1..eth8 on the GPU-NIC networks (names are the cluster's)", byWiring),

		s.capability(daemon, "NET_ADMIN", srcUnpriv+": the tcpxo-daemon configures the GPU NICs' flow steering"),
		s.capability(daemon, "NET_BIND_SERVICE", srcUnpriv+": the tcpxo-daemon binds its control ports"),
		s.row(Privilege, daemon+".securityContext.privileged", is("false"), srcUnpriv+": privileged mode is commented out; the NRI devices and the capabilities replace it", byWiring),
		s.row(Env, daemon+".env[name=LD_LIBRARY_PATH]", map[string]string{".value": pluginLibDir}, srcUnpriv+": the daemon loads the installed plugin libraries", byWiring),
		s.row(Env, daemon+".env[name=HEALTH_CHECK_LOG_FILE]", map[string]string{".value": "/run/health-check"}, srcBestPrac+": the daemon writes the file once initialised, which the startup probe reads", byWiring),
		s.row(Mount, daemon+".volumeMounts[name=libraries]", map[string]string{".mountPath": "/usr/local/nvidia"}, srcUnpriv+": the plugin libraries at /usr/local/nvidia/lib64 (the parent mounted, same files)", byWiring),
		s.row(Mount, daemon+".volumeMounts[name=sys]", map[string]string{".mountPath": "/hostsysfs"}, srcUnpriv+": the daemon reads NIC and PCI topology from the host's /sys", byWiring),
		s.row(Mount, daemon+".volumeMounts[name=proc-sys]", map[string]string{".mountPath": "/hostprocsysfs"}, srcUnpriv+": the daemon tunes network sysctls through the host's /proc/sys", byWiring),

		// No published manifest adds IPC_LOCK (Google's unprivileged sample
		// runs nccl-tests as root without it); the shared facts require it.
		s.capability(worker, "IPC_LOCK", "tcpxo-facts.md, pod wiring (no published manifest sets it): NCCL pins host memory for GPUDirect buffers"),
		s.row(Mount, worker+".volumeMounts[name=dshm]", map[string]string{".mountPath": "/dev/shm"}, srcUnpriv+": a memory-backed /dev/shm for NCCL's shared-memory transport", byWiring),
		s.row(Mount, worker+".volumeMounts[name=libraries]", map[string]string{".mountPath": "/usr/local/nvidia"}, srcUnpriv+": the NCCL plugin and core at /usr/local/nvidia/lib64", byWiring),
		s.row(Mount, worker+".volumeMounts[name=aperture-devices]", map[string]string{".mountPath": apertureDevDir}, srcUnpriv+": LLCM's device files for an unprivileged pod", byWiring),
		s.row(Resource, worker+`.resources.limits["nvidia.com/gpu"]`, is("8"), srcUnpriv+": all eight GPUs, one per GPU NIC", byWiring),
		s.row(Resource, worker+`.resources.requests["nvidia.com/gpu"]`, is("8"), srcUnpriv+": an extended resource's request equals its limit", byWiring),

		s.row(Volume, ".spec.volumes[name=libraries]", map[string]string{".hostPath.path": "/home/kubernetes/bin/nvidia"}, srcUnpriv+" and "+srcInstaller+": the installer copies the plugin to the host's /home/kubernetes/bin/nvidia/lib64", byWiring),
		s.row(Volume, ".spec.volumes[name=sys]", map[string]string{".hostPath.path": "/sys"}, srcUnpriv, byWiring),
		s.row(Volume, ".spec.volumes[name=proc-sys]", map[string]string{".hostPath.path": "/proc/sys"}, srcUnpriv, byWiring),
		s.row(Volume, ".spec.volumes[name=aperture-devices]", map[string]string{".hostPath.path": apertureDevDir}, srcUnpriv+" and "+srcInstaller+": the host preparation bind-mounts the GPU NIC apertures there", byWiring),
		s.row(Volume, ".spec.volumes[name=dshm]", map[string]string{".emptyDir.medium": "Memory"}, srcUnpriv, byWiring),
		s.row(Image, daemon+".image", is(daemonImage), srcUnpriv+" runs tcpgpudmarxd-dev; bom/bom.yaml daemon role, the published pair of the installer (bom/releases.yaml)", byBOM),
	)
	for _, e := range env {
		rows = append(rows, s.row(Env, worker+".env[name="+e.name+"]", map[string]string{".value": e.value}, e.source, e.by))
	}
	return rows
}

type envRow struct{ name, value, source, by string }

// workerEnv is the env every wired worker must carry: the variables the
// installer image's profile exports (read from the image into the generated
// constants), the two Google's unprivileged sample sets, and the reviewed
// decisions of bom/overrides.yaml where they change the profile.
func workerEnv(in *runtimes.Inputs) ([]envRow, error) {
	prof, ok := in.Facts.Profile(facts.ProfileDefault)
	if !ok {
		return nil, fmt.Errorf("the generated constants have no %s profile", facts.ProfileDefault)
	}
	profile := fmt.Sprintf("the installer image's nccl-env-profile.sh (%s, %s profile, read into %s)", in.Facts.PluginVersion, facts.ProfileDefault, byGenerated)
	var rows []envRow
	at := map[string]int{}
	set := func(r envRow) {
		if i, ok := at[r.name]; ok {
			rows[i] = r
			return
		}
		at[r.name] = len(rows)
		rows = append(rows, r)
	}
	// The profile's input, from the generated library dir: Google's README
	// has workloads set it and source the profile from it.
	set(envRow{runtimes.EnvLibDir, in.Facts.LibDir, srcReadme + `: NCCL_LIB_DIR="/usr/local/nvidia/lib64", then source ${NCCL_LIB_DIR}/nccl-env-profile.sh`, byTorch})
	for _, v := range prof {
		set(envRow{v.Name, v.Value, profile, byGenerated})
	}
	for _, ov := range in.Overrides.Overrides {
		switch ov.Action {
		case bom.ActionAdd, bom.ActionReplace, bom.ActionPin:
			set(envRow{ov.Name, ov.Value, fmt.Sprintf("%s (%s): %s", byOverrides, ov.Action, ov.Reason), byOverrides})
		case bom.ActionRemove:
			if i, ok := at[ov.Name]; ok {
				rows = append(rows[:i], rows[i+1:]...)
				delete(at, ov.Name)
				for j := i; j < len(rows); j++ {
					at[rows[j].name] = j
				}
			}
		}
	}
	// Published requirements hold whatever the reviewed file says: a
	// removed or changed override fails here, not silently.
	set(envRow{"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", apertureDevDir, srcUnpriv + ": an unprivileged pod points LLCM at the host's aperture devices (the profile assumes privileged mode)", byOverrides})
	set(envRow{"LD_LIBRARY_PATH", pluginLibDir, srcUnpriv + ": the workload loads the installed plugin and NCCL core", byOverrides})
	return rows, nil
}

// components are the installer and NRI injector DaemonSets' requirements.
func components(in *runtimes.Inputs) []Row {
	inst := site{runtimes.GoldenComponents, "DaemonSet/" + names.InstallerDaemonSet, "spec.template"}
	inj := site{runtimes.GoldenComponents, "DaemonSet/" + runtimes.InjectorName, "spec.template"}
	prep := ".spec.initContainers[name=pre-installation]"
	install := ".spec.initContainers[name=" + names.InstallerContainer + "]"
	injector := ".spec.containers[name=device-injector]"
	var rows []Row
	for _, s := range []struct {
		site
		src string
	}{{inst, srcInstaller}, {inj, srcInjector}} {
		rows = append(rows,
			s.row(HostNamespace, ".spec.hostNetwork", is("true"), s.src, byComponents),
			s.row(HostNamespace, ".spec.hostPID", is("true"), s.src+": nsenter into PID 1 and node-level devices need the host's namespaces", byComponents))
	}
	return append(rows,
		inst.row(Privilege, prep+".securityContext.privileged", is("true"), srcInstaller+": the host preparation loads a module, adds an iptables rule and bind-mounts the apertures", byComponents),
		inst.row(Image, prep+".image", is(in.BOM.Images.Installer.Reference), srcInstaller+" runs it from an unpinned ubuntu image; any image with sh and nsenter does, so the pinned installer image is used (bom/bom.yaml installer role)", byComponents),
		inst.row(Privilege, install+".securityContext.privileged", is("true"), srcInstaller, byComponents),
		inst.row(Image, install+".image", is(in.BOM.Images.Installer.Reference), srcInstaller+": the NCCL plugin installer image (bom/bom.yaml installer role)", byComponents),
		inst.row(Resource, install+".resources.requests.cpu", is("150m"), srcInstaller, byComponents),
		inst.row(Mount, install+".volumeMounts[name=var-lib]", map[string]string{".mountPath": "/var/lib"}, srcInstaller+": the installer writes the libraries under /var/lib/tcpxo", byComponents),
		inst.row(Mount, install+".volumeMounts[name=library-dir-host]", map[string]string{".mountPath": "/usr/local"}, srcInstaller+": the copy lands in the host's /home/kubernetes/bin/nvidia", byComponents),
		inst.row(Image, ".spec.containers[name=pause].image", is(in.BOM.Images.Pause.Reference), srcInstaller+": pause keeps the pod running (bom/bom.yaml pause role)", byComponents),
		inst.row(Volume, ".spec.volumes[name=var-lib]", map[string]string{".hostPath.path": "/var/lib"}, srcInstaller, byComponents),
		inst.row(Volume, ".spec.volumes[name=library-dir-host]", map[string]string{".hostPath.path": "/home/kubernetes/bin"}, srcInstaller, byComponents),

		inj.row(Privilege, injector+".securityContext.privileged", is("true"), srcInjector, byComponents),
		inj.row(Image, injector+".image", is(in.BOM.Images.NRIInjector.Reference), srcInjector+" (bom/bom.yaml nriInjector role)", byComponents),
		inj.row(Resource, injector+".resources.requests.cpu", is("150m"), srcInjector, byComponents),
		inj.row(Mount, injector+".volumeMounts[name=dev]", map[string]string{".mountPath": "/dev"}, srcInjector+": devices created after the injector starts must be visible to it", byComponents),
		inj.row(Mount, injector+".volumeMounts[name=nri]", map[string]string{".mountPath": "/var/run/nri"}, srcInjector+": the NRI socket", byComponents),
		inj.row(Volume, ".spec.volumes[name=dev]", map[string]string{".hostPath.path": "/dev"}, srcInjector, byComponents),
		inj.row(Volume, ".spec.volumes[name=nri]", map[string]string{".hostPath.path": "/var/run/nri"}, srcInjector, byComponents),
	)
}
