package runtimes

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Format is an output encoding.
type Format string

const (
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// Encode writes objects as a YAML stream (documents separated by ---) or,
// for JSON, one object or a List. header lines become leading comments
// (YAML only). Map keys are sorted by the encoder, so output is stable.
func Encode(format Format, header []string, objs ...any) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case FormatYAML:
		for _, h := range header {
			fmt.Fprintf(&buf, "# %s\n", h)
		}
		for i, o := range objs {
			data, err := yaml.Marshal(o)
			if err != nil {
				return nil, fmt.Errorf("encode object %d: %w", i, err)
			}
			if i > 0 || len(header) > 0 {
				buf.WriteString("---\n")
			}
			buf.Write(data)
		}
	case FormatJSON:
		var v any = objs
		if len(objs) == 1 {
			v = objs[0]
		} else {
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		}
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode JSON: %w", err)
		}
		buf.Write(append(data, '\n'))
	default:
		return nil, fmt.Errorf("output format %q is not yaml or json", format)
	}
	return buf.Bytes(), nil
}
