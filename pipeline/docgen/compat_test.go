package docgen

import (
	"strings"
	"testing"
)

const v22 = `{"trainerVersion":"v2.2.0","rows":[
 {"case":"bare","summary":"runtimeRef only","trainerVersion":"v2.2.0","supported":true,"survives":{"annotations":true,"gpu limit":true},
  "launch":{"judged":true,"summary":"launch fails: rendezvous","problems":[{"check":"rendezvous","problem":"no PET_NNODES","cause":"no spec.trainer","upstream":"kubeflow/trainer issue 4076","fix":"add spec.trainer"}]},
  "launchKey":"no spec.trainer"},
 {"case":"cpu-only","summary":"cpu | memory","trainerVersion":"v2.2.0","supported":true,"survives":{"annotations":true,"gpu limit":false},"losesFabric":["gpu limit"],
  "changes":["resource lost: limits nvidia.com/gpu (8 -> <none>)"],"observed":{"limits nvidia.com/gpu":"<unset>"}},
 {"case":"env-debug","summary":"NCCL_DEBUG=INFO","trainerVersion":"v2.2.0","supported":true,"survives":{"annotations":true,"node env":false},
  "changes":["env overridden: env NCCL_DEBUG (WARN -> INFO)"]}]}`

const v23 = `{"trainerVersion":"v2.3.0","rows":[
 {"case":"bare","summary":"runtimeRef only","trainerVersion":"v2.3.0","supported":true,"survives":{"annotations":true,"gpu limit":true},
  "launch":{"judged":true,"summary":"launch ok","notes":["8 per node"]}},
 {"case":"cpu-only","summary":"cpu | memory","trainerVersion":"v2.3.0","supported":false,"note":"x"}]}`

func TestCompatMarkdown(t *testing.T) {
	a, err := ParseCompat("a", []byte(v22))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseCompat("b", []byte(v23))
	if err != nil {
		t.Fatal(err)
	}
	md := string(CompatMarkdown([]CompatReport{a, b}))
	for _, want := range []string{
		CompatHeader,
		"| TrainJob | wiring on v2.2.0 | wiring on v2.3.0 | launch on v2.2.0 | launch on v2.3.0 |",
		"| `bare`: runtimeRef only | wiring intact | wiring intact | **fails: rendezvous** | launch ok |",
		"| `cpu-only`: cpu \\| memory | **lost: gpu limit** | not expressible on this version | not judged | not expressible on this version |",
		"- resource lost: limits nvidia.com/gpu (8 -> <none>)",
		// A change the fabric survives, by the matrix's realize.Judge, is
		// shown as a change, never in bold as lost.
		"| `env-debug`: NCCL_DEBUG=INFO | fabric kept; changed: node env | not run | not judged | not run |",
		"**trainer v2.2.0**: fabric kept; changed: node env\n\n- env overridden: env NCCL_DEBUG (WARN -> INFO)\n",
		"  - rendezvous: no PET_NNODES\n    Cause: no spec.trainer. Upstream: kubeflow/trainer issue 4076. Fix: add spec.trainer.\n",
		"- launch key: `no spec.trainer`",
		"  - 8 per node\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if md != string(CompatMarkdown([]CompatReport{a, b})) {
		t.Error("not deterministic")
	}
}

func TestParseCompatRejects(t *testing.T) {
	for _, bad := range []string{`{}`, `{"trainerVersion":"v2.2.0","rows":[]}`, `{"trainerVersion":"v2.2.0","rows":[{"case":"x","bogus":1}]}`, `not json`} {
		if _, err := ParseCompat("x.json", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
