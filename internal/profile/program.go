package profile

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellRel says how a statement's run relates to the shell of the statement
// that runs it: the taint bookkeeping keeps one variable table per shell,
// because a subshell's assignments never reach its parent.
type shellRel uint8

const (
	sameShell      shellRel = iota // runs in the shell of the enclosing statement
	substMember                    // one of the statements of a command substitution
	subshellMember                 // one of the statements of ( ... )
	pipeSource                     // the left side of a pipe, run in its own subshell
)

// targetKind says how surely a statement assigns a variable it names, which
// decides whether a clean run of the statement may clear the variable's taint.
type targetKind uint8

const (
	assigns      targetKind = iota // assigned whenever the statement runs
	prefixAssign                   // `X=v cmd`: persistent only if the command words expand to nothing
	mayAssign                      // ${X:=v}, loop variables, arithmetic: only on some paths
)

type target struct {
	name string
	kind targetKind
}

// readMode says how much of a variable an expansion depends on. Fallback
// forms such as ${X:-default} are how profiles say "use X if it is there",
// so an empty or unset X there is a decision, not a missing value.
type readMode uint8

const (
	readValue      readMode = iota // $X: the value is used; unset is an error
	readIfNonEmpty                 // ${X:-w}, ${X:=w}: the value is used only when non-empty
	readIfSet                      // ${X-w}, ${X=w}, ${X?w}, X+=v: the value is used only when set
	readPresence                   // ${X:+w}, [[ -v X ]]: only whether X is set matters
	readIndirect                   // ${!X}: X names the variable whose value is used
)

type varRead struct {
	name        string
	line        int
	mode        readMode
	afterAssign bool // the statement assigns name before this read
}

// stmtInfo is what the static pass knows about one statement of the script.
// The evaluator instruments every statement so that each run of it opens a
// frame; the frame looks its statement up here.
type stmtInfo struct {
	id        int
	stmt      *syntax.Stmt
	line, col int
	parent    *stmtInfo // statically enclosing statement, nil at the top of the file
	rel       shellRel
	container syntax.Node // the *CmdSubst or *Subshell whose statements share one subshell
	first     bool        // first statement of container: its run starts a new subshell
	pipe      *syntax.BinaryCmd
	pipeSink  bool       // the right side of pipe, reading what the left side prints
	ownStdin  bool       // redirects its own standard input, so it does not read a pipe
	callPos   syntax.Pos // position of the command word of a simple command
	funcBody  bool       // the body of a function declaration: run by whoever calls it
	reads     []varRead  // variables its own words read (not those of nested statements)
	targets   []target   // variables its own words assign
	names     []string   // variables its own words name, in source order (export ordering)
}

// program is a parsed, checked and instrumented profile script.
type program struct {
	name  string
	file  *syntax.File
	stmts []*stmtInfo
	funcs map[string]bool // names of the functions the script declares
}

func parse(name string, src []byte) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w; fix the script or pin an installer whose profile parses as bash", ErrSyntax, err)
	}
	return f, nil
}

// compile parses the script, refuses constructs the sandbox cannot evaluate
// faithfully, analyses every statement and installs the frame hooks.
func compile(name string, src []byte, hookPrefix string) (*program, error) {
	f, err := parse(name, src)
	if err != nil {
		return nil, err
	}
	if err := checkSupported(name, f, false); err != nil {
		return nil, err
	}
	p := &program{name: name, file: f, funcs: map[string]bool{}}
	p.stmtList(f.Stmts, nil, sameShell, nil)
	p.instrument(hookPrefix)
	return p, nil
}

// checkSupported refuses constructs whose effect the sandbox cannot observe or
// reproduce. inEval adds the constructs that are only a problem in code built
// at run time, which the static pass never saw.
func checkSupported(name string, root syntax.Node, inEval bool) error {
	var err error
	refuse := func(pos syntax.Pos, what, fix string) bool {
		err = fmt.Errorf("%w: %s:%s: %s; %s", ErrUnsupported, name, pos, what, fix)
		return false
	}
	syntax.Walk(root, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Disown || n.Coprocess {
				return refuse(n.Pos(), "a background job", "a profile must set its variables synchronously; remove the '&'")
			}
		case *syntax.ProcSubst:
			return refuse(n.Pos(), "process substitution", "it needs named pipes on the host; use a command substitution instead")
		case *syntax.CoprocClause:
			return refuse(n.Pos(), "a coprocess", "run the command synchronously")
		case *syntax.TimeClause:
			return refuse(n.Pos(), "the time keyword", "its output depends on the clock; remove it")
		case *syntax.BinaryCmd:
			if n.Op == syntax.PipeAll {
				return refuse(n.OpPos, "the |& operator", "write 2>&1 | instead")
			}
		case *syntax.FuncDecl:
			if n.Name == nil {
				return refuse(n.Pos(), "an anonymous function", "name the function")
			}
			if inEval {
				return refuse(n.Pos(), "a function defined by eval", "define the function in the script itself")
			}
		case *syntax.DeclClause:
			for _, as := range n.Args {
				if as.Name != nil || as.Value == nil {
					continue
				}
				if lit := as.Value.Lit(); strings.HasPrefix(lit, "-") && strings.Contains(lit, "f") {
					return refuse(as.Pos(), n.Variant.Value+" "+lit+" (function definitions)", "the sandbox instruments function bodies, so a profile must not print or export them")
				}
			}
		}
		return true
	})
	return err
}

func (p *program) stmtList(list []*syntax.Stmt, parent *stmtInfo, rel shellRel, container syntax.Node) {
	for i, st := range list {
		p.stmt(st, parent, rel, container, i == 0)
	}
}

func (p *program) stmt(st *syntax.Stmt, parent *stmtInfo, rel shellRel, container syntax.Node, first bool) *stmtInfo {
	info := &stmtInfo{
		id:        len(p.stmts),
		stmt:      st,
		line:      int(st.Pos().Line()),
		col:       int(st.Pos().Col()),
		parent:    parent,
		rel:       rel,
		container: container,
		first:     first,
	}
	p.stmts = append(p.stmts, info)

	var c collector
	for _, rd := range st.Redirs {
		c.redirect(rd)
		if readsStdin(rd) {
			info.ownStdin = true
		}
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		kind := assigns
		if len(cmd.Args) > 0 {
			kind = prefixAssign
			info.callPos = cmd.Args[0].Pos()
		}
		for _, as := range cmd.Assigns {
			c.assign(as, kind)
		}
		if isTestCommand(cmd) {
			c.testing = true
		}
		for _, w := range cmd.Args {
			c.word(w)
		}
		c.testing = false
		// What a builtin such as read assigns is known only once its words
		// expand, and not at all if a redirection fails before it runs (read
		// X < /denied). Literal words name the targets up front, so a taint of
		// the statement still reaches them.
		if lits, ok := literalWords(cmd.Args); ok {
			for _, t := range commandTargets(lits[0], lits[1:]) {
				c.target(t.name, mayAssign)
			}
		}
	case *syntax.DeclClause:
		for _, as := range cmd.Args {
			c.declAssign(as)
		}
	case *syntax.ArithmCmd:
		c.arith(cmd.X)
	case *syntax.LetClause:
		for _, e := range cmd.Exprs {
			c.arith(e)
		}
	case *syntax.TestClause:
		c.testing = true
		c.test(cmd.X)
		c.testing = false
	case *syntax.ForClause:
		switch loop := cmd.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range loop.Items {
				c.word(w)
			}
			if !loop.InPos.IsValid() {
				c.read("@", int(loop.Name.Pos().Line()), readValue) // for x; do: iterates "$@"
			}
			c.target(loop.Name.Value, mayAssign)
			if cmd.Select {
				c.target("REPLY", mayAssign)
			}
		case *syntax.CStyleLoop:
			for _, e := range []syntax.ArithmExpr{loop.Init, loop.Cond, loop.Post} {
				if e != nil {
					c.arith(e)
				}
			}
		}
	case *syntax.CaseClause:
		c.word(cmd.Word)
		for _, item := range cmd.Items {
			for _, w := range item.Patterns {
				c.word(w)
			}
		}
	}
	info.reads, info.targets, info.names = c.reads, c.targets, c.names

	// Command substitutions in the statement's own words run while the
	// statement expands them: they are its children, each in a subshell.
	for _, cs := range c.substs {
		p.stmtList(cs.Stmts, info, substMember, cs)
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.Block:
		p.stmtList(cmd.Stmts, info, sameShell, nil)
	case *syntax.Subshell:
		p.stmtList(cmd.Stmts, info, subshellMember, cmd)
	case *syntax.IfClause:
		for ic := cmd; ic != nil; ic = ic.Else {
			p.stmtList(ic.Cond, info, sameShell, nil)
			p.stmtList(ic.Then, info, sameShell, nil)
		}
	case *syntax.WhileClause:
		p.stmtList(cmd.Cond, info, sameShell, nil)
		p.stmtList(cmd.Do, info, sameShell, nil)
	case *syntax.ForClause:
		p.stmtList(cmd.Do, info, sameShell, nil)
	case *syntax.CaseClause:
		for _, item := range cmd.Items {
			p.stmtList(item.Stmts, info, sameShell, nil)
		}
	case *syntax.BinaryCmd:
		if cmd.Op == syntax.Pipe {
			x := p.stmt(cmd.X, info, pipeSource, nil, false)
			x.pipe = cmd
			y := p.stmt(cmd.Y, info, sameShell, nil, false)
			y.pipe, y.pipeSink = cmd, true
		} else {
			p.stmt(cmd.X, info, sameShell, nil, false)
			p.stmt(cmd.Y, info, sameShell, nil, false)
		}
	case *syntax.FuncDecl:
		p.funcs[cmd.Name.Value] = true
		body := p.stmt(cmd.Body, info, sameShell, nil, false)
		body.funcBody = true
	}
	// A compound statement reading its own input (while read l; do ...; done
	// < file) feeds that input to the variables its body assigns, even when
	// the input is denied and the body never runs.
	if info.ownStdin && !isSimple(st.Cmd) {
		for _, d := range p.stmts[info.id+1:] {
			if sameShellDescendant(d, info) {
				for _, t := range d.targets {
					info.targets = append(info.targets, target{name: t.name, kind: mayAssign})
				}
			}
		}
	}
	return info
}

func isSimple(cmd syntax.Command) bool {
	switch cmd.(type) {
	case nil, *syntax.CallExpr, *syntax.DeclClause, *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause:
		return true
	}
	return false
}

// sameShellDescendant reports whether d runs inside anc without a subshell
// in between.
func sameShellDescendant(d, anc *stmtInfo) bool {
	for g := d; g != nil; g = g.parent {
		if g == anc {
			return true
		}
		if g.rel != sameShell || g.funcBody {
			return false
		}
	}
	return false
}

// instrument prepends two redirections to every analysed statement. The
// interpreter opens them, through the sandbox's open handler, before it runs
// the statement and closes them right after, which is the only per-statement
// hook mvdan.cc/sh offers. The writers forward to the statement's real stdout
// and stderr, so the script cannot tell, and they tag every handler call made
// while the statement runs with the statement's frame.
func (p *program) instrument(hookPrefix string) {
	word := func(s string) *syntax.Word { return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}} }
	for _, info := range p.stmts {
		id := strconv.Itoa(info.id)
		info.stmt.Redirs = append([]*syntax.Redirect{
			{Op: syntax.AppOut, Word: word(hookPrefix + hookOut + id)},
			{Op: syntax.AppOut, N: &syntax.Lit{Value: "2"}, Word: word(hookPrefix + hookErr + id)},
		}, info.stmt.Redirs...)
	}
}

const (
	hookOut = "o/"
	hookErr = "e/"
)

func isTestCommand(cmd *syntax.CallExpr) bool {
	if len(cmd.Args) == 0 {
		return false
	}
	lit := cmd.Args[0].Lit()
	return lit == "[" || lit == "test"
}

func literalWords(words []*syntax.Word) ([]string, bool) {
	lits := make([]string, 0, len(words))
	for _, w := range words {
		lit := w.Lit()
		if lit == "" {
			return nil, false
		}
		lits = append(lits, lit)
	}
	return lits, len(lits) > 0
}

func readsStdin(rd *syntax.Redirect) bool {
	if rd.N != nil && rd.N.Value != "0" {
		return false
	}
	switch rd.Op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true
	}
	return false
}

// isCatShortcut mirrors the interpreter's $(<file) shortcut, which reads the
// file without running the inner statement. Such a statement is left
// uninstrumented so the shortcut still applies; its file read then happens in
// the enclosing statement's frame, where the sandbox attributes it.
func isCatShortcut(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 {
		return false
	}
	st := cs.Stmts[0]
	return st.Cmd == nil && !st.Negated && !st.Background && !st.Coprocess && !st.Disown &&
		len(st.Redirs) == 1 && st.Redirs[0].Op == syntax.RdrIn
}

// collector gathers the variables one statement's own words read and assign.
// It stops at command substitutions, which run as statements of their own.
type collector struct {
	reads   []varRead
	targets []target
	names   []string
	substs  []*syntax.CmdSubst
	// testing is set inside [ ], test and [[ ]]: those are how a script asks
	// whether a variable is set or empty, so an unset variable there is an
	// answer, not a missing value.
	testing bool
}

func (c *collector) read(name string, line int, mode readMode) {
	if c.testing && mode == readValue {
		mode = readIfSet
	}
	after := slices.ContainsFunc(c.targets, func(t target) bool { return t.name == name })
	c.reads = append(c.reads, varRead{name: name, line: line, mode: mode, afterAssign: after})
}

func (c *collector) target(name string, kind targetKind) {
	c.targets = append(c.targets, target{name: name, kind: kind})
	c.names = append(c.names, name)
}

func (c *collector) word(w *syntax.Word) {
	if w == nil {
		return
	}
	if lit, ok := firstLit(w); ok && strings.HasPrefix(lit.Value, "~") {
		c.read("HOME", int(lit.Pos().Line()), readValue) // tilde expansion
	}
	for _, part := range w.Parts {
		c.part(part)
	}
}

// assignWord is word for assignment values, where a tilde after ':' expands too.
func (c *collector) assignWord(w *syntax.Word) {
	if w == nil {
		return
	}
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok && strings.Contains(lit.Value, ":~") {
			c.read("HOME", int(lit.Pos().Line()), readValue)
			break
		}
	}
	c.word(w)
}

func firstLit(w *syntax.Word) (*syntax.Lit, bool) {
	if len(w.Parts) == 0 {
		return nil, false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	return lit, ok
}

func (c *collector) part(part syntax.WordPart) {
	switch part := part.(type) {
	case *syntax.DblQuoted:
		for _, p := range part.Parts {
			c.part(p)
		}
	case *syntax.ParamExp:
		c.param(part)
	case *syntax.CmdSubst:
		if isCatShortcut(part) {
			c.word(part.Stmts[0].Redirs[0].Word)
			return
		}
		c.substs = append(c.substs, part)
	case *syntax.ArithmExp:
		c.arith(part.X)
	case *syntax.BraceExp:
		for _, w := range part.Elems {
			c.word(w)
		}
	}
}

func (c *collector) param(pe *syntax.ParamExp) {
	if pe.Param == nil || pe.Names != 0 {
		return // ${!prefix*} lists names; it reads no value
	}
	name, line := pe.Param.Value, int(pe.Pos().Line())
	mode := readValue
	switch {
	case pe.Excl:
		mode = readIndirect
	case pe.Exp != nil:
		switch pe.Exp.Op {
		case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
			mode = readPresence
		case syntax.DefaultUnset, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			mode = readIfSet
		case syntax.DefaultUnsetOrNull:
			mode = readIfNonEmpty
		case syntax.AssignUnset:
			mode = readIfSet
			c.target(name, mayAssign)
		case syntax.AssignUnsetOrNull:
			mode = readIfNonEmpty
			c.target(name, mayAssign)
		}
	}
	c.read(name, line, mode)
	if pe.Index != nil {
		c.arith(pe.Index)
	}
	if pe.Slice != nil {
		if pe.Slice.Offset != nil {
			c.arith(pe.Slice.Offset)
		}
		if pe.Slice.Length != nil {
			c.arith(pe.Slice.Length)
		}
	}
	if pe.Repl != nil {
		c.word(pe.Repl.Orig)
		c.word(pe.Repl.With)
	}
	if pe.Exp != nil {
		c.word(pe.Exp.Word)
	}
}

// arithName returns the variable an arithmetic operand names: in arithmetic a
// bare word is a variable, and name[i] an element of one.
func arithName(e syntax.ArithmExpr) (string, bool) {
	w, ok := e.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	name := lit.Value
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		name = name[:i]
	}
	return name, syntax.ValidName(name)
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

func (c *collector) arith(e syntax.ArithmExpr) {
	switch e := e.(type) {
	case *syntax.Word:
		if name, ok := arithName(e); ok {
			c.read(name, int(e.Pos().Line()), readValue)
			return
		}
		c.word(e)
	case *syntax.BinaryArithm:
		if isArithAssign(e.Op) {
			if name, ok := arithName(e.X); ok {
				if e.Op != syntax.Assgn {
					c.read(name, int(e.X.Pos().Line()), readValue)
				}
				c.target(name, mayAssign)
			} else {
				c.arith(e.X)
			}
			c.arith(e.Y)
			return
		}
		c.arith(e.X)
		c.arith(e.Y)
	case *syntax.UnaryArithm:
		if e.Op == syntax.Inc || e.Op == syntax.Dec {
			if name, ok := arithName(e.X); ok {
				c.read(name, int(e.X.Pos().Line()), readValue)
				c.target(name, mayAssign)
				return
			}
		}
		c.arith(e.X)
	case *syntax.ParenArithm:
		c.arith(e.X)
	}
}

func (c *collector) test(e syntax.TestExpr) {
	switch e := e.(type) {
	case *syntax.BinaryTest:
		c.test(e.X)
		c.test(e.Y)
		if e.Op == syntax.TsReMatch {
			c.target("BASH_REMATCH", mayAssign)
		}
	case *syntax.UnaryTest:
		if w, ok := e.X.(*syntax.Word); ok && e.Op == syntax.TsVarSet {
			if name := w.Lit(); syntax.ValidName(name) {
				c.read(name, int(w.Pos().Line()), readPresence)
				return
			}
		}
		c.test(e.X)
	case *syntax.ParenTest:
		c.test(e.X)
	case *syntax.Word:
		c.word(e)
	}
}

func (c *collector) assign(as *syntax.Assign, kind targetKind) {
	if as.Name == nil {
		return
	}
	name, line := as.Name.Value, int(as.Name.Pos().Line())
	if as.Append {
		c.read(name, line, readIfSet)
	}
	if as.Index != nil {
		c.arith(as.Index)
	}
	c.assignWord(as.Value)
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				c.arith(el.Index)
			}
			c.assignWord(el.Value)
		}
	}
	c.target(name, kind)
}

func (c *collector) declAssign(as *syntax.Assign) {
	switch {
	case as.Name == nil:
		// Options such as -x, or words that expand at run time into
		// assignments this pass cannot name; the run-time change detection
		// sees what they assign.
		c.word(as.Value)
	case as.Naked:
		c.names = append(c.names, as.Name.Value)
		if as.Index != nil {
			c.arith(as.Index)
		}
	default:
		c.assign(as, assigns)
	}
}

func (c *collector) redirect(rd *syntax.Redirect) {
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		// The word is the delimiter; the body is what expands.
		c.word(rd.Hdoc)
	default:
		c.word(rd.Word)
	}
}

// collectDeep gathers the reads and assignments of every statement of f,
// for code the static pass could not instrument (eval strings). They may or
// may not run, so every assignment is only a possible one.
func collectDeep(f *syntax.File) (reads []varRead, targets []target) {
	p := &program{funcs: map[string]bool{}}
	p.stmtList(f.Stmts, nil, sameShell, nil)
	for _, info := range p.stmts {
		reads = append(reads, info.reads...)
		for _, t := range info.targets {
			targets = append(targets, target{name: t.name, kind: mayAssign})
		}
	}
	return reads, targets
}
