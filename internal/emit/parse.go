package emit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// Parse reads facts back from a file Go emitted. The coupling check works
// from the committed file, not from constants compiled into the checking
// binary, so it judges exactly what is in the tree it is pointed at.
func Parse(name string, src []byte) (*facts.Facts, error) {
	file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	p := &factParser{consts: map[string]ast.Expr{}, funcs: map[string]ast.Expr{}}
	for _, decl := range file.Decls {
		p.collect(decl)
	}
	f := &facts.Facts{}
	for name, dst := range p.stringFields(f) {
		if *dst, err = p.str(name); err != nil {
			return nil, err
		}
	}
	for name, dst := range p.boolFields(f) {
		if *dst, err = p.boolean(name); err != nil {
			return nil, err
		}
	}
	if f.DefaultProfile, err = p.env("DefaultProfile"); err != nil {
		return nil, err
	}
	if f.SimpleProfile, err = p.env("SimpleProfile"); err != nil {
		return nil, err
	}
	if f.DefaultGuestRules, err = p.rules("DefaultGuestRules"); err != nil {
		return nil, err
	}
	if f.SimpleGuestRules, err = p.rules("SimpleGuestRules"); err != nil {
		return nil, err
	}
	for name, dst := range map[string]*int{"SSHDPort": &f.SSHDPort, "DaemonEntryScriptMode": &f.DaemonEntryScriptMode} {
		if *dst, err = p.integer(name); err != nil {
			return nil, err
		}
	}
	for name, dst := range map[string]*[]string{"PluginFiles": &f.PluginFiles, "RefusedCommands": &f.Refused, "NormalizedVariables": &f.Normalized,
		"InstallerEntrypoint": &f.InstallerEntrypoint, "DaemonEntrypoint": &f.DaemonEntrypoint, "Scripts": &f.Scripts} {
		if *dst, err = p.strings(name); err != nil {
			return nil, err
		}
	}
	if f.PluginLibraries, err = p.libraries("PluginLibraries"); err != nil {
		return nil, err
	}
	return f, nil
}

// Constant returns one string constant of a generated file. It works on a
// file too stale for Parse, which is what reading its recorded source needs.
func Constant(name string, src []byte, constant string) (string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", name, err)
	}
	p := &factParser{consts: map[string]ast.Expr{}, funcs: map[string]ast.Expr{}}
	for _, decl := range file.Decls {
		p.collect(decl)
	}
	return p.str(constant)
}

type factParser struct {
	consts map[string]ast.Expr
	funcs  map[string]ast.Expr // the returned expression
}

func (p *factParser) stringFields(f *facts.Facts) map[string]*string {
	return map[string]*string{
		"PluginVersion": &f.PluginVersion, "InstallerImage": &f.InstallerImage, "DaemonImage": &f.DaemonImage,
		"DaemonVersion": &f.DaemonVersion, "NCCLVersion": &f.NCCLVersion, "LibDir": &f.LibDir,
		"ProvenancePinned": &f.Provenance.Pinned, "ProvenanceSource": &f.Provenance.Source, "ProvenanceKind": &f.Provenance.Kind,
		"ProvenanceRead": &f.Provenance.Read, "ProvenanceDigest": &f.Provenance.Digest,
		"ProvenanceDefaultProfileSHA256": &f.Provenance.DefaultProfileSHA256, "ProvenanceSimpleProfileSHA256": &f.Provenance.SimpleProfileSHA256,
		"ProvenanceDefaultGuestConfigSHA256": &f.Provenance.DefaultGuestConfigSHA256, "ProvenanceSimpleGuestConfigSHA256": &f.Provenance.SimpleGuestConfigSHA256,
		"CUDAVersion": &f.CUDAVersion, "AllReducePerfMPI": &f.AllReducePerfMPI, "DaemonEntryScript": &f.DaemonEntryScript,
		"DaemonProvenancePinned": &f.DaemonProvenance.Pinned, "DaemonProvenanceSource": &f.DaemonProvenance.Source, "DaemonProvenanceKind": &f.DaemonProvenance.Kind,
		"DaemonProvenanceRead": &f.DaemonProvenance.Read, "DaemonProvenanceDigest": &f.DaemonProvenance.Digest,
	}
}

func (p *factParser) boolFields(f *facts.Facts) map[string]*bool {
	return map[string]*bool{"PluginFilesComplete": &f.PluginFilesComplete, "ProvenanceSubstituted": &f.Provenance.Substituted,
		"DaemonProvenanceSubstituted": &f.DaemonProvenance.Substituted}
}

func (p *factParser) collect(decl ast.Decl) {
	switch d := decl.(type) {
	case *ast.GenDecl:
		if d.Tok != token.CONST {
			return
		}
		for _, spec := range d.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					p.consts[n.Name] = vs.Values[i]
				}
			}
		}
	case *ast.FuncDecl:
		if d.Body != nil && len(d.Body.List) == 1 {
			if ret, ok := d.Body.List[0].(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
				p.funcs[d.Name.Name] = ret.Results[0]
			}
		}
	}
}

func (p *factParser) str(name string) (string, error) {
	lit, ok := p.consts[name].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("generated file: constant %s is missing or not a string literal (regenerate with go generate ./...)", name)
	}
	return strconv.Unquote(lit.Value)
}

func (p *factParser) integer(name string) (int, error) {
	lit, ok := p.consts[name].(*ast.BasicLit)
	if !ok || lit.Kind != token.INT {
		return 0, fmt.Errorf("generated file: constant %s is missing or not an integer literal (regenerate with go generate ./...)", name)
	}
	n, err := strconv.ParseInt(lit.Value, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("generated file: constant %s: %w", name, err)
	}
	return int(n), nil
}

func (p *factParser) boolean(name string) (bool, error) {
	id, ok := p.consts[name].(*ast.Ident)
	if !ok || (id.Name != "true" && id.Name != "false") {
		return false, fmt.Errorf("generated file: constant %s is missing or not true/false (regenerate with go generate ./...)", name)
	}
	return id.Name == "true", nil
}

func (p *factParser) list(name string) ([]ast.Expr, error) {
	cl, ok := p.funcs[name].(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("generated file: func %s is missing or does not return a literal (regenerate with go generate ./...)", name)
	}
	return cl.Elts, nil
}

func (p *factParser) strings(name string) ([]string, error) {
	elts, err := p.list(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(elts))
	for _, e := range elts {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return nil, fmt.Errorf("generated file: %s holds a non-string element", name)
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// libraries reads a func's returned list of {Name: "...", Needed: []string{...}}.
func (p *factParser) libraries(name string) ([]facts.Library, error) {
	elts, err := p.list(name)
	if err != nil {
		return nil, err
	}
	bad := fmt.Errorf("generated file: %s holds an element that is not {Name: \"...\", Needed: []string{...}} (regenerate with go generate ./...)", name)
	out := make([]facts.Library, 0, len(elts))
	for _, e := range elts {
		cl, ok := e.(*ast.CompositeLit)
		if !ok {
			return nil, bad
		}
		var lib facts.Library
		for _, kv := range cl.Elts {
			kve, ok := kv.(*ast.KeyValueExpr)
			key, _ := kve.Key.(*ast.Ident)
			if !ok || key == nil {
				return nil, bad
			}
			switch v := kve.Value.(type) {
			case *ast.BasicLit:
				if key.Name != "Name" || v.Kind != token.STRING {
					return nil, bad
				}
				if lib.Name, err = strconv.Unquote(v.Value); err != nil {
					return nil, err
				}
			case *ast.CompositeLit:
				if key.Name != "Needed" {
					return nil, bad
				}
				lib.Needed = []string{}
				for _, n := range v.Elts {
					lit, ok := n.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, bad
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					lib.Needed = append(lib.Needed, s)
				}
			default:
				return nil, bad
			}
		}
		out = append(out, lib)
	}
	return out, nil
}

func (p *factParser) env(name string) ([]facts.EnvVar, error) {
	elts, err := p.keyed(name, "Name", "Value")
	if err != nil {
		return nil, err
	}
	out := make([]facts.EnvVar, len(elts))
	for i, e := range elts {
		out[i] = facts.EnvVar{Name: e["Name"], Value: e["Value"]}
	}
	return out, nil
}

func (p *factParser) rules(name string) ([]guestconfig.Rule, error) {
	elts, err := p.keyed(name, "Name", "Value", "Policy")
	if err != nil {
		return nil, err
	}
	out := make([]guestconfig.Rule, len(elts))
	for i, e := range elts {
		out[i] = guestconfig.Rule{Name: e["Name"], Value: e["Value"], Policy: guestconfig.Policy(e["Policy"])}
	}
	return out, nil
}

// keyed reads a func's returned list of keyed struct literals whose fields
// are all string literals named in fields.
func (p *factParser) keyed(name string, fields ...string) ([]map[string]string, error) {
	elts, err := p.list(name)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]string, 0, len(elts))
	for _, e := range elts {
		cl, ok := e.(*ast.CompositeLit)
		if !ok {
			return nil, fmt.Errorf("generated file: %s holds a non-literal element", name)
		}
		v := map[string]string{}
		for _, kv := range cl.Elts {
			kve, ok := kv.(*ast.KeyValueExpr)
			if !ok {
				return nil, fmt.Errorf("generated file: %s element is not keyed", name)
			}
			key, _ := kve.Key.(*ast.Ident)
			lit, ok := kve.Value.(*ast.BasicLit)
			if key == nil || !ok || lit.Kind != token.STRING || !slices.Contains(fields, key.Name) {
				return nil, fmt.Errorf("generated file: %s element field is not one of %v as a string", name, fields)
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return nil, err
			}
			v[key.Name] = s
		}
		out = append(out, v)
	}
	return out, nil
}
