package profile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// gpuProbe is how a profile asks which GPU the machine has.
var gpuProbe = []string{"nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "--id=0"}

// A profile that picks its tuner by the machine's GPU, the way gIB's
// set_nccl_env.sh is believed to (its exact text is not public).
const machineBranch = `gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0)
case "$gpu" in
  *H200*) tuner=tuner_config_a3u.txtpb ;;
  *B200*) tuner=tuner_config_a4.txtpb ;;
  *) echo "unsupported GPU: $gpu" >&2; return 1 ;;
esac
export NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/$tuner
export GPU_NAME=$gpu
`

func TestAnsweredProbeChoosesTheBranch(t *testing.T) {
	for _, tc := range []struct {
		gpu  string
		want []Var
	}{
		{"NVIDIA H200\n", vars("NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a3u.txtpb", "GPU_NAME=NVIDIA H200")},
		{"NVIDIA B200\n", vars("NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb", "GPU_NAME=NVIDIA B200")},
	} {
		t.Run(tc.gpu, func(t *testing.T) {
			res := mustEvaluate(t, machineBranch, Options{Answers: []Answer{{Args: gpuProbe, Stdout: tc.gpu}}})
			assertVars(t, res, tc.want)
			if len(res.Refused) != 0 {
				t.Errorf("Refused = %+v, want none: the probe was answered", res.Refused)
			}
			if want := []Probe{{Args: gpuProbe, Line: 1}}; !reflect.DeepEqual(res.Answered, want) {
				t.Errorf("Answered = %+v, want %+v", res.Answered, want)
			}
		})
	}
}

func TestUnansweredProbeIsRefused(t *testing.T) {
	answers := []Answer{{Args: gpuProbe, Stdout: "NVIDIA H200\n"}}
	for _, tc := range []struct {
		name, script string
		refused      Refusal
	}{
		{"one word differs", "export GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=1)\n",
			Refusal{Command: "nvidia-smi", Args: []string{"--query-gpu=name", "--format=csv,noheader", "--id=1"}, Line: 1}},
		{"an extra word", "export GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0 -q)\n",
			Refusal{Command: "nvidia-smi", Args: []string{"--query-gpu=name", "--format=csv,noheader", "--id=0", "-q"}, Line: 1}},
		{"another path to the command", "export GPU=$(/usr/bin/nvidia-smi --query-gpu=name --format=csv,noheader --id=0)\n",
			Refusal{Command: "/usr/bin/nvidia-smi", Args: []string{"--query-gpu=name", "--format=csv,noheader", "--id=0"}, Line: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{Answers: answers})
			wantUnresolved(t, err, ErrUnresolved, "GPU", tc.refused.Command, 1)
			// The refusal is recorded as without answers.
			res := mustEvaluate(t, strings.Replace(tc.script, "export GPU=", "x=", 1)+"true\n", Options{Answers: answers})
			if want := []Refusal{tc.refused}; !reflect.DeepEqual(res.Refused, want) {
				t.Errorf("Refused = %+v, want %+v", res.Refused, want)
			}
			if len(res.Answered) != 0 {
				t.Errorf("Answered = %+v, want none", res.Answered)
			}
		})
	}
}

func TestAnsweredProbeFeedingARefusedCommandTaints(t *testing.T) {
	answers := []Answer{{Args: gpuProbe, Stdout: "NVIDIA H200\nNVIDIA H200\n"}}
	_, err := evaluate(t, "export GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0 | head -n1)\n", Options{Answers: answers})
	wantUnresolved(t, err, ErrUnresolved, "GPU", "head", 1)

	res := mustEvaluate(t, "x=$(nvidia-smi --query-gpu=name --format=csv,noheader --id=0 | head -n1) || true\n", Options{Answers: answers})
	if want := []Refusal{{Command: "head", Args: []string{"-n1"}, Line: 1}}; !reflect.DeepEqual(res.Refused, want) {
		t.Errorf("Refused = %+v, want %+v", res.Refused, want)
	}
	if want := []Probe{{Args: gpuProbe, Line: 1}}; !reflect.DeepEqual(res.Answered, want) {
		t.Errorf("Answered = %+v, want %+v", res.Answered, want)
	}
}

func TestAnsweredCommandSucceedsUntainted(t *testing.T) {
	list := []string{"nvidia-smi", "-L"}
	res := mustEvaluate(t, `if nvidia-smi -L >/dev/null; then have=yes; else have=no; fi
nvidia-smi -L >/dev/null
status=$?
n=0
while read -r line; do n=$((n + 1)); done <<EOF
$(nvidia-smi -L)
EOF
export HAVE=$have STATUS=$status GPUS=$n
`, Options{Answers: []Answer{{Args: list, Stdout: "GPU 0: NVIDIA B200\nGPU 1: NVIDIA B200\n"}}})
	assertVars(t, res, vars("HAVE=yes", "STATUS=0", "GPUS=2"))
	if want := []Probe{{Args: list, Line: 1}, {Args: list, Line: 2}, {Args: list, Line: 6}}; !reflect.DeepEqual(res.Answered, want) {
		t.Errorf("Answered = %+v, want each position once, in order: %+v", res.Answered, want)
	}
}

func TestProbesAreRecordedOncePerPositionAndArgv(t *testing.T) {
	res := mustEvaluate(t, `for i in 0 1 0 1; do
  nvidia-smi --id=$i >/dev/null
done
`, Options{Answers: []Answer{
		{Args: []string{"nvidia-smi", "--id=1"}, Stdout: "b\n"},
		{Args: []string{"nvidia-smi", "--id=0"}, Stdout: "a\n"},
	}})
	want := []Probe{{Args: []string{"nvidia-smi", "--id=0"}, Line: 2}, {Args: []string{"nvidia-smi", "--id=1"}, Line: 2}}
	if !reflect.DeepEqual(res.Answered, want) {
		t.Errorf("Answered = %+v, want %+v", res.Answered, want)
	}
}

func TestAnswerOutputIsBounded(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	_, err := evaluate(t, "while :; do nvidia-smi; done\n", Options{Answers: []Answer{{Args: []string{"nvidia-smi"}, Stdout: big}}})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "printed more than") {
		t.Fatalf("printing an answer forever: error = %v, want ErrLimit for the output", err)
	}
}

func TestAnswersValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []Answer
		want    string
	}{
		{"no argv", []Answer{{Stdout: "x"}}, "Answers[0] names no command"},
		{"empty command", []Answer{{Args: []string{""}}}, "Answers[0] names no command"},
		{"builtin", []Answer{{Args: []string{"echo", "x"}}}, "echo, a shell builtin"},
		{"NUL", []Answer{{Args: []string{"nvidia-smi", "a\x00b"}}}, "NUL"},
		{"duplicate", []Answer{{Args: gpuProbe}, {Args: []string{"a"}}, {Args: gpuProbe, Stdout: "x"}}, "Answers[0] and Answers[2]"},
		{"oversized output", []Answer{{Args: []string{"a"}, Stdout: strings.Repeat("x", maxOutputBytes+1)}}, "prints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, "export A=1\n", Options{Answers: tc.answers})
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrOptions mentioning %q", err, tc.want)
			}
		})
	}
}
