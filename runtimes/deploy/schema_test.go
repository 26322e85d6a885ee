package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// validate checks values against schema with the JSON Schema library Helm
// validates values.schema.json with (santhosh-tekuri/jsonschema v6).
func validate(t *testing.T, schema obj, values any) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustJSON(t, schema)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("values.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("values.schema.json")
	if err != nil {
		t.Fatalf("values.schema.json does not compile: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustJSON(t, values)))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// asJSON is v as the generic value its JSON decodes to, as a values file
// holds it.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaRefusesWhatTheLayoutRefuses: values.schema.json refuses every
// bad mapping the fabric's Layout refuses, but for two NICs on one network
// (which JSON Schema cannot compare across items; the chart's template
// fails on it), naming the value; it accepts what the Layout accepts; it
// refuses any unknown key, and for gIB a machine type gIB does not serve.
func TestSchemaRefusesWhatTheLayoutRefuses(t *testing.T) {
	in := inputs(t)
	gibPairs := strings.Split("eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7", ",")
	tcpxoPairs := strings.Split("eth1=vpc1,eth2=vpc2,eth3=vpc3,eth4=vpc4,eth5=vpc5,eth6=vpc6,eth7=vpc7,eth8=vpc8", ",")
	long := strings.Repeat("n", interfaces.MaxNetworkNameLength+1)
	longest := strings.Repeat("n", interfaces.MaxNetworkNameLength)
	with := func(pairs []string, more ...string) string {
		return strings.Join(append(slices.Clone(pairs), more...), ",")
	}
	for _, tc := range []struct {
		fabric, name string
		pairs        string // the mapping, "" for none
		extra        map[string]any
		ok           bool
		want         string // in the schema's error
	}{
		{"gib", "eth2..eth9", with(gibPairs), nil, true, ""},
		{"gib", "eth2..eth9 and eth1", with(gibPairs, "eth1=gvnic-1"), nil, true, ""},
		{"gib", "reversed, eth1 last", with([]string{"eth9=i", "eth8=h", "eth7=g", "eth6=f", "eth5=e", "eth4=d", "eth3=c", "eth2=b", "eth1=a"}), nil, true, ""},
		{"gib", "the longest names", with(append([]string{"eth2=" + longest}, gibPairs[1:]...), "eth1="+longest[:40]+"1"), nil, true, ""},
		{"gib", "one machine type, an image", with(gibPairs), map[string]any{"machineTypes": []any{"a4-highgpu-8g"}, "workerImage": pinnedWorker}, true, ""},
		{"gib", "seven networks", with(gibPairs[:7]), nil, false, "/rdmaInterfaces"},
		{"gib", "seven networks and eth1", with(gibPairs[:7], "eth1=gvnic-1"), nil, false, "/rdmaInterfaces"},
		{"gib", "ten networks", with(gibPairs, "eth1=gvnic-1", "eth9=rdma-8"), nil, false, "/rdmaInterfaces"},
		{"gib", "an RDMA NIC twice", with(gibPairs, "eth2=rdma-8"), nil, false, "/rdmaInterfaces"},
		{"gib", "eth1 twice", with(gibPairs[:7], "eth1=gvnic-1", "eth1=gvnic-2"), nil, false, "/rdmaInterfaces"},
		{"gib", "eth0", with(gibPairs, "eth0=default"), nil, false, "/rdmaInterfaces/8/interfaceName"},
		{"gib", "eth10", with(gibPairs, "eth10=rdma-8"), nil, false, "/rdmaInterfaces/8/interfaceName"},
		{"gib", "TCPXO's eth1..eth8", with(tcpxoPairs), nil, false, "/rdmaInterfaces"},
		{"gib", "a 42-character name", with(append([]string{"eth2=" + long}, gibPairs[1:]...)), nil, false, "/rdmaInterfaces/0/network"},
		{"gib", "an upper-case name", with(append([]string{"eth2=RDMA-0"}, gibPairs[1:]...)), nil, false, "/rdmaInterfaces/0/network"},
		{"gib", "an underscore", with(append([]string{"eth2=rdma_0"}, gibPairs[1:]...)), nil, false, "/rdmaInterfaces/0/network"},
		{"gib", "no mapping", "", nil, false, "rdmaInterfaces"},
		{"gib", "TCPXO's key", "", map[string]any{"tcpxoInterfaces": asJSON(t, bindings(with(tcpxoPairs)))}, false, "tcpxoInterfaces"},
		{"gib", "A3 Mega", with(gibPairs), map[string]any{"machineTypes": []any{"a3-megagpu-8g"}}, false, "/machineTypes/0"},
		{"gib", "a machine type twice", with(gibPairs), map[string]any{"machineTypes": []any{"a4-highgpu-8g", "a4-highgpu-8g"}}, false, "/machineTypes"},
		{"gib", "no machine type", with(gibPairs), map[string]any{"machineTypes": []any{}}, false, "/machineTypes"},
		{"gib", "an unpinned image", with(gibPairs), map[string]any{"workerImage": "nvcr.io/nvidia/pytorch:25.10-py3"}, false, "/workerImage"},
		{"gib", "a benchmark", with(gibPairs), map[string]any{"benchmark": map[string]any{"enabled": true}}, false, "benchmark"},
		{"tcpxo", "eth1..eth8", with(tcpxoPairs), nil, true, ""},
		{"tcpxo", "eth1 for gIB's gVNIC", with(tcpxoPairs[1:], "eth9=vpc9"), nil, false, "/tcpxoInterfaces"},
		{"tcpxo", "a machine type", with(tcpxoPairs), map[string]any{"machineTypes": []any{"a3-megagpu-8g"}}, false, "machineTypes"},
		{"tcpxo", "no image", with(tcpxoPairs), map[string]any{"workerImage": ""}, false, "/workerImage"},
		// A node selector narrows the pool but never aims the runtime at
		// another fabric's or an unserved machine type (render runtime
		// refuses the same terms).
		{"tcpxo", "a pool label", with(tcpxoPairs), map[string]any{"nodeSelector": map[string]any{"cloud.google.com/gke-nodepool": "a3mega", "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}}, true, ""},
		{"tcpxo", "A3 Ultra's accelerator", with(tcpxoPairs), map[string]any{"nodeSelector": map[string]any{"cloud.google.com/gke-accelerator": "nvidia-h200-141gb"}}, false, "/nodeSelector/cloud.google.com~1gke-accelerator"},
		{"tcpxo", "A3 High", with(tcpxoPairs), map[string]any{"nodeSelector": map[string]any{"node.kubernetes.io/instance-type": "a3-highgpu-8g"}}, false, "/nodeSelector/node.kubernetes.io~1instance-type"},
		{"gib", "A3 Mega's accelerator", with(gibPairs), map[string]any{"nodeSelector": map[string]any{"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}}, false, "/nodeSelector/cloud.google.com~1gke-accelerator"},
		{"gib", "A4's machine type", with(gibPairs), map[string]any{"nodeSelector": map[string]any{"node.kubernetes.io/instance-type": "a4-highgpu-8g"}}, true, ""},
	} {
		t.Run(tc.fabric+"/"+tc.name, func(t *testing.T) {
			f, err := Lookup(tc.fabric)
			if err != nil {
				t.Fatal(err)
			}
			values := map[string]any{}
			if tc.pairs != "" {
				values[f.ValuesKey()] = asJSON(t, bindings(tc.pairs))
				_, lerr := f.Layout.FromBindings(bindings(tc.pairs))
				if (lerr == nil) != tc.ok && tc.extra == nil {
					t.Errorf("the %s Layout says %v, the test %v", f.Layout, lerr, tc.ok)
				}
			}
			for k, v := range tc.extra {
				values[k] = v
			}
			err = validate(t, f.Schema(in), values)
			switch {
			case tc.ok && err != nil:
				t.Errorf("the schema refuses it: %v", err)
			case !tc.ok && err == nil:
				t.Errorf("the schema accepts it")
			case !tc.ok && !strings.Contains(fmt.Sprint(err), tc.want):
				t.Errorf("the schema's error does not name %s:\n%v", tc.want, err)
			}
		})
	}
}

// TestEveryRegistryFabricHasAnEntry: each fabric of the registry has a
// chart and a base, its NICs and machine types its Layout's.
func TestEveryRegistryFabricHasAnEntry(t *testing.T) {
	for _, reg := range fabric.Fabrics() {
		f, err := Lookup(reg.Name)
		if err != nil {
			t.Errorf("fabric %s: %v", reg.Name, err)
			continue
		}
		if f.Name() != reg.Name {
			t.Errorf("Lookup(%s) is the %s entry", reg.Name, f.Name())
		}
		if !slices.Equal(f.Layout.MachineTypes(), reg.MachineTypeNames()) {
			t.Errorf("%s: the Layout's machine types %v are not the registry's %v", reg.Name, f.Layout.MachineTypes(), reg.MachineTypeNames())
		}
		if f.PerMachineType() != (len(reg.MachineTypes) > 1) {
			t.Errorf("%s: PerMachineType %v for %d machine types", reg.Name, f.PerMachineType(), len(reg.MachineTypes))
		}
	}
	if len(entries) != len(fabric.Fabrics()) {
		t.Errorf("%d entries for %d fabrics", len(entries), len(fabric.Fabrics()))
	}
}

// TestEntriesWordTheMappingAsTheValidatorDoes: what the chart and the base
// say of a mapping (the shared-network rule, the optional NICs' roles,
// the NIC and segment words) is what the fabric's Layout says when it
// refuses one, so `helm install` and `render runtime` give the same fix.
func TestEntriesWordTheMappingAsTheValidatorDoes(t *testing.T) {
	for _, f := range entries {
		opt := f.Layout.OptionalInterfaces()
		if !slices.Equal(sortedKeys(f.OptionalNICs), opt) {
			t.Errorf("%s: OptionalNICs %v, the Layout's optional NICs %v", f.Name(), sortedKeys(f.OptionalNICs), opt)
		}
		// Two required NICs on one network.
		nics := f.NICs()
		var bs []interfaces.Binding
		for i, n := range nics {
			bs = append(bs, interfaces.Binding{Interface: n, Network: fmt.Sprintf("net-%d", i)})
		}
		shared := slices.Clone(bs)
		shared[1].Network = shared[0].Network
		_, err := f.Layout.FromBindings(shared)
		for _, w := range []string{f.SharedNetworkRule, "map " + nics[1] + " to the Network of its own " + f.Segment} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the Layout's refusal of a shared network %v lacks %q", f.Name(), err, w)
			}
		}
		if !strings.Contains(f.Layout.NoMapping().Error(), f.NICWord) {
			t.Errorf("%s: the Layout's no-mapping error %q does not say %s", f.Name(), f.Layout.NoMapping(), f.NICWord)
		}
		// An optional NIC on a required NIC's network.
		for _, n := range opt {
			_, err := f.Layout.FromBindings(append(slices.Clone(bs), interfaces.Binding{Interface: n, Network: bs[0].Network}))
			o := f.OptionalNICs[n]
			for _, w := range []string{n + " is for " + o.Role + ", a network of its own", "map " + n + " to " + o.Role + " (" + o.Example + " in Google's documentation), or leave " + n + " out if this cluster has none"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: the Layout's refusal of %s on %s's network %v lacks %q", f.Name(), n, nics[0], err, w)
				}
			}
		}
	}
}
