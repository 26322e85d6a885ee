package imagefs

import (
	"slices"
	"testing"
)

func TestListings(t *testing.T) {
	cases := []struct {
		name     string
		layers   [][]entry
		want     string // what the scan wants (decides how deep it reads)
		dir      string
		entries  []string
		complete bool
	}{
		{
			name: "all layers read",
			layers: [][]entry{
				{file("plugins/libnccl-tuner.so", "t"), file("plugins/gone.so", "g"), dir("plugins/sub/")},
				{file("plugins/libnccl-net.so", "n"), symlink("plugins/libnccl-tuner-simple.so", "libnccl-tuner.so"), whiteout("plugins", "gone.so")},
			},
			want:     "/plugins/libnccl-tuner.so",
			dir:      "/plugins",
			entries:  []string{"libnccl-net.so", "libnccl-tuner-simple.so", "libnccl-tuner.so"},
			complete: true,
		},
		{
			name: "stopped early",
			layers: [][]entry{
				{file("plugins/base-only.so", "b")},
				{file("plugins/libnccl-net.so", "n")},
			},
			want:     "/plugins/libnccl-net.so",
			dir:      "/plugins",
			entries:  []string{"libnccl-net.so"},
			complete: false,
		},
		{
			name: "opaque directory proves completeness",
			layers: [][]entry{
				{file("plugins/base-only.so", "b")},
				{opaque("plugins"), file("plugins/libnccl-net.so", "n")},
			},
			want:     "/plugins/libnccl-net.so",
			dir:      "/plugins",
			entries:  []string{"libnccl-net.so"},
			complete: true,
		},
		{
			name: "whiteout of an ancestor proves completeness",
			layers: [][]entry{
				{file("opt/p/old.so", "b")},
				{whiteout("", "opt"), file("opt/p/new.so", "n")},
			},
			want:     "/opt/p/new.so",
			dir:      "/opt/p",
			entries:  []string{"new.so"},
			complete: true,
		},
		{
			name: "whited-out directory is empty and complete",
			layers: [][]entry{
				{file("old/x", "x")},
				{whiteout("", "old"), file("want", "w")},
			},
			want:     "/want",
			dir:      "/old",
			entries:  []string{},
			complete: true,
		},
		{
			name: "directory reached through a symlink",
			layers: [][]entry{
				{file("base", "b")},
				{symlink("lib", "usr/lib"), file("usr/lib/a.so", "a"), file("usr/lib/b.so", "b"), file("want", "w")},
			},
			want:     "/want",
			dir:      "/lib",
			entries:  []string{"a.so", "b.so"},
			complete: false,
		},
		{
			name: "unknown directory of a partial scan",
			layers: [][]entry{
				{file("elsewhere/x", "x")},
				{file("want", "w")},
			},
			want:     "/want",
			dir:      "/elsewhere",
			entries:  []string{},
			complete: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := imageOf(t, tc.layers...)
			res := mustScan(t, img, content(tc.want), WithList(tc.dir))
			got, ok := res.Listings[tc.dir]
			if !ok {
				t.Fatalf("no listing for %s", tc.dir)
			}
			if !slices.Equal(got.Entries, tc.entries) || got.Complete != tc.complete {
				t.Errorf("listing = %+v, want entries %v complete %v", got, tc.entries, tc.complete)
			}
		})
	}
}

func TestListingNeverExtendsTheScan(t *testing.T) {
	img := imageOf(t, []entry{file("plugins/a.so", "a")}, []entry{file("want", "w")})
	mustScan(t, img, content("/want"), WithList("/plugins"))
	if img.opens()[0] != 0 {
		t.Error("WithList made the scan read a layer the wants did not need")
	}
}
