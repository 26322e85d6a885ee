package requirements

import (
	"fmt"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// The gIB fabric's published sources: Google's gpudirect-rdma manifests at
// the head of the pull request that moves them to v1.1.2, the release the
// BOM pins (master 992db812 carries the same files at v1.1.1).
const (
	googleGIB      = "GoogleCloudPlatform/container-engine-accelerators@dfe0f210 gpudirect-rdma/"
	srcGIBTest     = googleGIB + "nccl-test.yaml (A3 Ultra) and nccl-test-a4.yaml (A4)"
	srcGIBInstall  = googleGIB + "nccl-rdma-installer.yaml"
	byRDMA         = "runtimes/rdma.go"
	byGIBGenerated = generated.GIBFactsFile
)

// gibTable is every element the gIB runtimes (one per machine type) and the
// gIB installer DaemonSet must carry.
func gibTable(in *runtimes.Inputs) ([]Row, error) {
	var rows []Row
	for _, mt := range fabric.GIB.MachineTypes {
		s := site{runtimes.GoldenRDMARuntime(mt.Name), "ClusterTrainingRuntime/" + fabric.GIB.RuntimeFor(mt.Name), replicatedPod("node")}
		prof, ok := in.GIB.Profile(mt.Name)
		if !ok {
			return nil, fmt.Errorf("the generated gIB facts have no env for %s", mt.Name)
		}
		ifaces := map[string]string{"(JSON)[0].interfaceName": "eth0", "(JSON)[0].network": "default"}
		for i := 1; i <= 8; i++ {
			ifaces[fmt.Sprintf("(JSON)[%d].interfaceName", i)] = fmt.Sprintf("eth%d", i+1)
		}
		rows = append(rows,
			s.row(Annotation, `.metadata.annotations["networking.gke.io/default-interface"]`, is("eth0"), srcGIBTest+": eth0 stays the default route", byRDMA),
			s.row(Annotation, `.metadata.annotations["networking.gke.io/interfaces"]`, ifaces, srcGIBTest+": eth0 on default, then the eight RDMA NICs eth2..eth9 on the RDMA networks (names are the cluster's)", byRDMA),
			s.row(Mount, worker+".volumeMounts[name=library-dir-host]", map[string]string{".mountPath": "/usr/local/nvidia"}, srcGIBTest+": NCCL and the gIB plugin at /usr/local/nvidia/lib64", byRDMA),
			s.row(Mount, worker+".volumeMounts[name=gib]", map[string]string{".mountPath": "/usr/local/gib"}, srcGIBTest+": the gIB payload (scripts, configs) at /usr/local/gib", byRDMA),
			s.row(Mount, worker+".volumeMounts[name=shared-memory]", map[string]string{".mountPath": "/dev/shm"}, srcGIBTest+": a memory-backed /dev/shm for NCCL's shared-memory transport", byRDMA),
			s.row(Resource, worker+`.resources.limits["nvidia.com/gpu"]`, is("8"), srcGIBTest+": all eight GPUs", byRDMA),
			s.row(Resource, worker+`.resources.requests["nvidia.com/gpu"]`, is("8"), "an extended resource's request equals its limit", byRDMA),
			s.row(Volume, ".spec.volumes[name=library-dir-host]", map[string]string{".hostPath.path": "/home/kubernetes/bin/nvidia"}, srcGIBTest+" and "+srcGIBInstall+": the installer copies the payload's lib64 to the host's /home/kubernetes/bin/nvidia/lib64", byRDMA),
			s.row(Volume, ".spec.volumes[name=gib]", map[string]string{".hostPath.path": "/home/kubernetes/bin/gib"}, srcGIBTest+" and "+srcGIBInstall+": the installer copies the payload to the host's /home/kubernetes/bin/gib", byRDMA),
			s.row(Volume, ".spec.volumes[name=shared-memory]", map[string]string{".emptyDir.medium": "Memory", ".emptyDir.sizeLimit": "250Gi"}, srcGIBTest, byRDMA),
			s.row(Env, worker+".env[name=LD_LIBRARY_PATH]", map[string]string{".value": "/usr/local/nvidia/lib64"}, srcGIBTest+": the workload loads the installed NCCL and gIB plugin", byRDMA),
		)
		script := fmt.Sprintf("the gIB installer image's set_nccl_env.sh (%s) evaluated as on %s, read into %s; %s source it in their command, which a TrainJob's command replaces", in.GIB.PluginVersion, mt.Name, byGIBGenerated, srcGIBTest)
		for _, v := range prof {
			rows = append(rows, s.row(Env, worker+".env[name="+v.Name+"]", map[string]string{".value": v.Value}, script, byGIBGenerated))
		}
	}
	inst := site{runtimes.GoldenRDMAComponents, "DaemonSet/" + fabric.GIB.InstallerDaemonSet, "spec.template"}
	install := ".spec.initContainers[name=" + fabric.GIB.InstallerDaemonSet + "]"
	rows = append(rows,
		inst.row(HostNamespace, ".spec.hostNetwork", is("true"), srcGIBInstall, byComponents),
		inst.row(HostNamespace, ".spec.hostPID", is("true"), srcGIBInstall, byComponents),
		inst.row(Privilege, install+".securityContext.privileged", is("true"), srcGIBInstall, byRDMA),
		inst.row(Image, install+".image", is(in.BOM.Images.GIBInstaller.Reference), srcGIBInstall+": the NCCL/gIB installer image (bom/bom.yaml gibInstaller role, pinned by the release notes' digest)", byRDMA),
		inst.row(Resource, install+".resources.requests.cpu", is("150m"), srcGIBInstall, byRDMA),
		inst.row(Mount, install+".volumeMounts[name=library-dir-host]", map[string]string{".mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"}, srcGIBInstall, byRDMA),
		inst.row(Mount, install+".volumeMounts[name=gib]", map[string]string{".mountPath": "/usr/local/home/kubernetes/bin/gib"}, srcGIBInstall, byRDMA),
		inst.row(Image, ".spec.containers[name=pause].image", is(in.BOM.Images.Pause.Reference), srcGIBInstall+": pause keeps the pod running (bom/bom.yaml pause role)", byRDMA),
		inst.row(Volume, ".spec.volumes[name=library-dir-host]", map[string]string{".hostPath.path": "/home/kubernetes/bin/nvidia/lib64", ".hostPath.type": "DirectoryOrCreate"}, srcGIBInstall, byRDMA),
		inst.row(Volume, ".spec.volumes[name=gib]", map[string]string{".hostPath.path": "/home/kubernetes/bin/gib"}, srcGIBInstall, byRDMA),
	)
	return rows, nil
}

// gibArtefacts are the gIB goldens the table covers.
func gibArtefacts() []string {
	out := []string{runtimes.GoldenRDMAComponents}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		out = append(out, runtimes.GoldenRDMARuntime(mt))
	}
	return out
}

// renderGIB builds the gIB artefacts as go generate renders them.
func renderGIB(in *runtimes.Inputs, out map[string][]any) error {
	for _, mt := range fabric.GIB.MachineTypeNames() {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt})
		if err != nil {
			return err
		}
		out[runtimes.GoldenRDMARuntime(mt)] = []any{rt}
	}
	var comps []any
	for _, ds := range runtimes.RDMAComponents(in) {
		comps = append(comps, ds)
	}
	out[runtimes.GoldenRDMAComponents] = comps
	return nil
}
