package interfaces

// What a validator outside Go needs of the mapping's rules (the Helm
// chart's values.schema.json and its templates, package runtimes/deploy):
// exported from here so that the chart is derived from the rules Parse,
// ParseYAML and FromBindings apply, never a copy of them.

// YAMLKey is the key of the binding list in a values document: what
// `render runtime --values` reads, `discover -o values` writes and the Helm
// chart's values carry.
const YAMLKey = yamlKey

// SharedNetworkRule is why two GPU NICs may not be mapped to one Network,
// the start of the fix every reader gives for it.
const SharedNetworkRule = "each GPU NIC is on its own VPC and needs its own Device-type GKE Network"

// NetworkNamePattern is GKE's rule for the name of a Network a pod
// interface is bound to, as a regular expression in the syntax RE2 and
// ECMA-262 share (JSON Schema's pattern), anchored at both ends. With
// MaxNetworkNameLength it is everything a name must meet: the rules of
// networkNameRules only explain how a name misses it.
func NetworkNamePattern() string { return networkNamePattern.String() }

// MachineType is the machine whose GPU NICs the mapping binds.
const MachineType = machineType
