package busbw

import (
	"fmt"
	"math"
	"slices"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// Fabric is what judging a run needs to know about one fabric: the network
// NCCL names when the fabric's plugin carries the traffic, what to check
// when it did not, and which of the fabric plugin's log lines are known.
// Everything else Evaluate judges (completeness, wrong results, nodes, the
// bandwidth floor) is the same for every fabric.
//
// fabrics is the only place this package holds fabric-specific knowledge.
// It is keyed by the --fabric values the fabric registry (internal/fabric)
// uses, so the registry can point at it by name.
type Fabric struct {
	// Name is the --fabric value.
	Name string
	// Title names the fabric in messages.
	Title string
	// Network is the name the fabric's NCCL net plugin registers, as NCCL
	// prints it in "NCCL INFO Using network X" (NCCL_NET selects it).
	Network string
	// Short names the fabric where a message says what a run is no evidence
	// about.
	Short string
	// Fallbacks names the networks NCCL falls back to without the plugin,
	// for messages.
	Fallbacks string
	// TCP says where Socket's traffic goes.
	TCP string
	// NotUsed says what another network than Network means.
	NotUsed string
	// Fix says what to check when NCCL used another network.
	Fix string
	// RequireNetwork makes a multi-node log that names no network a failure
	// rather than a skipped check: without the line nothing shows the
	// fabric carried the traffic.
	RequireNetwork bool
	// PluginVersionLine is true when the plugin logs its version in the
	// "Initializing network FasTrak, version: X" line Parse reads; a fabric
	// without such a known line leaves the plugin version unchecked.
	PluginVersionLine bool
	// Checker names the guest config checker in messages; GuestFix says
	// where the enforced values are; NameEnforced makes the message name the
	// variables the checker's lines name (TCPXO's message quotes the lines
	// only, and is kept so that TCPXO's reports do not change);
	// CheckerWording qualifies the recogniser's wording, "" when it is the
	// fabric's own.
	Checker, GuestFix string
	NameEnforced      bool
	CheckerWording    string
	// Collectives are the nccl-tests benchmarks a run of the fabric is
	// judged by (CheckFabricCollective), the one its published figures are
	// for first.
	Collectives []string
	// Published are the fabric's published bus bandwidths, one per machine
	// type, from which its declared floors come (DeclaredFloor); none for a
	// fabric whose floor is declared otherwise.
	Published []Published
}

// Published is a bus bandwidth a fabric's publisher states for one shape
// of run: the machine type, the collective, the node count and the message
// size it was measured at, and where it is published.
type Published struct {
	MachineType string
	Collective  string
	Nodes       int
	Size        string
	GBps        float64
	Source      string
}

// DeclaredFraction is the share of a published bus bandwidth tcpxogen
// declares as the default floor: our judgement, not a published rule (the
// project's gIB facts call 80-85 % a reasonable start). A run passes at
// PassFraction of the floor, as against any floor.
const DeclaredFraction = 0.8

// DeclaredFloor is the default floor for a run of collective on machine
// type mt: DeclaredFraction of the published figure, with the figure it
// comes from. ok is false when nothing is published for that pair.
func (f Fabric) DeclaredFloor(mt, collective string) (floor Floor, from Published, ok bool) {
	for _, p := range f.Published {
		if p.MachineType == mt && p.Collective == collective {
			gbps := math.Round(p.GBps*DeclaredFraction*100) / 100
			return Floor{Op: ">=", GBps: gbps}, p, true
		}
	}
	return Floor{}, Published{}, false
}

// PublishedMachineTypes lists the machine types f publishes figures for,
// in table order.
func (f Fabric) PublishedMachineTypes() []string {
	var out []string
	for _, p := range f.Published {
		if !slices.Contains(out, p.MachineType) {
			out = append(out, p.MachineType)
		}
	}
	return out
}

// DefaultFabric is the fabric a run is judged for when none is named:
// GPUDirect-TCPXO, the only one before fabrics were named.
const DefaultFabric = fabric.Default

// fabrics holds each fabric's entry, the default first.
//
// gIB's entries are from Google's documentation for A3 Ultra and A4 (the
// installer DaemonSet nccl-rdma-installer, the payload at
// /home/kubernetes/bin/gib mounted at /usr/local/gib, NCCL_NET=gIB) and
// NCCL's source (IB and Socket are NCCL's built-in networks). gIB's guest
// config checker is the same shim as TCPXO's
// (NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE), so its abort is
// recognised by TCPXO's line ('NCCL WARN NCCL/NET (...) mismatch enforced'):
// that gIB's checker words it so is our belief, which only a real gIB log
// can confirm. No line in which the gIB plugin logs its version is public.
var fabrics = []Fabric{
	{
		Name:              fabric.TCPXO.Name,
		Title:             fabric.TCPXO.Title,
		Network:           FasTrak,
		Short:             "TCPXO",
		Fallbacks:         "TCP",
		TCP:               "TCP on eth0",
		NotUsed:           "GPUDirect-TCPXO was not in use",
		Fix:               "the pod lacks the TCPXO wiring (run the benchmark with the torch-distributed-tcpxo runtime's wiring)",
		PluginVersionLine: true,
		Collectives:       []string{AllReduce},
		Checker:           "The installer's guest config checker",
		GuestFix:          `the fabric rule set, docs/tcpxo-workloads.md "What a workload may tune"; tcpxogen check trainjob names it for a TrainJob`,
	},
	{
		Name:           fabric.GIB.Name,
		Title:          "GPUDirect-RDMA",
		Network:        "gIB",
		Short:          "gIB",
		Fallbacks:      "IB or Socket",
		TCP:            "TCP",
		NotUsed:        "Google's gIB plugin did not carry the traffic (IB is NCCL's built-in RDMA transport, Socket its TCP one)",
		Fix:            "check that the nccl-rdma-installer DaemonSet ran on the nodes, that the pod mounts the host's /home/kubernetes/bin/gib at /usr/local/gib, and that the pod's env sets NCCL_NET=gIB",
		RequireNetwork: true,
		Checker:        "gIB's guest config checker",
		GuestFix:       "the config NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE names, under /usr/local/gib/configs; set_nccl_env.sh sets the values it enforces",
		NameEnforced:   true,
		CheckerWording: "TCPXO's checker's wording, assumed for gIB's; only a real gIB log can confirm it",
		Collectives:    []string{AllGather, AllReduce},
		// Google's "Run NCCL on custom GKE clusters that use A4 or A3
		// Ultra" (docs.cloud.google.com/ai-hypercomputer/docs/nccl): the
		// 2-node all_gather out-of-place busbw at 8 GB of its NCCL test.
		Published: []Published{
			{MachineType: "a3-ultragpu-8g", Collective: AllGather, Nodes: 2, Size: "8 GB", GBps: 330, Source: `Google, "Run NCCL on custom GKE clusters that use A4 or A3 Ultra" (about 330 GB/s)`},
			{MachineType: "a4-highgpu-8g", Collective: AllGather, Nodes: 2, Size: "8 GB", GBps: 344, Source: `Google, "Run NCCL on custom GKE clusters that use A4 or A3 Ultra" (about 344 GB/s)`},
		},
	},
}

// FabricNames lists the fabrics' names, the default first.
func FabricNames() []string { return fabric.Names() }

// LookupFabric returns the fabric named name; an unknown name is an error
// that lists the fabrics.
func LookupFabric(name string) (Fabric, error) {
	if _, err := fabric.Lookup(name); err != nil {
		return Fabric{}, err
	}
	if i := slices.IndexFunc(fabrics, func(f Fabric) bool { return f.Name == name }); i >= 0 {
		return fabrics[i], nil
	}
	return Fabric{}, fmt.Errorf("fabric %q has no log rules in nccl-report: add its entry to the report's fabric table", name)
}

// JudgedFabric is the fabric v was judged for: Verdict.Fabric, or
// DefaultFabric for a verdict that names none.
func (v Verdict) JudgedFabric() (Fabric, error) {
	if v.Fabric == "" {
		return LookupFabric(DefaultFabric)
	}
	return LookupFabric(v.Fabric)
}
