package emit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// ParseLiteral reads facts back from a file Literal emitted: the composite
// literal Facts returns, field by field, with the same reflection Literal
// writes it with, so the two cannot disagree about a field. Like Parse, it
// lets a check judge the committed file rather than the constants compiled
// into the checking binary.
func ParseLiteral(name string, src []byte) (*facts.Facts, error) {
	file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var lit *ast.CompositeLit
	for _, decl := range file.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "Facts" || fd.Body == nil || len(fd.Body.List) != 1 {
			continue
		}
		if ret, ok := fd.Body.List[0].(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
			lit, _ = ret.Results[0].(*ast.CompositeLit)
		}
	}
	if lit == nil {
		return nil, fmt.Errorf("%s has no func Facts returning a facts literal: regenerate it with go generate ./...", name)
	}
	var f facts.Facts
	if err := assign(reflect.ValueOf(&f).Elem(), lit); err != nil {
		return nil, fmt.Errorf("%s: %w (regenerate it with go generate ./...)", name, err)
	}
	return &f, nil
}

// assign sets v from the expression e that Literal wrote for it.
func assign(v reflect.Value, e ast.Expr) error {
	switch v.Kind() {
	case reflect.String, reflect.Int, reflect.Bool:
		return scalar(v, e)
	case reflect.Slice:
		cl, ok := e.(*ast.CompositeLit)
		if !ok {
			return fmt.Errorf("a %s is not a list literal", v.Type())
		}
		s := reflect.MakeSlice(v.Type(), len(cl.Elts), len(cl.Elts))
		for i, el := range cl.Elts {
			if err := assign(s.Index(i), el); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Struct:
		cl, ok := e.(*ast.CompositeLit)
		if !ok {
			return fmt.Errorf("a %s is not a struct literal", v.Type())
		}
		for _, el := range cl.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			key, isIdent := kv.Key.(*ast.Ident)
			if !ok || !isIdent {
				return fmt.Errorf("a %s field is not written as Name: value", v.Type())
			}
			field := v.FieldByName(key.Name)
			if !field.IsValid() || !field.CanSet() {
				return fmt.Errorf("%s has no field %s", v.Type(), key.Name)
			}
			if err := assign(field, kv.Value); err != nil {
				return fmt.Errorf("%s: %w", key.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("a field of kind %s has no literal form", v.Kind())
}

func scalar(v reflect.Value, e ast.Expr) error {
	switch x := e.(type) {
	case *ast.BasicLit:
		switch {
		case x.Kind == token.STRING && v.Kind() == reflect.String:
			s, err := strconv.Unquote(x.Value)
			if err != nil {
				return err
			}
			v.SetString(s)
			return nil
		case x.Kind == token.INT && v.Kind() == reflect.Int:
			n, err := strconv.ParseInt(x.Value, 0, 64)
			if err != nil {
				return err
			}
			v.SetInt(n)
			return nil
		}
	case *ast.Ident:
		if v.Kind() == reflect.Bool && (x.Name == "true" || x.Name == "false") {
			v.SetBool(x.Name == "true")
			return nil
		}
	}
	return fmt.Errorf("%T is not a %s literal", e, v.Kind())
}
