package deploy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// schemaDialect is the JSON Schema dialect of values.schema.json: 2020-12,
// for minContains and maxContains, which hold each GPU NIC to exactly one
// entry.
const schemaDialect = "https://json-schema.org/draft/2020-12/schema"

// obj is a JSON Schema object.
type obj = map[string]any

// closed is an object schema that refuses every property it does not
// name, so a misspelt key fails instead of being ignored.
func closed(description string, props obj, required ...string) obj {
	s := obj{"type": "object", "additionalProperties": false, "properties": props}
	if description != "" {
		s["description"] = description
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// Schema is the chart's values.schema.json as a document: the mapping's
// rules as runtimes/interfaces states them (its NICs, its network name
// pattern and length), the node selector, tolerations, worker image and
// benchmark switch; every object closed.
func (f Fabric) Schema(in *runtimes.Inputs) obj {
	optional := f.Layout.OptionalInterfaces()
	var nics, perNIC []any
	for _, n := range f.AllNICs() {
		nics = append(nics, n)
		// Each required NIC exactly once, an optional one at most once.
		least := 1
		if slices.Contains(optional, n) {
			least = 0
		}
		perNIC = append(perNIC, obj{
			"contains":    obj{"type": "object", "properties": obj{"interfaceName": obj{"const": n}}, "required": []string{"interfaceName"}},
			"minContains": least,
			"maxContains": 1,
		})
	}
	machines := f.Layout.MachineTypes()
	description := fmt.Sprintf("The %s of %s, required: each of %s exactly once", f.MappingName, strings.Join(machines, " and "), strings.Join(f.NICs(), ", "))
	nicDescription := "A " + f.NICWord + " of " + strings.Join(machines, " or ")
	for _, n := range optional {
		description += fmt.Sprintf(", and %s (%s) at most once", n, f.OptionalNICs[n].Role)
		nicDescription += fmt.Sprintf(", or %s for %s", n, f.OptionalNICs[n].Role)
	}
	description += fmt.Sprintf(", each on its own Device-type GKE Network (%s). ", f.SharedNetworkRule)
	if f.Discover != "" {
		description += "Write it with: tcpxogen discover -o values"
	} else {
		description += "Write it from the cluster's Networks: " + f.NetworkSource
	}
	mapping := obj{
		"description": description,
		"type":        "array",
		"minItems":    len(f.NICs()),
		"maxItems":    len(nics),
		"items": closed("One "+f.NICWord+" and the GKE Network it is bound to.", obj{
			"interfaceName": obj{"description": nicDescription, "enum": nics},
			"network": obj{
				"description": fmt.Sprintf("The name of this cluster's Device-type GKE Network for the NIC's %s, as `kubectl get networks` prints it: a lower-case DNS label of at most %d characters (GKE's limit for a pod network)", f.Segment, interfaces.MaxNetworkNameLength),
				"type":        "string",
				"minLength":   1,
				"maxLength":   interfaces.MaxNetworkNameLength,
				"pattern":     interfaces.NetworkNamePattern(),
			},
		}, "interfaceName", "network"),
		"allOf": perNIC,
	}
	effects := []any{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
	toleration := closed("A Kubernetes toleration of the runtime's pods.", obj{
		"key":               obj{"type": "string"},
		"operator":          obj{"enum": []any{string(corev1.TolerationOpExists), string(corev1.TolerationOpEqual)}},
		"value":             obj{"type": "string"},
		"effect":            obj{"enum": effects},
		"tolerationSeconds": obj{"type": "integer"},
	})
	selector := fmt.Sprintf("Labels a node must carry for the runtime's pods (empty: %s).", selectorString(f.DefaultNodeSelector))
	if len(f.DefaultNodeSelector) == 0 {
		selector = "Labels a node must carry for the runtimes' pods, besides their machine type, which each runtime's node affinity selects (empty: none)."
	}
	workerImage := obj{
		"description": fmt.Sprintf("The image of the runtime's %s container, pinned as repo:tag@sha256:<64 hex>; it must be built for the CUDA the plugin libraries need.", f.NodeContainer),
		"type":        "string",
		"pattern":     bom.PinnedPattern,
	}
	if !f.hasDefaultWorkerImage() {
		workerImage["description"] = fmt.Sprintf("The image of the runtimes' %s container, pinned as repo:tag@sha256:<64 hex>; empty: the runtimes have none, and %s.", f.NodeContainer, f.NoWorkerImage(in))
		// Empty, or pinned.
		workerImage["pattern"] = "^$|" + bom.PinnedPattern
	}
	props := obj{
		f.ValuesKey(): mapping,
		valuesNodeSelector: obj{
			"description":          selector,
			"type":                 "object",
			"properties":           f.aimTerms(),
			"additionalProperties": obj{"type": "string"},
		},
		valuesTolerations: obj{"type": "array", "items": toleration},
		valuesWorkerImage: workerImage,
	}
	if f.Benchmark != "" {
		props[valuesBenchmark] = closed("The NCCL benchmark TrainingRuntime "+f.Benchmark+", derived from the runtime, in the release's namespace.", obj{
			valuesEnabled: obj{"type": "boolean"},
		})
	}
	if f.PerMachineType() {
		var mts []any
		for _, mt := range f.Registry.MachineTypeNames() {
			mts = append(mts, mt)
		}
		props[valuesMachineTypes] = obj{
			"description": fmt.Sprintf("The machine types to ship a runtime for, %s each (the env differs per machine type); default: every one.", f.Registry.RuntimeFor("<machine type>")),
			"type":        "array",
			"minItems":    1,
			"uniqueItems": true,
			"items":       obj{"enum": mts},
		}
	}
	return obj{
		"$schema": schemaDialect,
		"$comment": fmt.Sprintf("Code generated by tcpxogen render chart --fabric %s. DO NOT EDIT. The values of %s for %s.",
			f.Name(), f.ChartName(), f.Pins(in)),
		"type":                 "object",
		"additionalProperties": false,
		"required":             []string{f.ValuesKey()},
		"properties":           props,
	}
}

// schemaFile is values.schema.json.
// aimTerms hold the node selector's machine-type and accelerator terms to
// the fabric's machine types, as render runtime does (runtimes' checkAim):
// a selector term may narrow the pool but never aim the runtime at
// machines without the fabric's NICs (A3 Ultra's accelerator for TCPXO,
// A3 Mega's for gIB), where NCCL would fall back to TCP.
func (f Fabric) aimTerms() obj {
	var mts, accels []any
	for _, m := range f.Registry.MachineTypes {
		mts, accels = append(mts, m.Name), append(accels, m.Accelerator)
	}
	aim := fmt.Sprintf("; a value of another machine type would aim the runtime at machines without %s's NICs", f.Registry.Title)
	return obj{
		fabric.InstanceTypeLabel: obj{"description": "The machine type, one the fabric serves" + aim, "enum": mts},
		fabric.AcceleratorLabel:  obj{"description": "The accelerator, one of the fabric's machine types'" + aim, "enum": accels},
	}
}

func (f Fabric) schemaFile(in *runtimes.Inputs) ([]byte, error) {
	data, err := json.MarshalIndent(f.Schema(in), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
