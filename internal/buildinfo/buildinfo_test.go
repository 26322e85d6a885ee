package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"installed at a tag", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206190000-0123456789ab"}}, "v0.0.0-20261206190000-0123456789ab"},
		{"checkout, clean", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4925c3712345678901234567890abcdef0123456"}, {Key: "vcs.modified", Value: "false"}}}, "devel+4925c3712345"},
		{"checkout, dirty", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4925c3712345678901234567890abcdef0123456"}, {Key: "vcs.modified", Value: "true"}}}, "devel+4925c3712345-dirty"},
		{"no VCS information", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Unknown},
	} {
		if got := FromBuildInfo(&tc.info); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
