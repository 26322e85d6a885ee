package fabric

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A candidate env is a user's: any names and values must give complete,
// bounded findings, never a panic.
func FuzzCheck(f *testing.F) {
	f.Add("NCCL_NET=Socket\nNCCL_PROTO=Simple\nNCCL_DEBUG=INFO")
	f.Add("LD_LIBRARY_PATH=::/usr/local/nvidia/lib64:\nNCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/aperture_devices")
	f.Add("=\n=x\nNCCL_NET=\nNCCL_NET=FASTRAK")
	f.Fuzz(func(t *testing.T, in string) {
		rules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto")
		var cand []corev1.EnvVar
		for line := range strings.Lines(in) {
			name, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
			cand = append(cand, corev1.EnvVar{Name: name, Value: value})
		}
		for _, fd := range Check(runtimeEnv(), rules, cand) {
			if fd.Path == "" || fd.Kind == "" || fd.Severity < Note || fd.Severity > Fatal || fd.Reason == "" || fd.Fix == "" {
				t.Fatalf("incomplete finding %#v", fd)
			}
			if n := len(fd.Reason) + len(fd.Fix); n > 2000 {
				t.Fatalf("unbounded finding (%d bytes)", n)
			}
		}
	})
}
