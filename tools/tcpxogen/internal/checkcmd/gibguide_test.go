package checkcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/markdown"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// gibGuide is the gIB workload guide, from this package's directory.
var gibGuide = filepath.Join("..", "..", "..", "..", "docs", "gib-workloads.md")

// The gIB guide's examples are what `check trainjob` says they are: each
// TrainJob block passes (exit 0), each block fenced "```yaml pitfall" fails
// (exit 1) naming what loses the fabric. The page must keep a correct
// TrainJob of every gIB runtime and a pitfall, or this proves nothing.
func TestCheckTrainJobGIBGuide(t *testing.T) {
	page, err := os.ReadFile(gibGuide)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	correct := map[string]int{}
	pitfalls := 0
	for _, b := range markdown.YAMLBlocks(page) {
		runtime := gibRuntimeOf(string(b.Content))
		if runtime == "" {
			continue
		}
		pitfall := b.Info == "pitfall"
		if pitfall {
			pitfalls++
		} else {
			correct[runtime]++
		}
		t.Run(fmt.Sprintf("line-%d", b.Line), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("line-%d.yaml", b.Line))
			if err := os.WriteFile(path, b.Content, 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runCheck(t, "trainjob", path)
			switch {
			case pitfall && code != cli.ExitFailure:
				t.Fatalf("a pitfall of %s: exit %d, want %d:\n%s", gibGuide, code, cli.ExitFailure, out)
			case pitfall && !strings.Contains(out, "FAIL") || pitfall && !strings.Contains(out, "would lose the "+fabric.GIB.Title+" fabric"):
				t.Fatalf("a pitfall of %s fails without naming what loses the %s fabric:\n%s", gibGuide, fabric.GIB.Title, out)
			case !pitfall && code != cli.ExitOK:
				t.Fatalf("an example of %s: exit %d, want %d:\n%s", gibGuide, code, cli.ExitOK, out)
			}
		})
	}
	for _, mt := range fabric.GIB.MachineTypes {
		if rt := fabric.GIB.RuntimeFor(mt.Name); correct[rt] == 0 {
			t.Errorf("%s has no correct TrainJob of %s", gibGuide, rt)
		}
	}
	if pitfalls == 0 {
		t.Errorf("%s has no pitfall", gibGuide)
	}
}

// gibRuntimeOf is the gIB runtime a YAML block's TrainJob references, ""
// when the block is no TrainJob of one.
func gibRuntimeOf(block string) string {
	if !strings.Contains(block, "kind: TrainJob") {
		return ""
	}
	for _, mt := range fabric.GIB.MachineTypes {
		if rt := fabric.GIB.RuntimeFor(mt.Name); strings.Contains(block, "name: "+rt+"\n") {
			return rt
		}
	}
	return ""
}
