package interfaces

import "testing"

// ValuesYAML writes what ParseYAML reads back to the same mapping.
func TestValuesYAMLRoundTrips(t *testing.T) {
	m, err := Parse("eth1=z-8,eth2=a-1,eth3=b,eth4=c,eth5=d,eth6=e,eth7=f,eth8=g")
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseYAML([]byte(m.ValuesYAML()))
	if err != nil || back != m {
		t.Errorf("ParseYAML(ValuesYAML) = %v, %v; want %v\n%s", back, err, m, m.ValuesYAML())
	}
	if (Mapping{}).ValuesYAML() != "" {
		t.Error("the zero Mapping wrote a document")
	}
}
