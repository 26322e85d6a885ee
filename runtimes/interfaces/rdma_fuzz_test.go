package interfaces

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func FuzzRDMAParse(f *testing.F) {
	for _, s := range []string{
		rdmaCanonical, "eth1=gvnic-1," + rdmaCanonical, canonical, "", ",", "=", "eth1=", "=net-1",
		"eth0=default," + rdmaCanonical, rdmaCanonical + ",eth10=x", rdmaCanonical + ",eth1=net-2",
		"eth9=h,eth8=g,eth7=f,eth6=e,eth5=d,eth4=c,eth3=b,eth2=a,eth1=z",
		rdmaPairs(map[string]string{"eth9": ""}),
		rdmaPairs(map[string]string{"eth5": "eth5=" + strings.Repeat("a", 42)}),
		rdmaPairs(map[string]string{"eth3": "eth3=Net-3"}),
		"eth1=\u00e9,eth2=\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := RDMA.Parse(s)
		if err != nil {
			checkRejected(t, m, err, false)
			return
		}
		checkAcceptedLayout(t, RDMA, m)
		// Accepted input names each NIC it binds once, with the network it got.
		for _, raw := range strings.Split(s, ",") {
			iface, network, _ := strings.Cut(raw, "=")
			if n, ok := m.Network(strings.TrimSpace(iface)); !ok || n != strings.TrimSpace(network) {
				t.Fatalf("pair %q gave %s → %q", raw, iface, n)
			}
		}
		// An RDMA mapping binds eth9, which no TCPXO mapping does.
		if tm, err := TCPXO.Parse(s); err == nil {
			t.Fatalf("TCPXO.Parse accepted the RDMA mapping %q as %v", s, tm)
		}
	})
}

func FuzzRDMAParseYAML(f *testing.F) {
	for _, s := range []string{
		rdmaYAMLDoc(nil), rdmaYAMLDoc(map[string]string{"eth1": "  - {interfaceName: eth1, network: gvnic-1}"}),
		yamlDoc(nil), "", "~", "rdmaInterfaces: []", "rdmaInterfaces: &a [*a]",
		"rdmaInterfaces:\n  - &e {interfaceName: eth2, network: a}\n  - *e\n",
		"rdmaInterfaces: {a: b}\n---\nx: 1\n", "rdmaInterfaces:\n\t- a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := RDMA.ParseYAML(data)
		if err != nil {
			checkRejected(t, m, err, true)
			return
		}
		checkAcceptedLayout(t, RDMA, m)
	})
}

// FuzzRDMARoundTrip builds RDMA mappings from eight network names, an
// optional gVNIC network and an order, and holds the constructors to an
// oracle: the bindings are accepted exactly when every name is one GKE
// accepts and no two are the same, and an accepted mapping round-trips
// through every form and binds each NIC to the network it was given.
func FuzzRDMARoundTrip(f *testing.F) {
	f.Add("rdma-0,rdma-1,rdma-2,rdma-3,rdma-4,rdma-5,rdma-6,rdma-7", "", uint64(0))
	f.Add("rdma-0,rdma-1,rdma-2,rdma-3,rdma-4,rdma-5,rdma-6,rdma-7", "gvnic-1", uint64(1))
	f.Add("a,b,c,d,e,f,g,h", "a", uint64(2))
	f.Add("a,b,c,d,e,f,g,g", "", uint64(3))
	f.Add("a,B,c,d,e,f,g,h", "x-", uint64(4))
	f.Add("a,b,c,d,e,f,g", "", uint64(5))
	f.Add(strings.Repeat("n,", 7)+strings.Repeat("z", 42), " ", uint64(6))
	f.Fuzz(func(t *testing.T, nets, gvnic string, order uint64) {
		names := strings.Split(nets, ",")
		if len(names) != 8 {
			return
		}
		bs := []Binding{}
		for i, n := range names {
			bs = append(bs, Binding{Interface: RDMA.GPUInterfaces()[i], Network: n})
		}
		if gvnic != "" {
			bs = append(bs, Binding{Interface: "eth1", Network: gvnic})
		}
		given := slices.Clone(bs)
		r := rand.New(rand.NewPCG(order, order>>32))
		r.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })

		valid := true
		seen := map[string]bool{}
		for _, b := range given {
			if len(b.Network) > MaxNetworkNameLength || !networkNamePattern.MatchString(b.Network) || seen[b.Network] {
				valid = false
			}
			seen[b.Network] = true
		}

		m, err := RDMA.FromBindings(bs)
		if (err == nil) != valid {
			t.Fatalf("RDMA.FromBindings(%v) = %v, %v; the oracle says valid = %v", bs, m, err, valid)
		}
		if err != nil {
			checkRejected(t, m, err, false)
			return
		}
		checkAcceptedLayout(t, RDMA, m)
		for _, b := range given {
			if n, ok := m.Network(b.Interface); !ok || n != b.Network {
				t.Fatalf("%s was given %q, the mapping has %q, %v", b.Interface, b.Network, n, ok)
			}
		}
		if _, ok := m.Network("eth1"); ok != (gvnic != "") {
			t.Fatalf("eth1 bound = %v, given %q", ok, gvnic)
		}
	})
}
