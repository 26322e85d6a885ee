package sbom

// This file validates documents against the CycloneDX 1.6 JSON schema that
// ships inside the cyclonedx-go module (schema/bom-1.6.schema.json, with the
// spdx and jsf schemas it references), read from the module cache so the
// schema is always the one of the library version go.mod pins. A JSON-schema
// library (santhosh-tekuri/jsonschema, draft-07 as the schema declares)
// judges, so the check is as complete as the schema.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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

// schemaSet is the compiled CycloneDX 1.6 schema.
type schemaSet struct{ schema *jsonschema.Schema }

// cycloneDX16 compiles the schema once per test binary.
var cycloneDX16 = func() func(t *testing.T) *schemaSet {
	var (
		once sync.Once
		set  *schemaSet
		err  error
	)
	return func(t *testing.T) *schemaSet {
		t.Helper()
		once.Do(func() { set, err = compileCycloneDX16(filepath.Join(cdxModuleDir(t), "schema")) })
		if err != nil {
			t.Fatalf("load the CycloneDX 1.6 schema: %v", err)
		}
		return set
	}
}()

func compileCycloneDX16(dir string) (*schemaSet, error) {
	c := jsonschema.NewCompiler()
	var root string
	// jsf's file is named .schemax.json in the module; its $id is what
	// bom-1.6 refers to, which is why each document is added under its $id.
	for i, f := range []string{"bom-1.6.schema.json", "spdx.schema.json", "jsf-0.82.schemax.json"} {
		r, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("%s has no $id", f)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, err
		}
		if i == 0 {
			root = id
		}
	}
	sch, err := c.Compile(root)
	if err != nil {
		return nil, err
	}
	return &schemaSet{schema: sch}, nil
}

// decodeJSONBytes keeps numbers exact (json.Number), as the library judges
// them.
func decodeJSONBytes(data []byte) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
}

// Validate returns every violation of the 1.6 schema by the JSON document,
// each as "instance location: keyword: message", so a test names the rule
// broken and where.
func (s *schemaSet) Validate(data []byte) ([]string, error) {
	inst, err := decodeJSONBytes(data)
	if err != nil {
		return nil, err
	}
	verr := s.schema.Validate(inst)
	if verr == nil {
		return nil, nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return nil, verr
	}
	english := message.NewPrinter(language.English)
	var out []string
	var leaves func(e *jsonschema.ValidationError)
	leaves = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("/%s: %s: %s", strings.Join(e.InstanceLocation, "/"),
				strings.Join(e.ErrorKind.KeywordPath(), "/"), e.ErrorKind.LocalizedString(english)))
		}
		for _, c := range e.Causes {
			leaves(c)
		}
	}
	leaves(ve)
	return out, nil
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
		"unknown component type":  {func(d map[string]any) { component(d, 0)["type"] = "contaner" }, "type: enum"},
		"component without name":  {func(d map[string]any) { delete(component(d, 0), "name") }, "required: missing property 'name'"},
		"unknown top-level field": {func(d map[string]any) { d["generatedAt"] = "now" }, "additionalProperties: additional properties 'generatedAt' not allowed"},
		"malformed serial number": {func(d map[string]any) { d["serialNumber"] = "urn:uuid:not-a-uuid" }, "/serialNumber: pattern"},
		"wrong bom format":        {func(d map[string]any) { d["bomFormat"] = "cyclonedx" }, "/bomFormat: enum"},
		"version zero":            {func(d map[string]any) { d["version"] = json.Number("0") }, "/version: minimum"},
		"empty dependency ref":    {func(d map[string]any) { d["dependencies"].([]any)[0].(map[string]any)["ref"] = "" }, "/dependencies/0/ref: minLength"},
		"property with extra field": {func(d map[string]any) {
			props := d["metadata"].(map[string]any)["properties"].([]any)
			props[0].(map[string]any)["comment"] = "x"
		}, "additionalProperties: additional properties 'comment' not allowed"},
		"short hash": {func(d map[string]any) {
			for _, c := range d["components"].([]any) {
				if hs, ok := c.(map[string]any)["hashes"].([]any); ok {
					hs[0].(map[string]any)["content"] = "abc"
				}
			}
		}, "/content: pattern"},
		"duplicate component": {func(d map[string]any) {
			cs := d["components"].([]any)
			d["components"] = append(cs, cs[0])
		}, "/components: uniqueItems: items at 0 and"},
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
