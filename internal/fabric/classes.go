// Package fabric is tcpxogen's one definition of what keeps a workload on
// its inter-node GPU fabric (fabrics.go: GPUDirect-TCPXO, GPUDirect-RDMA
// with NCCL/gIB), for every check that judges a container's environment:
// bom-check on the shipped env after overrides, check trainjob on each
// container's final env, and the user guide's table of what a workload may
// tune.
//
// The rule set is one machinery (Classify, Check, EntryRules, Table, as
// methods on *RuleSet) applied to each fabric's data (TCPXORules here,
// GIBRules in gib.go; Fabric.Rules picks one). The package-level functions
// of the same names apply TCPXORules. It combines three sources, each cited
// where it is used:
//   - the installer's guest config checker (internal/guestconfig): an
//     enforced rule that does not hold aborts or hangs the workload at NCCL
//     init; a recommended one that differs is reported;
//   - NCCL's documented environment variables (NCCL user guide,
//     "Environment Variables", docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html):
//     which of them select the transport, the plugin and the interfaces;
//   - per fabric, what its installer's env sets and what its plugin needs.
//     For TCPXO: the installer's profiles and checker files as the
//     reconstruction records them (testdata/installer/) and Google's
//     GPUDirect-TCPXO release notes (GoogleCloudPlatform/container-engine-accelerators,
//     gpudirect-tcpxo/README.md). For gIB: the project's gIB facts
//     and Google's gIB manifests (gib.go says which values are belief).
//
// It also holds how the fabric's containers must write the capabilities
// they add (capabilities.go): containerd drops a name with the CAP_ prefix
// (NVIDIA cluster-readiness-engine issue #438), and every enforcer names
// that prefix as the cause through CheckCapabilities or its single-entry
// form, CapabilityRuleFor.
//
// Environments are []corev1.EnvVar: both callers hold them in that form
// (the runtime's worker env and every realized container), and a variable
// set from a ConfigMap, Secret or field has no value to compare, which a
// name/value pair could not express. A container's envFrom can set any
// variable too; judging it is the caller's part.
package fabric

import "strings"

// Class is how a variable may be changed by a workload.
type Class int

// The classes, from the strictest. Classify gives the first that applies.
const (
	// ClassEnforced: the installer's guest config enforces its value.
	ClassEnforced Class = iota + 1
	// ClassFabric: it selects NCCL's transport, plugin, interfaces or
	// libraries, or configures the FasTrak plugin itself.
	ClassFabric
	// ClassRecommended: the installer's guest config recommends its value.
	ClassRecommended
	// ClassLogging: it changes NCCL's logging only.
	ClassLogging
	// ClassTuning: any other NCCL variable (and CUDA_VISIBLE_DEVICES).
	ClassTuning
	// ClassOther: not NCCL's; a shipped one is judged as ClassTuning.
	ClassOther
)

// Classes lists every class, strictest first, for tables.
var Classes = []Class{ClassEnforced, ClassFabric, ClassRecommended, ClassLogging, ClassTuning, ClassOther}

var classNames = map[Class]string{
	ClassEnforced:    "enforced",
	ClassFabric:      "fabric",
	ClassRecommended: "recommended",
	ClassLogging:     "logging",
	ClassTuning:      "tuning",
	ClassOther:       "other",
}

// String is the class's short name, as tables print it.
func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return "unknown"
}

// Doc is one paragraph for the user guide saying what the class allows on
// GPUDirect-TCPXO (TCPXORules.ClassDoc; RuleSet.ClassDoc for another
// fabric).
func (c Class) Doc() string { return TCPXORules.ClassDoc(c) }

// MustNotTouch says whether any change of a variable of this class loses
// or breaks the fabric.
func (c Class) MustNotTouch() bool { return c == ClassEnforced || c == ClassFabric }

// TCPXORules is GPUDirect-TCPXO's rule set (A3 Mega).
var TCPXORules = &RuleSet{
	vars: map[string]string{
		// NCCL env docs, NCCL_NET: "Forces NCCL to use a specific network ...
		// Internal network names are IB and Socket". The plugin's network is
		// FasTrak (facts, "What the installer image contains": it logs
		// "Initializing network FasTrak").
		"NCCL_NET": "NCCL_NET forces NCCL's network by name: any network but FasTrak (e.g. Socket) routes NCCL off the FasTrak plugin onto TCP",
		// NCCL env docs, NCCL_NET_PLUGIN: a suffix or library name chooses the
		// net plugin; "none" disables external plugins. The installer's
		// libnccl-net.so is the guest config checker, which then loads FasTrak
		// (google/nccl-plugin-gpudirect-tcpxo README, "Future Libraries").
		"NCCL_NET_PLUGIN": "NCCL_NET_PLUGIN chooses which net plugin NCCL loads instead of the installer's libnccl-net.so: " +
			"\"none\" or another library drops the FasTrak plugin and NCCL falls back to TCP sockets",
		// NCCL env docs, NCCL_SOCKET_IFNAME; facts, "The default profile":
		// the profile keeps it on eth0, the host NIC, apart from the GPU NICs.
		"NCCL_SOCKET_IFNAME": "NCCL_SOCKET_IFNAME picks the interfaces of NCCL's bootstrap and socket traffic: the profile keeps them on eth0, " +
			"the default network, apart from the GPU NICs the FasTrak plugin drives",
		// Facts, "What the installer image contains": the plugin is installed
		// in /usr/local/nvidia/lib64 and found through LD_LIBRARY_PATH;
		// Google's release notes ("Compatible NCCL version") keep that
		// directory in LD_LIBRARY_PATH even when swapping the NCCL core.
		"LD_LIBRARY_PATH": "LD_LIBRARY_PATH is how NCCL finds the installer's plugin (libnccl-net.so) and NCCL core: without their directory " +
			"NCCL falls back to TCP sockets",
		// Facts, "What the installer image contains": inside a workload
		// NCCL_LIB_DIR=/usr/local/nvidia/lib64, and the profile derives the
		// tuner and guest config paths from it.
		"NCCL_LIB_DIR": "NCCL_LIB_DIR is where a workload that sources the installer's profile takes the plugin, tuner and guest config from " +
			"(NCCL does not read it: removing it only breaks such a command, a warning)",
		// Facts, "The default profile": both paths point into NCCL_LIB_DIR at
		// the configs of the profile in use.
		"NCCL_TUNER_CONFIG_PATH": "NCCL_TUNER_CONFIG_PATH points the installer's tuner at its A3 Mega config for this profile: " +
			"another file tunes NCCL for something else or fails to load",
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE points the guest config checker " +
			"at the installer's rules for this profile: another file checks other rules, or none",
		// NCCL env docs, NCCL_NET_GDR_LEVEL: the maximum NIC-GPU distance for
		// GPU Direct RDMA; LOC never uses it. The profile sets PIX.
		"NCCL_NET_GDR_LEVEL": "NCCL_NET_GDR_LEVEL bounds where NCCL moves data directly between GPU and NIC: " +
			"the profile's PIX is what GPUDirect-TCPXO needs, and LOC turns GPUDirect off",
	},
	// FasTrakPrefix: the FasTrak plugin's own settings (facts, "The default
	// profile"). All are ClassFabric: the plugin is qualified with the
	// installer's values only.
	pluginPrefix: FasTrakPrefix,
	pluginWhy: "NCCL_FASTRAK_* settings drive the FasTrak plugin itself (its NICs, control device, flows, LLCM devices): " +
		"the plugin is qualified with the installer's values only",
	known: map[string]knownValue{
		// Facts, "The default profile": "Non-privileged pods additionally
		// need NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/aperture_devices (the
		// profile assumes privileged mode)"; the runtime mounts the host's
		// /dev/aperture_devices there.
		"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": {"/dev/aperture_devices",
			"a non-privileged pod needs it: the profile assumes a privileged one, where LLCM finds its devices under /dev"},
		// Facts, "What the installer image contains": inside a workload
		// NCCL_LIB_DIR=/usr/local/nvidia/lib64 (the generated tcpxo.LibDir).
		"NCCL_LIB_DIR": {"/usr/local/nvidia/lib64", "it is where workload pods see the installed plugin"},
	},
	// NCCL env docs, NCCL_NET: the name matches case-insensitively, and
	// forcing the network NCCL would pick anyway only stops a silent
	// fallback. The guest config does not list it.
	net: netRule{
		name: "FasTrak", kinds: []Kind{Added}, severity: Warning,
		why: "forces the FasTrak network NCCL uses anyway, but the installer's guest config does not list NCCL_NET: " +
			"the checker reports it as unexpected",
		fix: "remove it, or keep it to make NCCL fail instead of falling back to TCP",
	},
	// NCCL and the plugin never read NCCL_LIB_DIR; only the installer's
	// profile does, and it fails loudly without it (facts, "The default
	// profile": "It requires NCCL_LIB_DIR (fails otherwise)"). Dropping it
	// keeps the fabric of a command that does not source the profile and
	// breaks, visibly, one that follows Google's README ("NCCL configs":
	// source ${NCCL_LIB_DIR}/nccl-env-profile.sh).
	profileInput: "NCCL_LIB_DIR",
	profileInputRemoved: "NCCL does not read it, but a command that runs " +
		"`source ${NCCL_LIB_DIR}/nccl-env-profile.sh` (Google's documented pattern) fails at start",
	// Facts, "Guest config checker"; Google's release note of Aug 21, 2025:
	// the checker "will abort any workload where it is not set".
	enforcedEffect: "the plugin aborts or hangs at NCCL init",
	// Google's release note of Aug 21, 2025: "The presence of
	// NCCL_NVLS_ENABLE or NCCL_ALGO will only be flagged as unexpected
	// environment variables"; facts, "Guest config checker".
	unlisted:  "the checker reports it as unexpected",
	qualified: "A3 Mega was",
	benchmark: "an A3 Mega benchmark (tcpxogen validate)",
	profile:   "the installer's profile",
	// CUDA_VISIBLE_DEVICES is exported by the profile (facts, "The default
	// profile"); hiding GPUs leaves their GPU NICs idle, since TCPXO pairs
	// one GPU NIC with each GPU.
	gpusWhy: "TCPXO pairs one GPU NIC with each GPU: hiding GPUs leaves their NICs idle",
	// Google's release notes, "Compatible NCCL version":
	// ${YOUR_OPEN_SOURCE_NCCL_CORE_PATH}:/usr/local/nvidia/lib64.
	libraryShadow: "Google documents this only for a compatible open-source NCCL core",
	classDocs: map[Class]string{
		ClassEnforced: "Must not touch. The installer's guest config checker enforces the value: " +
			"a workload that changes, removes or lacks it aborts or hangs at NCCL init.",
		ClassFabric: "Must not touch. It selects NCCL's network, plugin, interfaces or libraries, or configures " +
			"the FasTrak plugin: changing, removing or adding it moves NCCL off GPUDirect-TCPXO, usually onto TCP without an error.",
		ClassRecommended: "Tune with care. The installer's guest config recommends the value; the checker reports a difference, " +
			"the workload runs.",
		ClassLogging: "Free to tune. Logging only.",
		ClassTuning: "Tune with care. The guest config does not enforce it, but A3 Mega was qualified with the profile's value; " +
			"an NCCL variable the guest config does not list is reported by the checker as unexpected.",
		ClassOther: "Free. Not an NCCL setting (a shipped one is treated as tuning).",
	},
}

// FasTrakPrefix marks the FasTrak plugin's own settings: its NICs, control
// device, flows and LLCM devices (facts, "The default profile"), TCPXO's
// plugin prefix (RuleSet.PluginPrefix).
const FasTrakPrefix = "NCCL_FASTRAK_"

// loggingVars change NCCL's log output only (NCCL env docs: NCCL_DEBUG,
// NCCL_DEBUG_FILE, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_TIMESTAMP_FORMAT,
// NCCL_DEBUG_TIMESTAMP_LEVELS).
var loggingVars = map[string]bool{
	"NCCL_DEBUG": true, "NCCL_DEBUG_SUBSYS": true, "NCCL_DEBUG_FILE": true,
	"NCCL_DEBUG_TIMESTAMP_FORMAT": true, "NCCL_DEBUG_TIMESTAMP_LEVELS": true,
}

// tuningOther are non-NCCL variables that tune NCCL's use of the node:
// CUDA_VISIBLE_DEVICES (each rule set says why, gpusWhy).
var tuningOther = map[string]bool{"CUDA_VISIBLE_DEVICES": true}

// isNCCL says whether name is one of NCCL's (or its plugins') variables.
func isNCCL(name string) bool { return strings.HasPrefix(name, ncclPrefix) }
