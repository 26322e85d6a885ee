package profile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// causeKind classifies why the sandbox cannot vouch for a value.
type causeKind uint8

const (
	causeRefused causeKind = iota // output of an external command the sandbox did not run
	causeDenied                   // result of a file-system access the sandbox did not allow
	causeUnset                    // a variable with no value
	causeHost                     // a value the interpreter takes from the machine running the evaluator
	causeStatus                   // $? after a refused command or denied access
)

// cause is where a tainted value came from. Causes are immutable: values
// share them, and through returns a copy.
type cause struct {
	kind    causeKind
	name    string // the command, path or variable itself
	subject string // the same, worded for a message
	line    int    // script line of the refusal or of the read
	col     int
	via     []string // variables the value travelled through, source first
}

const maxVia = 8

func (c *cause) through(name string) *cause {
	if c == nil || name == c.name || len(c.via) >= maxVia || (len(c.via) > 0 && c.via[len(c.via)-1] == name) {
		return c
	}
	n := *c
	n.via = append(slices.Clone(c.via), name)
	return &n
}

// before orders causes by script position. Where several causes compete
// (both sides of a pipe refused at once), the earliest in the script wins,
// so reports do not depend on goroutine scheduling.
func before(a, b *cause) bool {
	switch {
	case b == nil:
		return a != nil
	case a == nil:
		return false
	case a.line != b.line:
		return a.line < b.line
	case a.col != b.col:
		return a.col < b.col
	case a.kind != b.kind:
		return a.kind < b.kind
	}
	return a.name < b.name
}

func earliest(a, b *cause) *cause {
	if before(b, a) {
		return b
	}
	return a
}

// describe completes "X depends...": " on <source>" or ", through A then B,
// on <source>".
func (c *cause) describe() string {
	at := ""
	if c.line > 0 {
		at = fmt.Sprintf(" at line %d", c.line)
	}
	var s string
	switch c.kind {
	case causeRefused:
		s = fmt.Sprintf("the output of command %s%s, which the sandbox does not run", c.subject, at)
	case causeDenied:
		s = fmt.Sprintf("%s%s, which the sandbox does not provide", c.subject, at)
	case causeUnset:
		s = fmt.Sprintf("variable %s, which is unset where line %d reads it", c.subject, c.line)
	case causeHost:
		s = fmt.Sprintf("%s%s, which the interpreter would take from the machine running the evaluator", c.subject, at)
	case causeStatus:
		s = fmt.Sprintf("the exit status of %s%s, which the sandbox refused", c.subject, at)
	}
	if len(c.via) > 0 {
		return ", through " + strings.Join(c.via, " then ") + ", on " + s
	}
	return " on " + s
}

// taintMap maps variable names to the cause of their taint; clean variables
// are absent. Frames keep the map of the moment they opened, so a published
// map is never written again: every change copies it.
type taintMap map[string]*cause

// varState is the part of a shell variable the bookkeeping compares.
type varState struct {
	set, exported, local bool
	kind                 expand.ValueKind
	value                string
}

type snapshot map[string]varState

func stateOf(v expand.Variable) varState {
	st := varState{set: v.IsSet(), exported: v.Exported, local: v.Local, kind: v.Kind}
	switch v.Kind {
	case expand.String, expand.NameRef:
		st.value = v.Str
	case expand.Indexed:
		var b strings.Builder
		for i, s := range v.List {
			if v.Indexes != nil {
				b.WriteString(strconv.Itoa(v.Indexes[i]))
			}
			b.WriteByte(0)
			b.WriteString(s)
			b.WriteByte(0)
		}
		st.value = b.String()
	case expand.Associative:
		keys := slices.Sorted(maps.Keys(v.Map))
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(k)
			b.WriteByte(0)
			b.WriteString(v.Map[k])
			b.WriteByte(0)
		}
		st.value = b.String()
	}
	return st
}

// takeSnapshot copies the variables visible in env. Each visits outer scopes
// before inner ones, so a later visit of a name is the one in effect.
func takeSnapshot(env expand.Environ) (snapshot, int) {
	s := snapshot{}
	env.Each(func(name string, v expand.Variable) bool {
		s[name] = stateOf(v)
		return true
	})
	size := 0
	for name, st := range s {
		size += len(name) + len(st.value)
	}
	return s, size
}

func changedNames(a, b snapshot) []string {
	var names []string
	for name, st := range b {
		if a[name] != st {
			names = append(names, name)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok && a[name] != (varState{}) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// frame is one run of one statement.
type frame struct {
	info   *stmtInfo
	parent *frame
	depth  int
	shell  *shell
	// view is the interpreter's live view of the variables of the frame's
	// shell. It may only be read from the goroutine running that shell, which
	// is where the frame's open and close events arrive.
	view   expand.Environ
	open   snapshot
	taints taintMap // the shell's taints when the frame opened: what its expansions saw

	// Causes are kept earliest-by-position (see before), not first-come.
	direct  *cause // refusal in the frame's own operations
	capture *cause // taint in a command substitution the frame expanded
	subtree *cause // taint anywhere in the frame or below it

	errOpen    bool // the statement's stderr hook is open too
	calledOwn  bool // the frame's own simple command ran (so X=v prefixes were temporary)
	funcCall   bool // the frame's own command called a shell function
	eval       bool // the frame ran eval: code the static pass never saw
	closed     bool
	scope      *posScope // positional parameters of the function the frame called
	dynReads   []varRead
	dynTargets []target
	stash      map[string]*cause // global taints hidden by locals of the function the frame called

	subshells   map[syntax.Node]*shell
	pipeSources map[*syntax.BinaryCmd]*frame
	sinkNames   map[string]bool // variables the right side of the frame's pipe assigned
}

func (f *frame) line() int {
	if f == nil {
		return 0
	}
	return f.info.line
}

// shell is one shell process of the script: the main shell or a subshell.
// Statements of one shell run one at a time in one goroutine, so its frames
// nest strictly.
type shell struct {
	main   bool
	stack  []*frame
	last   snapshot // the variables at the shell's previous frame event
	taints taintMap
}

func (sh *shell) top() *frame {
	if len(sh.stack) == 0 {
		return nil
	}
	return sh.stack[len(sh.stack)-1]
}

func (sh *shell) setTaint(name string, c *cause) {
	if sh.taints[name] == c {
		return
	}
	t := maps.Clone(sh.taints)
	if t == nil {
		t = taintMap{}
	}
	if c == nil {
		delete(t, name)
	} else {
		t[name] = c
	}
	sh.taints = t
}

// posScope is the positional parameters in effect: those of a function call,
// or the script's own (none, unless it runs set --).
type posScope struct {
	count int
	taint *cause
}

func (r *recorder) shellOf(f *frame) *shell {
	if f == nil {
		return r.main
	}
	return f.shell
}

func (r *recorder) scopeOf(f *frame) *posScope {
	for g := f; g != nil; g = g.parent {
		if g.scope != nil {
			return g.scope
		}
	}
	return r.rootScope
}

func (r *recorder) inFunction(f *frame) bool {
	for g := f; g != nil; g = g.parent {
		if g.funcCall {
			return true
		}
	}
	return false
}

// startFrame registers a new run of info whose parent frame is parent.
func (r *recorder) startFrame(info *stmtInfo, parent *frame, view expand.Environ, snap snapshot) *frame {
	f := &frame{info: info, parent: parent, view: view, open: snap}
	if parent != nil {
		f.depth = parent.depth + 1
	}
	r.latest = info
	switch info.rel {
	case sameShell:
		f.shell = r.shellOf(parent)
	case substMember, subshellMember:
		if parent != nil && !info.first {
			f.shell = parent.subshells[info.container]
		}
		if f.shell == nil {
			f.shell = &shell{taints: r.shellOf(parent).taints}
			if parent != nil {
				if parent.subshells == nil {
					parent.subshells = map[syntax.Node]*shell{}
				}
				parent.subshells[info.container] = f.shell
			}
		}
	case pipeSource:
		f.shell = &shell{taints: r.shellOf(parent).taints}
		if parent != nil {
			if parent.pipeSources == nil {
				parent.pipeSources = map[*syntax.BinaryCmd]*frame{}
			}
			parent.pipeSources[info.pipe] = f
		}
	}
	sh := f.shell
	// Frames of the shell that are still open but are not the new frame's
	// parent will never close (exec kept their redirections): retire them.
	for top := sh.top(); top != nil && top != parent; top = sh.top() {
		r.retire(top)
	}
	if sh.last != nil {
		r.attribute(sh, sh.top(), sh.last, snap, false)
	}
	sh.last = snap
	f.taints = sh.taints
	sh.stack = append(sh.stack, f)
	r.openFrames[f] = struct{}{}
	return f
}

// endFrame closes f with the variables of its shell as they are now.
func (r *recorder) endFrame(f *frame, snap snapshot) {
	if f.closed {
		return
	}
	f.closed = true
	delete(r.openFrames, f)
	sh := f.shell
	i := slices.Index(sh.stack, f)
	if i < 0 {
		r.settle(f, snap)
		return
	}
	for len(sh.stack) > i+1 {
		r.retire(sh.top())
	}
	sh.stack = sh.stack[:i]
	r.attribute(sh, f, sh.last, snap, true)
	sh.last = snap
	if f.stash != nil {
		for _, name := range slices.Sorted(maps.Keys(f.stash)) {
			sh.setTaint(name, f.stash[name])
		}
	}
	// Both sides of the frame's pipe are done: whatever the left side's
	// taint is now is final, and reaches everything the right side assigned.
	for _, src := range f.pipeSources {
		if src.subtree == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(f.sinkNames)) {
			sh.setTaint(name, src.subtree)
		}
	}
}

// retire pops a frame that will never close and settles its taint.
func (r *recorder) retire(f *frame) {
	sh := f.shell
	sh.stack = sh.stack[:len(sh.stack)-1]
	delete(r.openFrames, f)
	f.closed = true
	r.settle(f, f.open)
}

func (r *recorder) settle(f *frame, cur snapshot) {
	if c := r.expansionTaint(f, cur); c != nil {
		r.markTainted(f, c)
	}
}

// attribute credits the variable changes between last and cur to f, the
// innermost open frame of sh (nil: no frame, the top of the shell). final
// says f has finished, so the variables it names are now assigned.
func (r *recorder) attribute(sh *shell, f *frame, last, cur snapshot, final bool) {
	var c *cause
	if f != nil {
		c = r.expansionTaint(f, cur)
		if c != nil {
			r.markTainted(f, c)
		}
	} else if sh.main {
		c = r.rootDirect
	}
	changed := changedNames(last, cur)
	if f != nil {
		changed = orderNames(changed, f)
	}
	for _, name := range changed {
		r.noteSink(f, sh, name)
		r.noteLocal(f, sh, name, last, cur)
		// A change never clears a taint by itself: a function's local going
		// out of scope also shows up as a change, and the global behind it
		// keeps whatever taint it had.
		if c != nil {
			sh.setTaint(name, c)
		}
		if sh.main {
			r.lastLine[name] = f.line()
			if st := cur[name]; st.exported && st.set {
				if _, seen := r.order[name]; !seen {
					r.order[name] = len(r.order)
				}
			}
		}
	}
	if !final || f == nil {
		return
	}
	for _, t := range slices.Concat(f.info.targets, f.dynTargets) {
		if t.kind == prefixAssign && f.calledOwn {
			continue // X=v cmd: the interpreter restored X after cmd
		}
		// A clean statement clears what it surely assigned, and what it may
		// assign if the value did change: then it did assign it.
		assigned := t.kind != mayAssign || slices.Contains(changed, t.name)
		switch {
		case c != nil:
			sh.setTaint(t.name, c)
		case assigned:
			sh.setTaint(t.name, nil)
		}
		if c != nil || assigned {
			r.noteSink(f, sh, t.name)
		}
		if sh.main && (c != nil || assigned) {
			r.lastLine[t.name] = f.line()
		}
	}
}

// noteSink records a variable assigned on the right side of a pipe, in the
// frame of the pipeline, which re-taints it once the left side is done.
func (r *recorder) noteSink(f *frame, sh *shell, name string) {
	for g := f; g != nil && g.shell == sh; g = g.parent {
		if g.info.pipeSink && g.parent != nil {
			if g.parent.sinkNames == nil {
				g.parent.sinkNames = map[string]bool{}
			}
			g.parent.sinkNames[name] = true
		}
	}
}

// noteLocal saves the taint of a global the moment a function makes a local
// of the same name, so the global's taint comes back when the function
// returns.
func (r *recorder) noteLocal(f *frame, sh *shell, name string, last, cur snapshot) {
	if !cur[name].local || last[name].local {
		return
	}
	for g := f; g != nil; g = g.parent {
		if !g.funcCall {
			continue
		}
		if g.stash == nil {
			g.stash = map[string]*cause{}
		}
		if _, done := g.stash[name]; !done {
			g.stash[name] = sh.taints[name]
		}
		return
	}
}

// orderNames puts names in the order the frame's statement names them, which
// is the order a multi-variable statement such as `export A=1 B=2` assigns.
func orderNames(names []string, f *frame) []string {
	rank := map[string]int{}
	for i, n := range slices.Concat(f.info.names, targetNames(f.dynTargets)) {
		if _, ok := rank[n]; !ok {
			rank[n] = i
		}
	}
	slices.SortStableFunc(names, func(a, b string) int {
		ra, oka := rank[a]
		rb, okb := rank[b]
		switch {
		case oka && okb:
			return ra - rb
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

func targetNames(ts []target) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.name
	}
	return names
}

// markTainted records that c reached f, and carries it up to every enclosing
// frame. Crossing out of a command substitution, it becomes the capture taint
// of the frame that expanded the substitution: that frame's own assignments
// then carry it.
func (r *recorder) markTainted(f *frame, c *cause) {
	for g := f; g != nil; g = g.parent {
		if g.subtree != nil && !before(c, g.subtree) {
			return // g and its ancestors hold a cause at least as early
		}
		g.subtree = c
		if g.info.rel == substMember && g.parent != nil {
			g.parent.capture = earliest(g.parent.capture, c)
		}
	}
}

// expansionTaint is the taint of the values f's own expansions produce: the
// taint its assignments carry.
func (r *recorder) expansionTaint(f *frame, cur snapshot) *cause {
	if f.direct != nil {
		return f.direct
	}
	if f.capture != nil {
		return f.capture
	}
	if c := r.inputTaint(f); c != nil {
		return c
	}
	for _, rd := range slices.Concat(f.info.reads, f.dynReads) {
		if c := r.readTaint(f, rd, cur, true); c != nil {
			return c
		}
	}
	return nil
}

// inputTaint is the taint of what f can read on standard input: the output
// of the left side of a pipe it or an enclosing statement sits on the right
// of. Data only flows through a pipe after it was written, so the left
// side's taint so far covers what f can have read; endFrame of the pipeline
// then applies the left side's final taint, so the outcome does not depend
// on scheduling.
func (r *recorder) inputTaint(f *frame) *cause {
	for g := f; g != nil; g = g.parent {
		if g.info.ownStdin {
			return nil
		}
		if g.info.pipeSink && g.parent != nil {
			if src := g.parent.pipeSources[g.info.pipe]; src != nil && src.subtree != nil {
				return src.subtree
			}
		}
	}
	return nil
}

var hostVars = map[string]bool{"$": true, "!": true, "PPID": true, "RANDOM": true, "SRANDOM": true, "BASHPID": true}

// readTaint is the taint one read in f's own words brings into f's values.
func (r *recorder) readTaint(f *frame, rd varRead, cur snapshot, followIndirect bool) *cause {
	name := rd.name
	if n, err := strconv.Atoi(name); err == nil || name == "@" || name == "*" || name == "#" {
		if name == "0" {
			// Sourced, $0 is the name of whoever sources the profile.
			return &cause{kind: causeHost, name: "$0", subject: "$0 (the sourcing shell's name)", line: rd.line}
		}
		scope := r.scopeOf(f)
		if scope.taint != nil && rd.mode != readPresence {
			return scope.taint.through("$" + name)
		}
		if err == nil && rd.mode == readValue && n > scope.count {
			return &cause{kind: causeUnset, name: "$" + name, subject: "$" + name, line: rd.line}
		}
		return nil
	}
	switch {
	case name == "?":
		if r.lastRefusal != nil {
			return &cause{kind: causeStatus, name: r.lastRefusal.name, subject: r.lastRefusal.subject, line: r.lastRefusal.line}
		}
		return nil
	case hostVars[name]:
		return &cause{kind: causeHost, name: "$" + name, subject: "$" + name, line: rd.line}
	case !syntax.ValidName(name):
		return nil
	}
	if v := f.open[name]; v.kind == expand.NameRef && syntax.ValidName(v.value) {
		if c := f.taints[name]; c != nil {
			return c.through(name)
		}
		name = v.value
	}
	was, now := f.open[name], cur[name]
	switch rd.mode {
	case readPresence:
		return nil
	case readIfNonEmpty:
		if !was.set || was.value == "" {
			return nil
		}
	case readIfSet:
		if !was.set {
			return nil
		}
	case readValue:
		if c := f.taints[name]; c != nil {
			return c.through(name)
		}
		// A read that follows an assignment of the same name in the same
		// statement (export A=1 B=$A) sees that assignment.
		if !was.set && (!rd.afterAssign || !now.set) {
			return &cause{kind: causeUnset, name: name, subject: name, line: rd.line}
		}
	case readIndirect:
		if c := f.taints[name]; c != nil {
			return c.through(name)
		}
		if !was.set {
			return &cause{kind: causeUnset, name: name, subject: name, line: rd.line}
		}
		if followIndirect && syntax.ValidName(was.value) {
			return r.readTaint(f, varRead{name: was.value, line: rd.line, mode: readValue}, cur, false)
		}
		return nil
	}
	if c := f.taints[name]; c != nil {
		return c.through(name)
	}
	return nil
}
