package fabric

// GIBRules is the rule set of GPUDirect-RDMA with NCCL/gIB (A3 Ultra
// a3-ultragpu-8g, A4 a4-highgpu-8g).
//
// Sources, as the comments name them: "NCCL env docs" is NCCL's user guide,
// "Environment Variables" (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html);
// "gIB facts" is the project's facts for gIB; "Google's manifests" are
// GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/
// nccl-test.yaml (A3 Ultra) and nccl-test-a4.yaml (A4) at dfe0f210. No
// public source exists for the installer's set_nccl_env.sh or its checker
// config: what they set is our belief from a Google-authored 2024 A3 Ultra
// benchmark script in GoogleCloudPlatform/cluster-toolkit (gIB facts, "What
// set_nccl_env.sh sets"), and a why that rests only on it says "belief".
//
// Not a fabric variable here, unlike TCPXO: NCCL_SOCKET_IFNAME. TCPXO's
// profile pins it to eth0, apart from the GPU NICs its plugin drives; gIB's
// data moves over the RDMA devices NCCL_IB_HCA selects, whatever interface
// carries NCCL's bootstrap, and neither set_nccl_env.sh (belief) nor
// Google's manifests set it. It is tuning: a workload that sets it gets a
// warning, not a refusal.
//
// The plugin prefix is NCCL_IB_. gIB's transport is IB verbs over RoCE
// (gIB facts: CX-7 RDMA NICs, networks of deviceMode RDMA on a VPC with a
// RoCE network profile), and set_nccl_env.sh configures it through NCCL's
// NCCL_IB_* variables (NCCL env docs: the IB transport's devices, GIDs,
// traffic classes, timeouts, queue pairs). Which of them the closed gIB
// plugin reads is not published, so every one is fabric, as FasTrak's are
// for TCPXO, with two exceptions (prefixTuning): NCCL_IB_QPS_PER_CONNECTION
// and NCCL_IB_ADAPTIVE_ROUTING, which NCCL env docs describe as performance
// settings (queue pairs per connection for routing entropy; adaptive
// routing "can improve the performance of communications at scale") and
// which the installer's checker config recommends rather than enforces
// (belief): they stay tuning, judged by that recommendation. The ones that
// decide whether RDMA works at all are named with their own why.
var GIBRules = &RuleSet{
	vars: map[string]string{
		// NCCL env docs, NCCL_NET: it forces NCCL's network by name, matched
		// case-insensitively; "Internal network names are IB (generic IB
		// verbs) and Socket (TCP/IP sockets)". The plugin's network is gIB:
		// NCCL logs NET/gIB when the plugin loaded, IB or Socket on a
		// fallback (gIB facts, "Benchmark"); set_nccl_env.sh exports
		// NCCL_NET=gIB (gIB facts, "What set_nccl_env.sh sets": belief).
		"NCCL_NET": "NCCL_NET forces NCCL's network by name: any network but gIB (NCCL's own IB or Socket, or another plugin's) " +
			"takes NCCL off the gIB plugin, onto a transport A3 Ultra and A4 were not qualified with, or onto TCP",
		// NCCL env docs, NCCL_NET_PLUGIN: a suffix or library name chooses
		// the net plugin; "none" disables external plugins. gIB facts, "What
		// the payload holds": the installer's lib64/ holds the net plugin.
		"NCCL_NET_PLUGIN": "NCCL_NET_PLUGIN chooses which net plugin NCCL loads instead of the installer's: " +
			"\"none\" or another library drops the gIB plugin and NCCL falls back to its own IB or Socket transport",
		// Google's manifests set LD_LIBRARY_PATH=/usr/local/nvidia/lib64: the
		// installer copies its lib64 (NCCL and the gIB plugin) to the host's
		// /home/kubernetes/bin/nvidia/lib64, mounted at /usr/local/nvidia
		// (gIB facts, "Images and releases" and the host paths row).
		"LD_LIBRARY_PATH": "LD_LIBRARY_PATH is how NCCL finds the installer's NCCL core and gIB plugin: without their directory " +
			"NCCL loads no gIB plugin and falls back to its own IB or Socket transport",
		// gIB facts, "What the payload holds" and "What set_nccl_env.sh
		// sets": the tuner configs are per machine type
		// (tuner_config_a3u.txtpb, tuner_config_a4.txtpb under configs/).
		"NCCL_TUNER_CONFIG_PATH": "NCCL_TUNER_CONFIG_PATH points the installer's tuner at its config for this machine type " +
			"(A3 Ultra's or A4's): another file tunes NCCL for another machine or fails to load",
		// gIB facts, the guest config checker row: a config checker shim
		// compares the env with the values of its file under configs/, which
		// set_nccl_env.sh names here.
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE points the config checker " +
			"at the installer's rules: another file checks other rules, or none",
		// NCCL env docs, NCCL_NET_GDR_LEVEL: the maximum distance between NIC
		// and GPU for GPUDirect RDMA; LOC never uses it. set_nccl_env.sh
		// exports PIX (belief, as above).
		"NCCL_NET_GDR_LEVEL": "NCCL_NET_GDR_LEVEL bounds where NCCL moves data directly between GPU and RDMA NIC: " +
			"the installer's PIX pairs each GPU with the NIC on its PCIe switch, and LOC turns GPUDirect RDMA off, " +
			"staging every transfer through host memory",
		// NCCL env docs, NCCL_CROSS_NIC: 0 keeps a ring or tree on the same
		// NIC on every node, for networks with one switch per NIC (rails).
		// set_nccl_env.sh exports 0 (belief, as above); gIB facts, "Cluster
		// facts": the eight RDMA NICs are on eight networks, one subnet each.
		// That the RoCE fabric does not carry traffic between rails is
		// belief.
		"NCCL_CROSS_NIC": "NCCL_CROSS_NIC keeps each ring and tree on the same RDMA NIC on every node: the eight NICs sit on " +
			"eight networks, one subnet each, and the installer's 0 keeps traffic on its rail; letting NCCL pair different NICs " +
			"sends it across rails, which the RoCE fabric is not built for (belief)",
		// NCCL env docs, NCCL_IB_HCA: which RDMA devices NCCL uses. Neither
		// set_nccl_env.sh (belief) nor Google's manifests set it: NCCL uses
		// every RDMA device the pod has, the eight NICs on eth2..eth9 (gIB
		// facts, the GPU NICs row).
		"NCCL_IB_HCA": "NCCL_IB_HCA selects the RDMA devices NCCL uses: unset, NCCL uses all eight RDMA NICs; " +
			"a list that names other devices, or fewer, loses the RDMA NICs it leaves out",
		// NCCL env docs, NCCL_IB_GID_INDEX: the Global ID index used in RoCE
		// mode. set_nccl_env.sh exports 3 (belief, from the cluster-toolkit
		// script); that index 3 is each NIC's RoCE v2 IPv4 GID is belief too
		// (the usual layout, which the installer's show_gids.sh lists).
		"NCCL_IB_GID_INDEX": "NCCL_IB_GID_INDEX picks the GID, the RoCE address, NCCL uses on each RDMA NIC: the installer's 3 is, " +
			"we believe, the RoCE v2 one; another index names a GID of another RoCE version, or none, and connections fail or hang",
		// NCCL env docs, NCCL_IB_TC: the traffic class of NCCL's RDMA
		// traffic, which RoCE v2 carries in the IP header. set_nccl_env.sh
		// exports 52 (belief, from the cluster-toolkit script); that 52
		// selects the fabric's lossless queue is belief.
		"NCCL_IB_TC": "NCCL_IB_TC is the traffic class of NCCL's RDMA data: the installer's 52 selects, we believe, the RoCE " +
			"fabric's lossless queue; another class sends it through a queue that may drop, which RoCE turns into stalls",
		// NCCL env docs, NCCL_IB_FIFO_TC: the traffic class of the small
		// control messages (credit returns), so that they need not wait
		// behind data. set_nccl_env.sh exports 84 (belief, as NCCL_IB_TC).
		"NCCL_IB_FIFO_TC": "NCCL_IB_FIFO_TC is the traffic class of NCCL's RDMA control messages: the installer's 84 selects, " +
			"we believe, the fabric's queue for them; another class delays them behind data, or drops them",
	},
	pluginPrefix: "NCCL_IB_",
	pluginWhy: "NCCL_IB_* settings configure the IB verbs transport the gIB plugin runs over RoCE (its RDMA devices, " +
		"addresses, traffic classes, timeouts): the plugin is qualified with the installer's values only, and which of " +
		"them it reads is not published",
	prefixTuning: map[string]bool{"NCCL_IB_QPS_PER_CONNECTION": true, "NCCL_IB_ADAPTIVE_ROUTING": true},
	known: map[string]knownValue{
		// Google's manifests set it in the workload container; the
		// installer's set_nccl_env.sh does not (belief): the runtime adds it.
		"LD_LIBRARY_PATH": {"/usr/local/nvidia/lib64",
			"Google's manifests set it in the pod: the installer puts NCCL and the gIB plugin there"},
	},
	// NCCL env docs, NCCL_NET: the name matches case-insensitively, so any
	// casing of gIB keeps the plugin. A checker rule that enforces the
	// value's exact spelling decides first.
	net: netRule{
		name: "gIB", kinds: []Kind{Added, Changed}, severity: Note,
		why: "names the gIB network, the installer's (NCCL matches network names case-insensitively)",
		fix: "none needed",
	},
	// gIB facts, the guest config checker row (CEA docs, "Collect and
	// understand NCCL/gIB logs"): "enforced" mismatches terminate the job;
	// "Benchmark": the config checker aborts on an enforced mismatch.
	enforcedEffect: "the config checker terminates the job at NCCL init",
	// What gIB's checker does with a variable its config does not list is
	// not published; TCPXO's flags it as unexpected.
	unlisted:  "the checker may report it as unexpected (belief: what gIB's checker does with a variable it does not list is not published)",
	qualified: "A3 Ultra and A4 were",
	benchmark: "an A3 Ultra or A4 benchmark (tcpxogen validate --fabric gib)",
	profile:   "the installer's set_nccl_env.sh",
	// gIB facts, the GPU NICs row: eight RDMA NICs for the eight GPUs.
	gpusWhy: "A3 Ultra and A4 have one RDMA NIC for each of their eight GPUs: hiding GPUs leaves their NICs idle",
	// Google's manifests set LD_LIBRARY_PATH=/usr/local/nvidia/lib64 alone.
	libraryShadow: "Google's manifests set the installer's directory alone",
	classDocs: map[Class]string{
		ClassEnforced: "Must not touch. The installer's guest config checker enforces the value: " +
			"the checker terminates a workload that changes, removes or lacks it at NCCL init.",
		ClassFabric: "Must not touch. It selects NCCL's network, plugin, RDMA devices, RoCE addresses, traffic classes, rails " +
			"or libraries, or configures the IB verbs transport the gIB plugin runs: changing, removing or adding it moves NCCL " +
			"off the gIB plugin or off GPUDirect RDMA, or stalls it.",
		ClassRecommended: "Tune with care. The installer's guest config recommends the value; the checker reports a difference, " +
			"the workload runs.",
		ClassLogging: "Free to tune. Logging only.",
		ClassTuning: "Tune with care. The guest config does not enforce it, but A3 Ultra and A4 were qualified with the " +
			"installer's value; the checker may report an NCCL variable its config does not list (belief).",
		ClassOther: "Free. Not an NCCL setting (a shipped one is treated as tuning).",
	},
}
