package report

import (
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/buildinfo"
	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// Evidence is the predicate an evidence bundle signs about a judged run:
// the verdict, figures and versions, the BOM's pinned installer and daemon,
// and this tool's version; never host names, pod names or GPU UUIDs, which
// the log (and the report) may hold. The predicate describes a TCPXO run
// (evidence.Fabric, TCPXO's pinned images): a run judged for another fabric
// is not signed until the predicate can name that fabric's images.
func Evidence(l *busbw.Log, v busbw.Verdict, c Context) evidence.Predicate {
	verdict := "fail"
	if v.Pass {
		verdict = "pass"
	}
	source := c.RuntimeSource
	if source == "" {
		source = UnknownRuntimeSource
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
		Nodes:  l.Nodes, Ranks: l.Ranks, RuntimeSource: source, Fabric: evidence.Fabric,
		InstallerImage: tcpxo.InstallerImage, DaemonImage: tcpxo.DaemonImage,
		ToolVersion: buildinfo.Version(),
	}
}
