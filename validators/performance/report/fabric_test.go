package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
)

// gibRun judges busbw's reconstructed gIB log (busbw/testdata/gib/README.md:
// not a captured log) for the gib fabric.
func gibRun(t *testing.T) (*busbw.Log, busbw.Verdict) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "busbw", "testdata", "gib", "a3ultra-2node-gib.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := busbw.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	fab, err := busbw.LookupFabric("gib")
	if err != nil {
		t.Fatal(err)
	}
	floor, err := busbw.ParseFloor(">= 300")
	if err != nil {
		t.Fatal(err)
	}
	return l, busbw.EvaluateFabric(l, floor, "", fab)
}

// A report of another fabric than TCPXO says which; TCPXO's reports stay
// as they were, without the key (the goldens hold them byte for byte).
func TestCTRFNamesAFabricOtherThanTheDefault(t *testing.T) {
	l, v := gibRun(t)
	data, err := CTRF(v, l, Context{RuntimeSource: "shipped"})
	if err != nil {
		t.Fatal(err)
	}
	_, tests := validateCTRF(t, data)
	extra := tests[0]["extra"].(map[string]any)
	if extra["fabric"] != "gib" || extra["network"] != "gIB" || tests[0]["status"] != "passed" {
		t.Errorf("headline: fabric %v, network %v, status %v; want gib, gIB, passed", extra["fabric"], extra["network"], tests[0]["status"])
	}
	if _, ok := extra["ncclVersionPinned"]; ok {
		t.Errorf("ncclVersionPinned = %v, but none was given", extra["ncclVersionPinned"])
	}

	tl, tv := judge(t, "healthy")
	tdata, err := CTRF(tv, tl, ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, ttests := validateCTRF(t, tdata)
	if f, ok := ttests[0]["extra"].(map[string]any)["fabric"]; ok {
		t.Errorf("a tcpxo report carries fabric %v", f)
	}

	v.Fabric = "tcpx"
	if _, err := CTRF(v, l, ctx); err == nil || !strings.Contains(err.Error(), `unknown fabric "tcpx"`) {
		t.Errorf("a verdict of an unknown fabric: error %v", err)
	}
	if _, err := Chart(l, v); err == nil || !strings.Contains(err.Error(), `unknown fabric "tcpx"`) {
		t.Errorf("a verdict of an unknown fabric: chart error %v", err)
	}
}

// The chart names the FasTrak plugin's version for TCPXO only: no gIB
// plugin version line is known.
func TestChartRunFactsFollowTheFabric(t *testing.T) {
	l, v := gibRun(t)
	svg, err := Chart(l, v)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if strings.Contains(s, "plugin") || !strings.Contains(s, "16 ranks on 2 node(s) · network gIB · NCCL 2.30.4+cuda13.0") {
		t.Errorf("gib chart facts line wrong:\n%s", s)
	}
	tl, tv := judge(t, "healthy")
	tsvg, err := Chart(tl, tv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tsvg), "network FasTrak · FasTrak plugin 1.0.15 · NCCL") {
		t.Error("the tcpxo chart lost its plugin version")
	}
}
