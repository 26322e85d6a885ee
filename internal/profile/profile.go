package profile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Var is one exported variable.
type Var struct{ Name, Value string }

// Defaults of Options.
const (
	// DefaultLibDir is where a workload pod sees the installed plugin: the
	// installer copies it to the host, and pods mount the host directory at
	// /usr/local/nvidia.
	DefaultLibDir  = "/usr/local/nvidia/lib64"
	DefaultTimeout = 2 * time.Second
)

// Options configure one evaluation.
type Options struct {
	// LibDir is the value of NCCL_LIB_DIR; DefaultLibDir if empty. It must
	// be an absolute, clean path without ':' (it is put into a path list).
	LibDir string
	// Timeout bounds the evaluation; DefaultTimeout if zero.
	Timeout time.Duration
	// Env is extra initial environment, normally empty. It may not set
	// NCCL_LIB_DIR (use LibDir) and may set LD_LIBRARY_PATH, which
	// otherwise starts empty.
	Env []Var
	// Answers are what named commands print on the machine type the
	// profile is evaluated for, such as nvidia-smi's GPU name. A command
	// whose argv equals an answer's Args exactly prints its Stdout and
	// exits 0, untainted; every other command is refused as without
	// answers. Each argv may be answered once, and not for a shell
	// builtin, which the sandbox runs itself.
	Answers []Answer
}

// An Answer is what one command prints on a machine type: declared data
// about the machine, not something the sandbox runs.
type Answer struct {
	// Args is the exact argv, the command name first, as the script
	// expands it: "nvidia-smi" and "/usr/bin/nvidia-smi" are different.
	Args []string
	// Stdout is what the command prints; it counts toward the evaluation's
	// output bound like everything else the script prints.
	Stdout string
}

// A Probe is one use of a declared answer: the script ran a command that
// Options.Answers answered.
type Probe struct {
	// Args is the answered argv.
	Args []string
	// Line is the script line, starting at 1; 0 if unknown.
	Line int
}

// A Refusal is one operation the sandbox refused. Discovery code in a
// profile probes the machine; in the sandbox every probe fails the way a
// missing tool or file does, so the profile keeps its defaults. Refusals are
// recorded so that this is visible.
type Refusal struct {
	// Command is the external command that was not run, such as "ls", or the
	// file-system operation that was denied: "open", "stat", "access",
	// "readdir", or "command -v" for a command lookup.
	Command string
	// Args are the command's arguments, or the path or name the operation
	// was about, as first seen at this position of the script.
	Args []string
	// Line is the script line, starting at 1; 0 if unknown.
	Line int
}

// Result is what a profile exports.
type Result struct {
	// Vars are the exported variables in the order the script first
	// exported them. Inputs (NCCL_LIB_DIR, LD_LIBRARY_PATH, Options.Env)
	// appear only if the script changed their value.
	Vars []Var
	// Refused lists each refused operation once per script position,
	// ordered by position.
	Refused []Refusal
	// Normalized names the list variables (names ending in PATH) whose
	// value had empty elements removed, in the order of Vars.
	Normalized []string
	// Answered lists the declared answers the script used, once per
	// script position and argv, ordered by position: the probes of the
	// machine the result depends on.
	Answered []Probe
}

// Errors of Evaluate. An error wraps one of them, except when ctx ends
// (it then wraps ctx's cause) or the interpreter fails internally. A joined
// report of several unresolved exports wraps ErrUnresolved, ErrUnset or both.
var (
	ErrSyntax      = errors.New("profile script does not parse")
	ErrUnsupported = errors.New("profile script uses a construct the sandbox does not evaluate")
	ErrWrite       = errors.New("profile script writes a file")
	ErrTimeout     = errors.New("profile evaluation timed out")
	ErrLimit       = errors.New("profile evaluation exceeded a resource limit")
	ErrFailed      = errors.New("profile script failed")
	ErrUnresolved  = errors.New("exported value depends on something the sandbox cannot provide")
	ErrUnset       = errors.New("exported value depends on an unset variable")
	ErrOptions     = errors.New("invalid profile evaluation options")
)

// An UnresolvedError reports one exported variable whose value the sandbox
// cannot vouch for. It wraps ErrUnset when the value depends on a variable
// with no value, and ErrUnresolved otherwise.
type UnresolvedError struct {
	Script string
	Var    string
	// Line is the line of the statement that last set Var; 0 if unknown.
	Line int
	// Source is what the value depends on: the refused command, the denied
	// path, or the unset or host-provided variable.
	Source string
	// SourceLine is where Source was refused or read; 0 if unknown.
	SourceLine int
	// Via are the variables the value travelled through, Source's end first.
	Via []string

	unset   bool
	noValue bool
	cause   *cause
}

func (e *UnresolvedError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(" (line %d)", e.Line)
	}
	what := "depends" + e.cause.describe()
	if e.noValue {
		what = "has no value: the statement that was to set it depends" + e.cause.describe()
	}
	var fix string
	switch {
	case e.cause.kind == causeUnset && strings.HasPrefix(e.Source, "$"):
		fix = fmt.Sprintf("pass the argument, or use a default (${%s:-value})", e.Source[1:])
	case e.cause.kind == causeUnset:
		fix = fmt.Sprintf("give %s a value in the script, a default (${%s:-value}), or pass it in Options.Env", e.Source, e.Source)
	case e.cause.kind == causeHost:
		fix = fmt.Sprintf("do not derive %s from the machine the profile is sourced on, or record a reviewed override for it", e.Var)
	default:
		fix = fmt.Sprintf("compute %s without external commands or files, or record a reviewed override for it", e.Var)
	}
	return fmt.Sprintf("profile %s: exported variable %s%s %s; %s", e.Script, e.Var, at, what, fix)
}

func (e *UnresolvedError) Unwrap() error {
	if e.unset {
		return ErrUnset
	}
	return ErrUnresolved
}

// Evaluate runs a profile script in a sandboxed shell interpreter and returns
// the variables it exports. name is the script's name for positions and
// messages. See the package documentation for the sandbox's rules.
func Evaluate(ctx context.Context, name string, script []byte, opts Options) (*Result, error) {
	if name == "" {
		name = "profile"
	}
	opts, env, initial, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	answers, err := indexAnswers(opts.Answers)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	if len(script) > maxScriptBytes {
		return nil, fmt.Errorf("%w: profile %s is %d bytes, more than the %d a profile script can plausibly need", ErrLimit, name, len(script), maxScriptBytes)
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("profile %s: instrumentation nonce: %w", name, err)
	}
	hookPrefix := hookRoot + hex.EncodeToString(nonce[:]) + "/"
	prog, err := compile(name, script, hookPrefix)
	if err != nil {
		return nil, err
	}

	base, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	runCtx, cancel := context.WithTimeout(base, opts.Timeout)
	defer cancel()
	rec := newRecorder(prog, hookPrefix, initial, answers, abort)
	runner, err := interp.New(
		interp.Env(expand.ListEnviron(env...)),
		interp.Dir("/"),
		interp.StdIO(nil, rec.stdout, rec.stderr),
		interp.CallHandler(rec.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return rec.exec }),
		interp.OpenHandler(rec.open),
		interp.StatHandler(rec.stat),
		interp.AccessHandler(rec.access),
		interp.ReadDirHandler2(rec.readDir),
	)
	if err != nil {
		return nil, fmt.Errorf("profile %s: set up interpreter: %w", name, err)
	}
	runErr := runner.Run(runCtx, prog.file)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch cause := context.Cause(base); {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("profile %s: evaluation stopped: %w", name, context.Cause(ctx))
	case cause != nil:
		return nil, cause // the sandbox stopped the script; the cause says why
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		where := ""
		if rec.latest != nil {
			where = fmt.Sprintf(" (it was running line %d)", rec.latest.line)
		}
		return nil, fmt.Errorf("%w: %s did not finish within %s%s; a profile runs in milliseconds, so it probably loops forever: %w",
			ErrTimeout, name, opts.Timeout, where, runCtx.Err())
	case runErr != nil:
		if status, ok := errors.AsType[interp.ExitStatus](runErr); ok {
			return nil, rec.failure(int(status))
		}
		return nil, fmt.Errorf("profile %s: interpreter: %w", name, runErr)
	}
	return rec.finish(runner.Vars)
}

func (o Options) resolve() (Options, []string, map[string]string, error) {
	if o.LibDir == "" {
		o.LibDir = DefaultLibDir
	}
	if !path.IsAbs(o.LibDir) || path.Clean(o.LibDir) != o.LibDir || strings.ContainsAny(o.LibDir, ":\x00\n") {
		return o, nil, nil, fmt.Errorf("%w: LibDir %q must be an absolute, clean path without ':', such as %s", ErrOptions, o.LibDir, DefaultLibDir)
	}
	switch {
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	case o.Timeout < 0:
		return o, nil, nil, fmt.Errorf("%w: Timeout %s is negative; use 0 for the default of %s", ErrOptions, o.Timeout, DefaultTimeout)
	}
	// LD_LIBRARY_PATH starts empty rather than unset: profiles prepend to it
	// with ${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}, which must not count as a read
	// of an unset variable. The empty element this leaves is normalized away.
	initial := map[string]string{"NCCL_LIB_DIR": o.LibDir, "LD_LIBRARY_PATH": ""}
	for _, v := range o.Env {
		switch {
		case !syntax.ValidName(v.Name):
			return o, nil, nil, fmt.Errorf("%w: Env variable name %q is not a valid shell name", ErrOptions, v.Name)
		case v.Name == "NCCL_LIB_DIR":
			return o, nil, nil, fmt.Errorf("%w: Env sets NCCL_LIB_DIR; set Options.LibDir instead", ErrOptions)
		case strings.ContainsRune(v.Value, 0):
			return o, nil, nil, fmt.Errorf("%w: Env variable %s contains a NUL byte, which no environment can hold", ErrOptions, v.Name)
		}
		if _, dup := initial[v.Name]; dup && v.Name != "LD_LIBRARY_PATH" {
			return o, nil, nil, fmt.Errorf("%w: Env sets %s twice", ErrOptions, v.Name)
		}
		initial[v.Name] = v.Value
	}
	env := make([]string, 0, len(initial))
	for _, name := range slices.Sorted(maps.Keys(initial)) {
		env = append(env, name+"="+initial[name])
	}
	return o, env, initial, nil
}

// answerKey is the key of an argv in the answer index; no argument holds a
// NUL byte, so joining with one is unambiguous.
func answerKey(args []string) string { return strings.Join(args, "\x00") }

// indexAnswers checks the declared answers and indexes what they print by
// argv.
func indexAnswers(answers []Answer) (map[string]string, error) {
	index := make(map[string]string, len(answers))
	first := make(map[string]int, len(answers))
	for i, a := range answers {
		switch {
		case len(a.Args) == 0 || a.Args[0] == "":
			return nil, fmt.Errorf("%w: Answers[%d] names no command; Args is the argv, the command name first", ErrOptions, i)
		case interp.IsBuiltin(a.Args[0]):
			return nil, fmt.Errorf("%w: Answers[%d] answers %s, a shell builtin the sandbox runs itself; answer only external commands", ErrOptions, i, a.Args[0])
		case slices.ContainsFunc(a.Args, func(s string) bool { return strings.ContainsRune(s, 0) }):
			return nil, fmt.Errorf("%w: Answers[%d] (%s) has an argument with a NUL byte, which no argv can hold", ErrOptions, i, a.Args[0])
		case len(a.Stdout) > maxOutputBytes:
			return nil, fmt.Errorf("%w: Answers[%d] (%s) prints %d bytes, more than the %d an evaluation may print", ErrOptions, i, a.Args[0], len(a.Stdout), maxOutputBytes)
		}
		key := answerKey(a.Args)
		if j, dup := first[key]; dup {
			return nil, fmt.Errorf("%w: Answers[%d] and Answers[%d] answer the same command %q", ErrOptions, j, i, strings.Join(a.Args, " "))
		}
		first[key] = i
		index[key] = a.Stdout
	}
	return index, nil
}

// failure reports a script that exited non-zero, with its own error output.
func (r *recorder) failure(status int) error {
	msg := fmt.Sprintf("%s exited with status %d", r.prog.name, status)
	if out := strings.TrimSpace(r.stderr.String()); out != "" {
		msg += "; its error output: " + out
	}
	if status == 127 && r.lastRefusal != nil && r.lastRefusal.kind == causeRefused {
		msg += fmt.Sprintf("; the sandbox refused to run command %s at line %d and failed it as not installed", r.lastRefusal.subject, r.lastRefusal.line)
	}
	return fmt.Errorf("%w: %s", ErrFailed, msg)
}

// finish settles the last changes of the main shell and assembles the result.
func (r *recorder) finish(vars map[string]expand.Variable) (*Result, error) {
	final := snapshot{}
	for name, v := range vars {
		final[name] = stateOf(v)
	}
	sh := r.main
	if sh.last != nil {
		r.attribute(sh, sh.top(), sh.last, final, false)
	}
	for sh.top() != nil {
		r.retire(sh.top())
	}

	type exported struct {
		Var
		rank int
	}
	var out []exported
	var unresolved []*UnresolvedError
	for _, name := range slices.Sorted(maps.Keys(final)) {
		st := final[name]
		if !st.exported || (st.set && st.kind != expand.String) {
			continue // only scalars reach the environment
		}
		if c := sh.taints[name]; c != nil {
			unresolved = append(unresolved, r.unresolved(name, c, !st.set))
			continue
		}
		if !st.set {
			continue // export X with X unset exports nothing, as in bash
		}
		if v, ok := r.initial[name]; ok && v == st.value {
			continue // an input the script left alone
		}
		rank, ok := r.order[name]
		if !ok {
			rank = math.MaxInt
		}
		out = append(out, exported{Var: Var{Name: name, Value: st.value}, rank: rank})
	}
	if len(unresolved) > 0 {
		slices.SortStableFunc(unresolved, func(a, b *UnresolvedError) int {
			return cmpRank(r.rankOf(a.Var), r.rankOf(b.Var))
		})
		errs := make([]error, len(unresolved))
		for i, e := range unresolved {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(out, func(a, b exported) int {
		if c := cmpRank(a.rank, b.rank); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	res := &Result{Refused: r.sortedRefusals(), Answered: r.sortedProbes()}
	for _, v := range out {
		if strings.HasSuffix(v.Name, "PATH") {
			if n := dropEmptyElements(v.Value); n != v.Value {
				v.Value = n
				res.Normalized = append(res.Normalized, v.Name)
			}
		}
		res.Vars = append(res.Vars, v.Var)
	}
	return res, nil
}

func cmpRank(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r *recorder) rankOf(name string) int {
	if rank, ok := r.order[name]; ok {
		return rank
	}
	return math.MaxInt
}

func (r *recorder) unresolved(name string, c *cause, noValue bool) *UnresolvedError {
	return &UnresolvedError{
		Script:     r.prog.name,
		Var:        name,
		Line:       r.lastLine[name],
		Source:     c.name,
		SourceLine: c.line,
		Via:        slices.Clone(c.via),
		unset:      c.kind == causeUnset,
		noValue:    noValue,
		cause:      c,
	}
}

// dropEmptyElements removes empty elements from a ':'-separated path list.
// An empty element means the current directory to the dynamic loader and to
// PATH lookup, which is never what a profile prepending to an empty list
// intends.
func dropEmptyElements(list string) string {
	elems := strings.Split(list, ":")
	return strings.Join(slices.DeleteFunc(elems, func(e string) bool { return e == "" }), ":")
}
