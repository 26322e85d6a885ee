package report

import (
	"github.com/tcpxogen/tcpxogen/generated/gib"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/buildinfo"
	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// Evidence is the predicate an evidence bundle signs about a judged run:
// the verdict, figures and versions, the fabric the run was judged for
// with its pinned images (TCPXO's installer and daemon; gIB's installer and
// no daemon), and this tool's version; never host names, pod names or GPU
// UUIDs, which the log (and the report) may hold.
func Evidence(l *busbw.Log, v busbw.Verdict, c Context) evidence.Predicate {
	verdict := "fail"
	if v.Pass {
		verdict = "pass"
	}
	source := c.RuntimeSource
	if source == "" {
		source = UnknownRuntimeSource
	}
	fab, installer, daemon := fabric.TCPXO.Name, tcpxo.InstallerImage, tcpxo.DaemonImage
	if v.Fabric == fabric.GIB.Name {
		fab, installer, daemon = fabric.GIB.Name, gib.Facts().InstallerImage, ""
	}
	observedNCCL := []string{}
	if l.NCCLVersion != "" {
		observedNCCL = append(observedNCCL, l.NCCLVersion)
	}
	return evidence.Predicate{
		Verdict: verdict, Problems: len(v.Problems),
		BusBWGBps: v.Measured, SizeBytes: v.Size, FloorGBps: v.Floor.GBps, ThresholdGBps: v.Threshold,
		NCCL:   evidence.Versions{Observed: observedNCCL, Pinned: c.NCCLVersion},
		Plugin: evidence.Versions{Observed: append([]string{}, l.PluginVersions...), Pinned: c.PluginVersion},
		Nodes:  l.Nodes, Ranks: l.Ranks, RuntimeSource: source, Fabric: fab,
		InstallerImage: installer, DaemonImage: daemon,
		ToolVersion: buildinfo.Version(),
	}
}
