package imagefs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSymlinks(t *testing.T) {
	cases := []struct {
		name     string
		layers   [][]entry
		want     string
		resolved string
		data     string
	}{
		{
			name:     "relative",
			layers:   [][]entry{{file("lib/libx.so.1", "x"), symlink("lib/libx.so", "libx.so.1")}},
			want:     "/lib/libx.so",
			resolved: "/lib/libx.so.1", data: "x",
		},
		{
			name:     "relative with dot-dot",
			layers:   [][]entry{{file("opt/real/f", "f"), symlink("usr/f", "../opt/real/f")}},
			want:     "/usr/f",
			resolved: "/opt/real/f", data: "f",
		},
		{
			name:     "absolute target is inside the image root",
			layers:   [][]entry{{file("opt/real/f", "f"), symlink("usr/f", "/opt/real/f")}},
			want:     "/usr/f",
			resolved: "/opt/real/f", data: "f",
		},
		{
			name:     "dot-dot never climbs above the root",
			layers:   [][]entry{{file("f", "root f"), symlink("a/l", "../../../../f")}},
			want:     "/a/l",
			resolved: "/f", data: "root f",
		},
		{
			name:     "symlink in a parent component",
			layers:   [][]entry{{file("usr/local/nvidia/lib64/libcuda.so", "cuda"), symlink("nv", "usr/local/nvidia")}},
			want:     "/nv/lib64/libcuda.so",
			resolved: "/usr/local/nvidia/lib64/libcuda.so", data: "cuda",
		},
		{
			name: "target lives in a lower layer",
			layers: [][]entry{
				{file("usr/lib/x86_64-linux-gnu/libfoo.so.1", "foo")},
				{symlink("plugins/libfoo.so", "/usr/lib/x86_64-linux-gnu/libfoo.so.1")},
			},
			want:     "/plugins/libfoo.so",
			resolved: "/usr/lib/x86_64-linux-gnu/libfoo.so.1", data: "foo",
		},
		{
			name: "parent symlink in a lower layer",
			layers: [][]entry{
				{symlink("lib", "usr/lib")},
				{file("usr/lib/libbar.so", "bar")},
			},
			want:     "/lib/libbar.so",
			resolved: "/usr/lib/libbar.so", data: "bar",
		},
		{
			name: "nccl chain",
			layers: [][]entry{{
				dir("third_party/nccl-netsupport/build/lib/"),
				symlink("third_party/nccl-netsupport/build/lib/libnccl.so", "libnccl.so.2"),
				symlink("third_party/nccl-netsupport/build/lib/libnccl.so.2", "libnccl.so.2.28.7"),
				file("third_party/nccl-netsupport/build/lib/libnccl.so.2.28.7", "nccl 2.28.7"),
			}},
			want:     "/third_party/nccl-netsupport/build/lib/libnccl.so",
			resolved: "/third_party/nccl-netsupport/build/lib/libnccl.so.2.28.7", data: "nccl 2.28.7",
		},
		{
			name:     "hard link to a symlink behaves as the symlink",
			layers:   [][]entry{{file("d/real", "r"), symlink("d/sym", "real"), hardlink("d/hl", "d/sym")}},
			want:     "/d/hl",
			resolved: "/d/real", data: "r",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := imageOf(t, tc.layers...)
			res := mustScan(t, img, content(tc.want))
			f := res.Files[tc.want]
			if f == nil {
				t.Fatalf("%s not found", tc.want)
			}
			if f.Resolved != tc.resolved || string(f.Data) != tc.data {
				t.Errorf("resolved %s to %s with %q, want %s with %q", tc.want, f.Resolved, f.Data, tc.resolved, tc.data)
			}
		})
	}
}

func TestSymlinkChainInOneLayerNeedsNoReread(t *testing.T) {
	img := imageOf(t,
		[]entry{file("base", "b")},
		[]entry{
			symlink("lib/libnccl.so", "libnccl.so.2"),
			symlink("lib/libnccl.so.2", "libnccl.so.2.28.7"),
			file("lib/libnccl.so.2.28.7", "nccl"),
		},
	)
	res := mustScan(t, img, content("/lib/libnccl.so"))
	if res.Stats.Rereads != 0 || !slices.Equal(img.opens(), []int32{0, 1}) {
		t.Errorf("rereads = %d, opens = %v: a chain streamed in order must be buffered on the way", res.Stats.Rereads, img.opens())
	}
}

func TestSymlinkPointingUpIntoAReadLayerRereadsIt(t *testing.T) {
	// The top layer is read before anything points at its /data/f; the
	// symlink below makes it the answer.
	img := imageOf(t,
		[]entry{symlink("etc/conf", "/data/f")},
		[]entry{file("data/f", "upper content")},
	)
	res := mustScan(t, img, content("/etc/conf"))
	f := res.Files["/etc/conf"]
	if string(f.Data) != "upper content" || f.Layer != img.digest(t, 1) || f.Resolved != "/data/f" {
		t.Errorf("file = %+v", f)
	}
	if res.Stats.Rereads != 1 || !slices.Equal(img.opens(), []int32{1, 2}) {
		t.Errorf("rereads = %d, opens = %v, want one re-read of the top layer", res.Stats.Rereads, img.opens())
	}
}

func TestSymlinkTargetStreamedBeforeTheLinkIsReread(t *testing.T) {
	img := imageOf(t, []entry{file("a/target", "t"), symlink("z/link", "/a/target")})
	res := mustScan(t, img, content("/z/link"))
	if fileData(t, res, "/z/link") != "t" || res.Stats.Rereads != 1 {
		t.Errorf("data = %q, rereads = %d", res.Files["/z/link"].Data, res.Stats.Rereads)
	}
}

func TestSymlinkLoopIsAnErrorNamingTheChain(t *testing.T) {
	img := imageOf(t, []entry{symlink("a", "b"), symlink("b", "/a")})
	_, err := scan(t, img, content("/a"))
	if err == nil || !strings.Contains(err.Error(), "symlink loop resolving /a: /a -> b, /b -> /a") {
		t.Errorf("error = %v, want a loop naming the chain", err)
	}
}

func TestTooManySymlinkHopsIsAnError(t *testing.T) {
	var es []entry
	for i := range 45 {
		es = append(es, symlink(fmt.Sprintf("l%d", i), fmt.Sprintf("l%d", i+1)))
	}
	es = append(es, file("l45", "end"))
	img := imageOf(t, es)

	_, err := scan(t, img, content("/l0"))
	if err == nil || !strings.Contains(err.Error(), "followed more than 40 links (Limits.MaxSymlinkHops)") ||
		!strings.Contains(err.Error(), "/l0 -> l1, /l1 -> l2") {
		t.Errorf("error = %v, want the hop limit and the chain", err)
	}
	res := mustScan(t, img, content("/l0"), WithLimits(Limits{MaxSymlinkHops: 45}))
	if fileData(t, res, "/l0") != "end" {
		t.Error("raising MaxSymlinkHops must let the chain resolve")
	}
}

func TestAbsoluteSymlinkToHostPathStaysInsideTheImage(t *testing.T) {
	// The host running the tests has /etc/shadow; the image must never see it.
	t.Run("missing in the image", func(t *testing.T) {
		img := imageOf(t, []entry{symlink("scripts/evil", "/etc/shadow"), symlink("scripts/evil2", "../../../etc/shadow")})
		res, err := scan(t, img, content("/scripts/evil", "/scripts/evil2"))
		m := wantMissing(t, err)
		if !slices.Equal(m.Paths, []string{"/scripts/evil", "/scripts/evil2"}) || len(res.Files) != 0 {
			t.Errorf("missing = %v, files = %v: the host file must never be read", m.Paths, res.Files)
		}
		if !strings.Contains(m.Reasons["/scripts/evil"], "/etc") {
			t.Errorf("reason = %q, want it to name the path inside the image", m.Reasons["/scripts/evil"])
		}
	})
	t.Run("present in the image", func(t *testing.T) {
		img := imageOf(t, []entry{file("etc/shadow", "image's own"), symlink("scripts/evil", "/etc/shadow")})
		res := mustScan(t, img, content("/scripts/evil"))
		if got := fileData(t, res, "/scripts/evil"); got != "image's own" {
			t.Errorf("content = %q, want the image's file", got)
		}
	})
}

func TestDanglingSymlinkIsMissingWithReason(t *testing.T) {
	img := imageOf(t, []entry{symlink("lib/libnccl.so", "libnccl.so.2")})
	_, err := scan(t, img, content("/lib/libnccl.so"))
	m := wantMissing(t, err)
	if got := m.Reasons["/lib/libnccl.so"]; got != "its links lead to /lib/libnccl.so.2, which is not in the image" {
		t.Errorf("reason = %q", got)
	}
}

func TestSymlinkThroughWhiteoutIsMissing(t *testing.T) {
	img := imageOf(t,
		[]entry{file("real", "r")},
		[]entry{symlink("link", "real"), whiteout("", "real")},
	)
	_, err := scan(t, img, content("/link"))
	m := wantMissing(t, err)
	if !strings.Contains(m.Reasons["/link"], "whiteout") {
		t.Errorf("reason = %q", m.Reasons["/link"])
	}
	if img.opens()[0] != 0 {
		t.Error("the whited-out target must not be looked for below")
	}
}
