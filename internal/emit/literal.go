package emit

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/dave/jennifer/jen"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// Literal renders f as package pkg holding one function, Facts, that
// returns f as a composite literal of facts.Facts: every field that is not
// zero, in the type's field order. Unlike Go, which documents each
// TCPXO fact beside its constant, it needs no knowledge of any fabric's
// fields, so a new fabric's facts are emitted without a new emitter; what
// a field means is documented once, on the facts type. Output depends only
// on f.
func Literal(pkg string, f *facts.Facts) ([]byte, error) {
	file := jen.NewFile(pkg)
	file.HeaderComment(Header)
	file.PackageComment(fmt.Sprintf("Package %s holds the facts tcpxogen pinned from the %s installer %s.", pkg, f.Fabric, f.PluginVersion))
	file.Comment("Regenerate with `go generate ./...`; change what is pinned in bom/bom.yaml.")
	file.Line()
	body, err := literal(reflect.ValueOf(*f), true)
	if err != nil {
		return nil, err
	}
	file.Comment("Facts returns the pinned facts; see package internal/facts for what each")
	file.Comment("field means. Each call returns fresh values.")
	file.Func().Id("Facts").Params().Qual(factsPkg, "Facts").Block(jen.Return(body))
	var buf bytes.Buffer
	if err := file.Render(&buf); err != nil {
		return nil, fmt.Errorf("render generated Go for package %s: %w", pkg, err)
	}
	return buf.Bytes(), nil
}

// literal renders v; typed says whether a composite literal names its type
// (false for the elements of a slice, whose type Go elides).
func literal(v reflect.Value, typed bool) (jen.Code, error) {
	switch v.Kind() {
	case reflect.String:
		return jen.Lit(v.String()), nil
	case reflect.Bool:
		return jen.Lit(v.Bool()), nil
	case reflect.Int:
		return jen.Lit(int(v.Int())), nil
	case reflect.Slice:
		elem, err := typeOf(v.Type().Elem())
		if err != nil {
			return nil, err
		}
		items := make([]jen.Code, 0, v.Len())
		for i := range v.Len() {
			c, err := literal(v.Index(i), false)
			if err != nil {
				return nil, err
			}
			items = append(items, jen.Line().Add(c))
		}
		if len(items) > 0 {
			items = append(items, jen.Line())
		}
		return jen.Index().Add(elem).Values(items...), nil
	case reflect.Struct:
		var fields []jen.Code
		for i := range v.NumField() {
			ft := v.Type().Field(i)
			if !ft.IsExported() || v.Field(i).IsZero() {
				continue
			}
			c, err := literal(v.Field(i), true)
			if err != nil {
				return nil, err
			}
			fields = append(fields, jen.Line().Id(ft.Name).Op(":").Add(c))
		}
		if len(fields) > 0 {
			fields = append(fields, jen.Line())
		}
		if !typed {
			return jen.Values(fields...), nil
		}
		t, err := typeOf(v.Type())
		if err != nil {
			return nil, err
		}
		return jen.Add(t).Values(fields...), nil
	}
	return nil, fmt.Errorf("emit: facts field of kind %s has no literal form", v.Kind())
}

// typeOf names t as Go source: a builtin, or a type of the facts or
// guestconfig package.
func typeOf(t reflect.Type) (jen.Code, error) {
	switch {
	case t.Kind() == reflect.Slice:
		elem, err := typeOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return jen.Index().Add(elem), nil
	case t.PkgPath() == "":
		return jen.Id(t.Name()), nil
	case t.PkgPath() == factsPkg || t.PkgPath() == guestconfigPkg:
		return jen.Qual(t.PkgPath(), t.Name()), nil
	}
	return nil, fmt.Errorf("emit: type %s has no literal form", t)
}
