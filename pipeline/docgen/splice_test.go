package docgen

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/markdown"
)

func TestSplice(t *testing.T) {
	doc := []byte("intro\n" + begin("x") + "\nstale\n" + end("x") + "\noutro\n")
	out, err := Splice(doc, "x", "fresh\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n" + begin("x") + "\nfresh\n" + end("x") + "\noutro\n"; string(out) != want {
		t.Fatalf("got %q", out)
	}
	again, _ := Splice(out, "x", "fresh\n")
	if string(again) != string(out) {
		t.Fatal("splicing the same body twice changed the page")
	}
	if _, err := Splice([]byte("no markers"), "x", "y"); err == nil || !strings.Contains(err.Error(), "restore them") {
		t.Fatalf("missing markers must fail, got %v", err)
	}
	if _, err := Splice([]byte(end("x")+begin("x")), "x", "y"); err == nil {
		t.Fatal("markers out of order accepted")
	}
}

func TestYAMLBlocks(t *testing.T) {
	page := "text\n```sh\nls\n```\n```yaml\na: 1\n```\n  ```yaml pitfall\nb: 2\n  ```\n"
	bs := markdown.YAMLBlocks([]byte(page))
	if len(bs) != 2 || bs[0].Line != 5 || string(bs[0].Content) != "a: 1\n" || bs[1].Info != "pitfall" || string(bs[1].Content) != "b: 2\n" {
		t.Fatalf("blocks %+v", bs)
	}
}
