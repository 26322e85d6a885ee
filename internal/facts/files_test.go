package facts

import (
	"slices"
	"testing"
)

func TestReferencedPluginFiles(t *testing.T) {
	lib := "/usr/local/nvidia/lib64"
	got := ReferencedPluginFiles(lib, []EnvVar{
		{Name: "LD_LIBRARY_PATH", Value: lib + ":/other"},
		{Name: "NCCL_TUNER_PLUGIN", Value: "libnccl-tuner.so"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: lib + "/a3plus_tuner_config.textproto"},
	}, []EnvVar{
		{Name: "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", Value: lib + "/a3plus_guest_config.textproto"},
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: lib + "/a3plus_tuner_config.textproto"},
		{Name: "ELSEWHERE", Value: "/opt/x.textproto"},
	})
	want := []string{"a3plus_guest_config.textproto", "a3plus_tuner_config.textproto", "libnccl-tuner.so"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
