package sbom

// This file validates documents against the CycloneDX 1.6 JSON schema that
// ships inside the cyclonedx-go module (schema/bom-1.6.schema.json, with the
// spdx and jsf schemas it references), read from the module cache so the
// schema is always the one of the library version go.mod pins.
//
// No JSON-schema validator is in the module graph, so validation is a small
// draft-07 evaluator. It fails closed: a keyword it does not implement is an
// error, never a silent pass. "format" is treated as an annotation, which
// draft-07 permits (format assertion is optional there); the SBOM emits no
// date-time, IRI or e-mail fields. Its own tests make it reject broken
// documents and accept every valid 1.6 document the library ships.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

const cdxModule = "github.com/CycloneDX/cyclonedx-go"

// cdxModuleDir is the cyclonedx-go source directory of the pinned version.
func cdxModuleDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", cdxModule).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("locate %s in the module cache (go list -m): %v %s", cdxModule, err, stderr)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatalf("go list -m reports no directory for %s: run go mod download %s", cdxModule, cdxModule)
	}
	return dir
}

// schemaSet holds the schema documents by $id.
type schemaSet struct {
	root string // $id of bom-1.6.schema.json
	docs map[string]any
	mu   sync.Mutex
	res  map[string]*regexp.Regexp
}

var (
	schemasOnce sync.Once
	schemas     *schemaSet
	schemasErr  error
)

// cycloneDX16 loads the schema set once per test binary.
func cycloneDX16(t *testing.T) *schemaSet {
	t.Helper()
	schemasOnce.Do(func() {
		dir := filepath.Join(cdxModuleDir(t), "schema")
		s := &schemaSet{docs: map[string]any{}, res: map[string]*regexp.Regexp{}}
		// jsf's file is named .schemax.json in the module; its $id is what
		// bom-1.6 refers to, which is why documents are indexed by $id.
		for i, f := range []string{"bom-1.6.schema.json", "spdx.schema.json", "jsf-0.82.schemax.json"} {
			doc, err := decodeJSON(filepath.Join(dir, f))
			if err != nil {
				schemasErr = err
				return
			}
			id, _ := doc.(map[string]any)["$id"].(string)
			if id == "" {
				schemasErr = fmt.Errorf("%s has no $id", f)
				return
			}
			s.docs[id] = doc
			if i == 0 {
				s.root = id
			}
		}
		schemas = s
	})
	if schemasErr != nil {
		t.Fatalf("load the CycloneDX 1.6 schema: %v", schemasErr)
	}
	return schemas
}

func decodeJSON(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeJSONBytes(data)
}

// decodeJSONBytes keeps numbers exact, so "integer" and "minimum" judge the
// literal in the document, not a float approximation.
func decodeJSONBytes(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// Validate returns every violation of the 1.6 schema by the JSON document.
func (s *schemaSet) Validate(data []byte) ([]string, error) {
	inst, err := decodeJSONBytes(data)
	if err != nil {
		return nil, err
	}
	return s.check(s.root, s.docs[s.root], inst, ""), nil
}

// annotations are keywords that never make an instance invalid.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "definitions": true, "meta:enum": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	// Applied by the keywords they accompany.
	"then": true, "else": true, "additionalItems": true,
}

func (s *schemaSet) check(base string, schema, inst any, at string) []string {
	switch sc := schema.(type) {
	case bool:
		if !sc {
			return []string{at + ": the schema allows nothing here"}
		}
		return nil
	case map[string]any:
		if ref, ok := sc["$ref"].(string); ok {
			// Draft-07: $ref replaces its siblings.
			nb, target, err := s.resolve(base, ref)
			if err != nil {
				return []string{at + ": " + err.Error()}
			}
			return s.check(nb, target, inst, at)
		}
		var errs []string
		for _, k := range sortedKeys(sc) {
			errs = append(errs, s.keyword(base, sc, k, inst, at)...)
		}
		return errs
	default:
		return []string{fmt.Sprintf("%s: schema is a %T, not an object or boolean", at, schema)}
	}
}

func (s *schemaSet) keyword(base string, sc map[string]any, k string, inst any, at string) []string {
	v := sc[k]
	obj, isObj := inst.(map[string]any)
	arr, isArr := inst.([]any)
	str, isStr := inst.(string)
	num, isNum := inst.(json.Number)
	fail := func(format string, a ...any) []string { return []string{at + ": " + fmt.Sprintf(format, a...)} }

	switch k {
	case "type":
		for _, t := range asStrings(v) {
			if hasType(inst, t) {
				return nil
			}
		}
		return fail("is %s, want type %v", typeOf(inst), v)
	case "enum":
		for _, e := range v.([]any) {
			if jsonEqual(e, inst) {
				return nil
			}
		}
		return fail("%s is not one of %s", canon(inst), canon(v))
	case "const":
		if !jsonEqual(v, inst) {
			return fail("%s is not %s", canon(inst), canon(v))
		}
	case "required":
		if isObj {
			var errs []string
			for _, p := range asStrings(v) {
				if _, ok := obj[p]; !ok {
					errs = append(errs, fmt.Sprintf("%s: required property %q is missing", at, p))
				}
			}
			return errs
		}
	case "properties":
		if isObj {
			var errs []string
			props := v.(map[string]any)
			for _, p := range sortedKeys(props) {
				if val, ok := obj[p]; ok {
					errs = append(errs, s.check(base, props[p], val, at+"/"+p)...)
				}
			}
			return errs
		}
	case "patternProperties":
		if isObj {
			var errs []string
			pats := v.(map[string]any)
			for _, pat := range sortedKeys(pats) {
				re, err := s.regexp(pat)
				if err != nil {
					return fail("%v", err)
				}
				for _, p := range sortedKeys(obj) {
					if re.MatchString(p) {
						errs = append(errs, s.check(base, pats[pat], obj[p], at+"/"+p)...)
					}
				}
			}
			return errs
		}
	case "additionalProperties":
		if isObj {
			var errs []string
			props, _ := sc["properties"].(map[string]any)
			pats, _ := sc["patternProperties"].(map[string]any)
			for _, p := range sortedKeys(obj) {
				if _, ok := props[p]; ok {
					continue
				}
				matched := false
				for pat := range pats {
					if re, err := s.regexp(pat); err == nil && re.MatchString(p) {
						matched = true
					}
				}
				if matched {
					continue
				}
				if b, ok := v.(bool); ok && !b {
					errs = append(errs, fmt.Sprintf("%s: property %q is not allowed", at, p))
					continue
				}
				errs = append(errs, s.check(base, v, obj[p], at+"/"+p)...)
			}
			return errs
		}
	case "minProperties", "maxProperties":
		if isObj {
			n := mustInt(v)
			if (k == "minProperties" && len(obj) < n) || (k == "maxProperties" && len(obj) > n) {
				return fail("has %d properties, %s is %d", len(obj), k, n)
			}
		}
	case "items":
		if isArr {
			var errs []string
			if tuple, ok := v.([]any); ok {
				for i, el := range arr {
					sub, extra := any(nil), false
					if i < len(tuple) {
						sub = tuple[i]
					} else if sub, extra = sc["additionalItems"]; !extra {
						continue
					}
					errs = append(errs, s.check(base, sub, el, fmt.Sprintf("%s/%d", at, i))...)
				}
				return errs
			}
			for i, el := range arr {
				errs = append(errs, s.check(base, v, el, fmt.Sprintf("%s/%d", at, i))...)
			}
			return errs
		}
	case "contains":
		if isArr {
			for _, el := range arr {
				if len(s.check(base, v, el, at)) == 0 {
					return nil
				}
			}
			return fail("no item matches the contains schema")
		}
	case "minItems", "maxItems":
		if isArr {
			n := mustInt(v)
			if (k == "minItems" && len(arr) < n) || (k == "maxItems" && len(arr) > n) {
				return fail("has %d items, %s is %d", len(arr), k, n)
			}
		}
	case "uniqueItems":
		if isArr && v == true {
			seen := map[string]int{}
			for i, el := range arr {
				c := canon(el)
				if j, dup := seen[c]; dup {
					return fail("items %d and %d are equal", j, i)
				}
				seen[c] = i
			}
		}
	case "minLength", "maxLength":
		if isStr {
			n, l := mustInt(v), utf8.RuneCountInString(str)
			if (k == "minLength" && l < n) || (k == "maxLength" && l > n) {
				return fail("%q has %d characters, %s is %d", str, l, k, n)
			}
		}
	case "pattern":
		if isStr {
			re, err := s.regexp(v.(string))
			if err != nil {
				return fail("%v", err)
			}
			if !re.MatchString(str) {
				return fail("%q does not match %s", str, v)
			}
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if isNum {
			c := rat(num).Cmp(rat(v.(json.Number)))
			bad := map[string]bool{"minimum": c < 0, "maximum": c > 0, "exclusiveMinimum": c <= 0, "exclusiveMaximum": c >= 0}[k]
			if bad {
				return fail("%s violates %s %s", num, k, v)
			}
		}
	case "multipleOf":
		if isNum {
			q := new(big.Rat).Quo(rat(num), rat(v.(json.Number)))
			if !q.IsInt() {
				return fail("%s is not a multiple of %s", num, v)
			}
		}
	case "allOf":
		var errs []string
		for _, sub := range v.([]any) {
			errs = append(errs, s.check(base, sub, inst, at)...)
		}
		return errs
	case "anyOf":
		var all []string
		for _, sub := range v.([]any) {
			errs := s.check(base, sub, inst, at)
			if len(errs) == 0 {
				return nil
			}
			all = append(all, errs...)
		}
		return fail("matches none of anyOf: %s", strings.Join(all, "; "))
	case "oneOf":
		matched := 0
		var all []string
		for _, sub := range v.([]any) {
			errs := s.check(base, sub, inst, at)
			if len(errs) == 0 {
				matched++
			}
			all = append(all, errs...)
		}
		if matched != 1 {
			return fail("matches %d of oneOf, want exactly 1 (%s)", matched, strings.Join(all, "; "))
		}
	case "not":
		if len(s.check(base, v, inst, at)) == 0 {
			return fail("matches a schema it must not")
		}
	case "if":
		branch := "else"
		if len(s.check(base, v, inst, at)) == 0 {
			branch = "then"
		}
		if sub, ok := sc[branch]; ok {
			return s.check(base, sub, inst, at)
		}
	default:
		if !annotations[k] {
			// Fail closed: an unknown keyword might be an assertion.
			return fail("schema keyword %q is not implemented by this validator", k)
		}
	}
	return nil
}

// resolve finds the schema a $ref names, relative to the document base.
func (s *schemaSet) resolve(base, ref string) (string, any, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	abs := b.ResolveReference(r)
	frag := abs.Fragment
	abs.Fragment = ""
	doc, ok := s.docs[abs.String()]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q: no schema with $id %s", ref, abs)
	}
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := node.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("$ref %q: %q does not name an object member", ref, tok)
		}
		if node, ok = m[tok]; !ok {
			return "", nil, fmt.Errorf("$ref %q: no member %q", ref, tok)
		}
	}
	return abs.String(), node, nil
}

// regexp compiles a schema pattern. ECMA-262 and RE2 agree on every pattern
// in the CycloneDX schemas; one that does not compile is reported, not skipped.
func (s *schemaSet) regexp(pat string) (*regexp.Regexp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if re, ok := s.res[pat]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("schema pattern %q: %w", pat, err)
	}
	s.res[pat] = re
	return re, nil
}

func hasType(inst any, t string) bool {
	switch t {
	case "integer":
		n, ok := inst.(json.Number)
		return ok && rat(n).IsInt()
	case "number":
		_, ok := inst.(json.Number)
		return ok
	default:
		return typeOf(inst) == t
	}
}

func typeOf(inst any) string {
	switch inst.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", inst)
}

func rat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return big.NewRat(math.MaxInt64, 1) // unreachable for decoder output
	}
	return r
}

func mustInt(v any) int {
	n, _ := v.(json.Number).Int64()
	return int(n)
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			out[i], _ = e.(string)
		}
		return out
	}
	return nil
}

// canon is a canonical JSON text: encoding/json sorts object keys. Numbers
// are compared as written, which is exact for what enum and const hold here.
func canon(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func jsonEqual(a, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum && bNum {
		return rat(na).Cmp(rat(nb)) == 0
	}
	return canon(a) == canon(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The validator accepts every valid CycloneDX 1.6 JSON document the library
// ships as test data, so a rejection of ours is not a validator false alarm.
func TestSchemaValidatorAcceptsLibraryFixtures(t *testing.T) {
	s := cycloneDX16(t)
	files, err := filepath.Glob(filepath.Join(cdxModuleDir(t), "testdata", "valid-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ SpecVersion string }
		if json.Unmarshal(data, &head) != nil || head.SpecVersion != "1.6" {
			continue
		}
		checked++
		errs, err := s.Validate(data)
		if err != nil || len(errs) > 0 {
			t.Errorf("%s: %v %s", filepath.Base(f), err, strings.Join(errs, "\n"))
		}
	}
	if checked < 20 {
		t.Fatalf("only %d valid 1.6 fixtures found in %s; the cross-check needs the library's test data", checked, cdxModule)
	}
}

// Each mutation of a valid SBOM breaks one rule of the schema, on a path the
// SBOM uses; the validator must report it.
func TestSchemaValidatorRejectsBrokenDocuments(t *testing.T) {
	s := cycloneDX16(t)
	good := encodeReal(t)
	if errs, err := s.Validate(good); err != nil || len(errs) > 0 {
		t.Fatalf("the unmutated document must be valid: %v %v", err, errs)
	}
	for name, tc := range map[string]struct {
		mutate func(doc map[string]any)
		want   string
	}{
		"unknown component type":  {func(d map[string]any) { component(d, 0)["type"] = "contaner" }, "not one of"},
		"component without name":  {func(d map[string]any) { delete(component(d, 0), "name") }, `"name" is missing`},
		"unknown top-level field": {func(d map[string]any) { d["generatedAt"] = "now" }, `"generatedAt" is not allowed`},
		"malformed serial number": {func(d map[string]any) { d["serialNumber"] = "urn:uuid:not-a-uuid" }, "does not match"},
		"wrong bom format":        {func(d map[string]any) { d["bomFormat"] = "cyclonedx" }, "not one of"},
		"version zero":            {func(d map[string]any) { d["version"] = json.Number("0") }, "minimum"},
		"empty dependency ref":    {func(d map[string]any) { d["dependencies"].([]any)[0].(map[string]any)["ref"] = "" }, "characters"},
		"property with extra field": {func(d map[string]any) {
			props := d["metadata"].(map[string]any)["properties"].([]any)
			props[0].(map[string]any)["comment"] = "x"
		}, `"comment" is not allowed`},
		"short hash": {func(d map[string]any) {
			for _, c := range d["components"].([]any) {
				if hs, ok := c.(map[string]any)["hashes"].([]any); ok {
					hs[0].(map[string]any)["content"] = "abc"
				}
			}
		}, "does not match"},
		"duplicate component": {func(d map[string]any) {
			cs := d["components"].([]any)
			d["components"] = append(cs, cs[0])
		}, "are equal"},
	} {
		t.Run(name, func(t *testing.T) {
			doc, err := decodeJSONBytes(good)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(doc.(map[string]any))
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			errs, err := s.Validate(data)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Fatalf("errors %q do not mention %q", errs, tc.want)
			}
		})
	}
}

func component(doc map[string]any, i int) map[string]any {
	return doc["components"].([]any)[i].(map[string]any)
}
