package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Resource bounds of one evaluation. A profile is a few KiB that sets a few
// dozen short variables; these leave orders of magnitude of room while
// keeping a hostile script from exhausting memory before the timeout.
const (
	maxScriptBytes = 1 << 20
	maxEnvBytes    = 4 << 20  // all variable names and values of one shell
	maxOutputBytes = 16 << 20 // everything the script prints, captured or not
	maxStderrKept  = 8 << 10  // error output kept for error messages
	maxDepth       = 1000     // statements running inside one another, function calls included
	maxRefusalArgs = 8
	maxRefusalArg  = 256
)

// hookRoot starts every path the instrumentation opens. The per-evaluation
// nonce that follows makes the paths unguessable, so a script cannot open a
// hook it did not get from the instrumentation.
const hookRoot = "/.tcpxogen-sandbox-"

// recorder is the state of one evaluation: it implements the interpreter's
// handlers and keeps the frames, shells and taints. Handlers of pipeline
// sides run concurrently, so everything is guarded by mu.
type recorder struct {
	mu         sync.Mutex
	prog       *program
	hookPrefix string
	lookupCmd  string // rewritten command name for command -v and type
	initial    map[string]string
	main       *shell
	rootScope  *posScope
	rootDirect *cause
	openFrames map[*frame]struct{}
	latest     *stmtInfo      // the statement started last, for timeout messages
	order      map[string]int // main-shell variables in the order they were first exported
	lastLine   map[string]int // main-shell variables: line of the statement that last set them

	refusals    map[refusalKey]*Refusal
	lastRefusal *cause

	answers map[string]string // declared answers: what each argv prints, by answerKey
	probes  map[probeKey][]string

	abort    context.CancelCauseFunc
	outBytes atomic.Int64
	stdout   *rootWriter
	stderr   *rootWriter
}

type refusalKey struct {
	command   string
	line, col int
}

type probeKey struct {
	argv      string // answerKey of the argv
	line, col int
}

func newRecorder(prog *program, hookPrefix string, initial map[string]string, answers map[string]string, abort context.CancelCauseFunc) *recorder {
	r := &recorder{
		prog:       prog,
		hookPrefix: hookPrefix,
		lookupCmd:  hookPrefix + "lookup",
		initial:    initial,
		main:       &shell{main: true, taints: taintMap{}},
		rootScope:  &posScope{},
		openFrames: map[*frame]struct{}{},
		order:      map[string]int{},
		lastLine:   map[string]int{},
		refusals:   map[refusalKey]*Refusal{},
		answers:    answers,
		probes:     map[probeKey][]string{},
		abort:      abort,
	}
	// The interpreter fills these from the machine it runs on; a value
	// derived from them would describe the evaluator, not the profile.
	for _, name := range []string{"HOME", "UID", "EUID", "GID", "PWD"} {
		if _, ok := initial[name]; !ok {
			r.main.setTaint(name, &cause{kind: causeHost, name: name, subject: name})
		}
	}
	r.stdout = &rootWriter{r: r}
	r.stderr = &rootWriter{r: r, keep: true}
	return r
}

// fail stops the evaluation with err as its cause.
func (r *recorder) fail(err error) error {
	r.abort(err)
	return err
}

// frameOf finds the frame a handler call belongs to from the writers the
// interpreter passes: the innermost statement's hook writers, or writers the
// sandbox opened while it ran. A user redirection can replace one of
// stdout and stderr, rarely both.
func (r *recorder) frameOf(ws ...io.Writer) (*frame, bool) {
	for _, w := range ws {
		switch w := w.(type) {
		case *hookWriter:
			return w.f, true
		case *devWriter:
			return w.f, true
		case *rootWriter:
			return nil, true
		}
	}
	return nil, false
}

func (r *recorder) resolve(hc interp.HandlerContext, what string) (*frame, error) {
	if f, ok := r.frameOf(hc.Stdout, hc.Stderr); ok {
		return f, nil
	}
	// The statement closed both its stdout and stderr. A simple command can
	// still be found by its position.
	if hc.Pos.IsValid() {
		var found *frame
		n := 0
		for f := range r.openFrames {
			if f.info.callPos == hc.Pos {
				found, n = f, n+1
			}
		}
		if n == 1 {
			return found, nil
		}
	}
	return nil, r.fail(fmt.Errorf("%w: %s: cannot tell which statement %s: it closed both its stdout and its stderr (>&- 2>&-), which the sandbox follows statements by; keep one of them open",
		ErrUnsupported, r.at(hc.Pos, nil), what))
}

func (r *recorder) at(pos syntax.Pos, f *frame) string {
	if pos.IsValid() && (f == nil || !f.eval) {
		return fmt.Sprintf("%s:%d", r.prog.name, pos.Line())
	}
	if f != nil {
		return fmt.Sprintf("%s:%d", r.prog.name, f.info.line)
	}
	return r.prog.name
}

// refuse records a refused operation in frame f (nil: outside any statement)
// and taints f with it.
func (r *recorder) refuse(f *frame, kind causeKind, command string, args []string, pos syntax.Pos, subject string) {
	line, col := position(f, pos)
	key := refusalKey{command: command, line: line, col: col}
	if _, seen := r.refusals[key]; !seen {
		r.refusals[key] = &Refusal{Command: command, Args: clipArgs(args), Line: line}
	}
	source := command
	if kind == causeDenied && len(args) > 0 {
		source = args[0]
	}
	c := &cause{kind: kind, name: source, subject: subject, line: line, col: col}
	r.lastRefusal = c
	if f == nil {
		r.rootDirect = earliest(r.rootDirect, c)
		return
	}
	f.direct = earliest(f.direct, c)
	r.markTainted(f, c)
}

// position is the script position of an operation at pos in frame f (nil:
// outside any statement). Code run by eval has no positions of its own in
// the script, so the eval statement's position stands for it.
func position(f *frame, pos syntax.Pos) (line, col int) {
	switch {
	case pos.IsValid() && (f == nil || !f.eval):
		return int(pos.Line()), int(pos.Col())
	case f != nil:
		return f.info.line, f.info.col
	}
	return 0, 0
}

func clipArgs(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	out := slices.Clone(args[:min(len(args), maxRefusalArgs)])
	for i, a := range out {
		if len(a) > maxRefusalArg {
			out[i] = a[:maxRefusalArg] + "..."
		}
	}
	return out
}

// sortedRefusals lists the refusals by script position: concurrent pipeline
// sides make the order they happened in vary from run to run.
func (r *recorder) sortedRefusals() []Refusal {
	keys := slices.Collect(maps.Keys(r.refusals))
	slices.SortFunc(keys, func(a, b refusalKey) int {
		if a.line != b.line {
			return a.line - b.line
		}
		if a.col != b.col {
			return a.col - b.col
		}
		return strings.Compare(a.command, b.command)
	})
	out := make([]Refusal, len(keys))
	for i, k := range keys {
		out[i] = *r.refusals[k]
	}
	return out
}

// sortedProbes lists the answered commands by script position, then argv.
func (r *recorder) sortedProbes() []Probe {
	keys := slices.Collect(maps.Keys(r.probes))
	slices.SortFunc(keys, func(a, b probeKey) int {
		if a.line != b.line {
			return a.line - b.line
		}
		if a.col != b.col {
			return a.col - b.col
		}
		return strings.Compare(a.argv, b.argv)
	})
	var out []Probe
	for _, k := range keys {
		out = append(out, Probe{Args: r.probes[k], Line: k.line})
	}
	return out
}

// checkEnvSize stops a script whose variables grow without bound, such as
// x=$x$x in a loop, long before it could exhaust memory.
func (r *recorder) checkEnvSize(size int, f *frame) error {
	if size <= maxEnvBytes {
		return nil
	}
	return r.fail(fmt.Errorf("%w: %s: the script's variables grew past %d bytes; a profile sets a few short variables",
		ErrLimit, r.at(syntax.Pos{}, f), maxEnvBytes))
}

// open is the interpreter's open handler. Besides files, it receives the
// instrumentation's hook paths.
func (r *recorder) open(ctx context.Context, path string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	if rest, ok := strings.CutPrefix(path, r.hookPrefix); ok {
		return r.openHook(hc, rest)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.HasPrefix(path, hookRoot) {
		return nil, r.fail(fmt.Errorf("%w: %s opens %s, a path reserved for the evaluator's instrumentation", ErrUnsupported, r.prog.name, path))
	}
	write := flag&(os.O_WRONLY|os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_TRUNC) != 0
	f, err := r.resolve(hc, "opened "+path)
	if err != nil {
		return nil, err
	}
	switch path {
	case "/dev/null":
		return &devWriter{r: r, f: f}, nil
	case "/dev/stdout", "/dev/fd/1":
		if write {
			return &devWriter{r: r, f: f, fwd: hc.Stdout}, nil
		}
	case "/dev/stderr", "/dev/fd/2":
		if write {
			return &devWriter{r: r, f: f, fwd: hc.Stderr}, nil
		}
	}
	if write {
		return nil, r.fail(fmt.Errorf("%w: %s: the script writes %s; a profile may only set variables, and the sandbox has no file system to write to",
			ErrWrite, r.at(syntax.Pos{}, f), path))
	}
	r.refuse(f, causeDenied, "open", []string{path}, syntax.Pos{}, "file "+path)
	return nil, &os.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
}

func (r *recorder) openHook(hc interp.HandlerContext, rest string) (io.ReadWriteCloser, error) {
	kind, idStr, _ := strings.Cut(rest, "/")
	kind += "/"
	id, err := strconv.Atoi(idStr)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || id < 0 || id >= len(r.prog.stmts) || (kind != hookOut && kind != hookErr) {
		return nil, r.fail(fmt.Errorf("%w: %s opens a malformed instrumentation path", ErrUnsupported, r.prog.name))
	}
	info := r.prog.stmts[id]
	if kind == hookErr {
		// Opened right after the statement's stdout hook, which is now stdout.
		w, ok := hc.Stdout.(*hookWriter)
		if !ok || w.f.info != info || w.f.errOpen {
			return nil, r.fail(fmt.Errorf("%w: %s:%d: instrumentation path opened out of order", ErrUnsupported, r.prog.name, info.line))
		}
		w.f.errOpen = true
		return &hookWriter{r: r, f: w.f, fwd: hc.Stderr}, nil
	}
	parent, ok := r.frameOf(hc.Stdout, hc.Stderr)
	if !ok {
		if parent, ok = r.staticParent(info); !ok {
			return nil, r.fail(fmt.Errorf("%w: %s:%d: cannot tell which statement runs this one: the enclosing statement closed both its stdout and its stderr (>&- 2>&-); keep one of them open",
				ErrUnsupported, r.prog.name, info.line))
		}
	}
	if parent != nil && parent.depth >= maxDepth {
		// Unbounded recursion would grow the interpreter's Go stack until
		// the process dies, which no timeout can stop.
		return nil, r.fail(fmt.Errorf("%w: %s:%d: statements nest more than %d deep (runaway recursion?); a profile needs a few levels",
			ErrLimit, r.prog.name, info.line, maxDepth))
	}
	snap, size := takeSnapshot(hc.Env)
	if err := r.checkEnvSize(size, parent); err != nil {
		return nil, err
	}
	f := r.startFrame(info, parent, hc.Env, snap)
	return &hookWriter{r: r, f: f, fwd: hc.Stdout, primary: true}, nil
}

// staticParent finds the open run of the statement that lexically encloses
// info, for the rare run whose writers carry no frame.
func (r *recorder) staticParent(info *stmtInfo) (*frame, bool) {
	if info.parent == nil {
		return nil, len(r.main.stack) == 0
	}
	var found *frame
	n := 0
	for f := range r.openFrames {
		if f.info == info.parent {
			found, n = f, n+1
		}
	}
	return found, n == 1
}

func (r *recorder) closeHook(f *frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap, size := takeSnapshot(f.view)
	_ = r.checkEnvSize(size, f) // the evaluation stops; the frame is closed regardless
	r.endFrame(f, snap)
}

func (r *recorder) stat(ctx context.Context, path string, _ bool) (fs.FileInfo, error) {
	return nil, r.deny(ctx, "stat", path, "whether "+path+" exists")
}

func (r *recorder) access(ctx context.Context, path string, _ interp.AccessMode) error {
	return r.deny(ctx, "access", path, "the permissions of "+path)
}

// readDir answers every directory as empty, so a glob matches nothing and
// stays literal, as on an empty file system; the listing is recorded as a
// refusal because its real answer depends on the machine.
func (r *recorder) readDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	if err := r.deny(ctx, "readdir", path, "the contents of directory "+path); !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return nil, nil
}

func (r *recorder) deny(ctx context.Context, op, path, subject string) error {
	hc := interp.HandlerCtx(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := r.resolve(hc, "accessed "+path)
	if err != nil {
		return err
	}
	r.refuse(f, causeDenied, op, []string{path}, syntax.Pos{}, subject)
	return &os.PathError{Op: op, Path: path, Err: fs.ErrNotExist}
}

// exec is the last handler of the chain: it never runs anything. A command
// with a declared answer prints it and succeeds. A refused command fails
// like a command that is not installed, which is what the discovery code of
// a profile is written to survive.
func (r *recorder) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	if args[0] == r.lookupCmd {
		return r.lookup(hc, args[1], args[2:])
	}
	r.mu.Lock()
	f, err := r.resolve(hc, "ran "+args[0])
	if err != nil {
		r.mu.Unlock()
		return err
	}
	key := answerKey(args)
	stdout, answered := r.answers[key]
	if !answered {
		defer r.mu.Unlock()
		r.refuse(f, causeRefused, args[0], args[1:], hc.Pos, strconv.Quote(args[0]))
		return interp.ExitStatus(127)
	}
	line, col := position(f, hc.Pos)
	pk := probeKey{argv: key, line: line, col: col}
	if _, seen := r.probes[pk]; !seen {
		r.probes[pk] = slices.Clone(args)
	}
	r.mu.Unlock()
	// Written without the lock: the reader of a pipe may need it to go on.
	if _, err := io.WriteString(hc.Stdout, stdout); err != nil {
		// The reader is gone (a real command would die of SIGPIPE), or the
		// output bound stopped the evaluation, whose cause then reports it.
		return interp.ExitStatus(141)
	}
	return nil
}

// lookup answers command -v, command -V and type without consulting the
// host's PATH: builtins and the script's functions are found, anything else
// is a refused lookup and not found.
func (r *recorder) lookup(hc interp.HandlerContext, mode string, names []string) error {
	var out, errOut strings.Builder
	missing := false
	r.mu.Lock()
	f, err := r.resolve(hc, "looked up commands")
	if err != nil {
		r.mu.Unlock()
		return err
	}
	for _, name := range names {
		kind := ""
		switch {
		case r.prog.funcs[name]:
			kind = "function"
		case interp.IsBuiltin(name):
			kind = "builtin"
		}
		if kind == "" {
			missing = true
			r.refuse(f, causeDenied, "command -v", []string{name}, hc.Pos, fmt.Sprintf("whether command %q exists", name))
			if mode != "-v" {
				fmt.Fprintf(&errOut, "%s: not found\n", name)
			}
			continue
		}
		switch mode {
		case "-v":
			fmt.Fprintf(&out, "%s\n", name)
		case "-t":
			fmt.Fprintf(&out, "%s\n", kind)
		default:
			if kind == "builtin" {
				fmt.Fprintf(&out, "%s is a shell builtin\n", name)
			} else {
				fmt.Fprintf(&out, "%s is a function\n", name)
			}
		}
	}
	r.mu.Unlock()
	io.WriteString(hc.Stdout, out.String())
	io.WriteString(hc.Stderr, errOut.String())
	if missing {
		return interp.ExitStatus(1)
	}
	return nil
}

// call is the interpreter's call handler, run before every simple command,
// builtins included. It enforces the rules that need the expanded words and
// records what the command assigns.
func (r *recorder) call(ctx context.Context, args []string) ([]string, error) {
	hc := interp.HandlerCtx(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := r.resolve(hc, "ran "+args[0])
	if err != nil {
		return nil, err
	}
	if f != nil && hc.Pos == f.info.callPos {
		f.calledOwn = true
	}
	i := 0
	for i < len(args)-1 && (args[i] == "builtin" || args[i] == "command") {
		if args[i] == "command" {
			switch args[i+1] {
			case "-v", "-V":
				return append([]string{r.lookupCmd, args[i+1]}, args[i+2:]...), nil
			case "-p":
				if i+2 < len(args) {
					i++
				}
			}
		}
		i++
	}
	name, rest := args[i], args[i+1:]
	where := r.at(hc.Pos, f)
	switch name {
	case "source", ".":
		return nil, r.fail(fmt.Errorf("%w: %s: %s %s: the sandbox has no files, so what the sourced file would set cannot be evaluated; inline it into the profile",
			ErrUnsupported, where, name, strings.Join(rest, " ")))
	case "eval":
		if err := r.noteEval(f, where, rest); err != nil {
			return nil, err
		}
	case "trap":
		if setsTrap(rest) {
			return nil, r.fail(fmt.Errorf("%w: %s: trap: trap handlers run code at times the sandbox does not follow; remove the trap", ErrUnsupported, where))
		}
	case "alias":
		for _, a := range rest {
			if strings.Contains(a, "=") {
				return nil, r.fail(fmt.Errorf("%w: %s: alias %s: aliases rewrite code at run time; use a function", ErrUnsupported, where, a))
			}
		}
	case "type":
		mode := "-V"
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			if rest[0] == "-t" {
				mode = "-t"
			}
			rest = rest[1:]
		}
		return append([]string{r.lookupCmd, mode}, rest...), nil
	case "return":
		// A profile is sourced, where return at the top ends the script;
		// the interpreter only allows it in functions.
		if !r.inFunction(f) {
			args = slices.Clone(args)
			args[i] = "exit"
		}
	case "set":
		if params, ok := setParams(rest); ok {
			scope := r.scopeOf(f)
			scope.count = len(params)
			scope.taint = r.frameTaint(f, hc)
		}
	case "pwd", "dirs":
		// They print the sandbox's working directory, which stands in for
		// the directory of whoever sources the profile: like $PWD.
		if f != nil {
			line := int(hc.Pos.Line())
			if f.eval || !hc.Pos.IsValid() {
				line = f.info.line
			}
			c := &cause{kind: causeHost, name: name, subject: "the working directory (" + name + ")", line: line, col: int(hc.Pos.Col())}
			f.direct = earliest(f.direct, c)
			r.markTainted(f, c)
		}
	case "shift":
		n := 1
		if len(rest) > 0 {
			n, _ = strconv.Atoi(rest[0])
		}
		scope := r.scopeOf(f)
		scope.count = max(0, scope.count-n)
	}
	if f != nil {
		f.dynTargets = append(f.dynTargets, commandTargets(name, rest)...)
		if i == 0 && r.prog.funcs[name] {
			f.funcCall = true
			f.scope = &posScope{count: len(rest), taint: r.frameTaint(f, hc)}
		}
	}
	return args, nil
}

// frameTaint is f's expansion taint at a call: its words are expanded, its
// command has not run.
func (r *recorder) frameTaint(f *frame, hc interp.HandlerContext) *cause {
	if f == nil {
		return r.rootDirect
	}
	cur, _ := takeSnapshot(hc.Env)
	return r.expansionTaint(f, cur)
}

// noteEval checks code built at run time like the script itself and adds
// what it reads and assigns to the frame running it.
func (r *recorder) noteEval(f *frame, where string, words []string) error {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(strings.Join(words, " ")), "")
	if err != nil {
		return nil // eval itself reports the error and fails
	}
	if err := checkSupported(where+": eval", file, true); err != nil {
		return r.fail(err)
	}
	if f != nil {
		reads, targets := collectDeep(file)
		f.eval = true
		f.dynReads = append(f.dynReads, reads...)
		f.dynTargets = append(f.dynTargets, targets...)
	}
	return nil
}

func setsTrap(args []string) bool {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return false // listing, or trap with only a signal
	}
	return args[0] != "-" && args[0] != ""
}

// setParams returns the new positional parameters of a set command, if it
// sets them.
func setParams(args []string) ([]string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:], true
		case a == "-o" || a == "+o":
			i++
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
		default:
			return args[i:], true
		}
	}
	return nil, false
}

// commandTargets are the variables a builtin assigns, from its expanded words.
func commandTargets(name string, args []string) []target {
	var names []string
	switch name {
	case "read":
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "--" {
				names = args[i+1:]
				break
			}
			if strings.HasPrefix(a, "-") && len(a) > 1 {
				if len(a) == 2 && strings.ContainsRune("pdtnNui", rune(a[1])) {
					i++
				}
				continue
			}
			names = args[i:]
			break
		}
		if len(names) == 0 {
			names = []string{"REPLY"}
		}
	case "mapfile", "readarray":
		names = []string{"MAPFILE"}
		if n := len(args); n > 0 && syntax.ValidName(args[n-1]) {
			names = []string{args[n-1]}
		}
	case "printf":
		if len(args) > 1 && args[0] == "-v" {
			names = []string{args[1]}
		}
	case "getopts":
		if len(args) > 1 {
			names = []string{args[1], "OPTARG", "OPTIND"}
		}
	case "unset":
		for _, a := range args {
			if a == "-f" {
				return nil
			}
			if !strings.HasPrefix(a, "-") {
				names = append(names, a)
			}
		}
	case "cd", "pushd", "popd":
		names = []string{"PWD", "OLDPWD"}
	}
	var ts []target
	for _, n := range names {
		if syntax.ValidName(n) {
			ts = append(ts, target{name: n, kind: assigns})
		}
	}
	return ts
}

// checkOutput bounds what the script prints and stops it if it prints the
// instrumentation (declare -f prints function bodies, hooks included): a
// script that learns a hook path could forge frames.
func (r *recorder) checkOutput(p []byte) error {
	if r.outBytes.Add(int64(len(p))) > maxOutputBytes {
		return r.fail(fmt.Errorf("%w: %s printed more than %d bytes; a profile sets variables", ErrLimit, r.prog.name, maxOutputBytes))
	}
	if bytes.Contains(p, []byte(r.hookPrefix)) {
		return r.fail(fmt.Errorf("%w: %s printed the evaluator's instrumentation (a function body?); a profile must not print its own code", ErrUnsupported, r.prog.name))
	}
	return nil
}

// hookWriter is the stdout (primary) or stderr of one statement run. It
// forwards to the writer the statement inherited. Closing the primary one
// is the statement's end.
type hookWriter struct {
	r       *recorder
	f       *frame
	fwd     io.Writer
	primary bool
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if err := w.r.checkOutput(p); err != nil {
		return 0, err
	}
	return w.fwd.Write(p)
}

func (w *hookWriter) Read([]byte) (int, error) {
	return 0, errors.New("instrumentation writer is write-only")
}

func (w *hookWriter) Close() error {
	if w.primary {
		w.r.closeHook(w.f)
	}
	return nil
}

// devWriter stands for /dev/null, /dev/stdout and /dev/stderr, remembering
// the frame that opened it so handler calls made through it stay attributed.
type devWriter struct {
	r   *recorder
	f   *frame
	fwd io.Writer // nil: /dev/null
}

func (w *devWriter) Write(p []byte) (int, error) {
	if w.fwd == nil {
		return len(p), nil
	}
	if err := w.r.checkOutput(p); err != nil {
		return 0, err
	}
	return w.fwd.Write(p)
}

func (w *devWriter) Read([]byte) (int, error) { return 0, io.EOF }
func (w *devWriter) Close() error             { return nil }

// rootWriter is the script's own stdout (discarded) or stderr (the start of
// it kept for error messages).
type rootWriter struct {
	r    *recorder
	keep bool
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (w *rootWriter) Write(p []byte) (int, error) {
	if err := w.r.checkOutput(p); err != nil {
		return 0, err
	}
	if w.keep {
		w.mu.Lock()
		if room := maxStderrKept - w.buf.Len(); room > 0 {
			w.buf.Write(p[:min(len(p), room)])
		}
		w.mu.Unlock()
	}
	return len(p), nil
}

func (w *rootWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
