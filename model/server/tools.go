package server

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model/chat"
)

// tool is an offered function as droidgo reads it. Parameters of the types
// the action space has (integer, number, string, with enums and bounds)
// are read as they are; any other (boolean, array, object, or no type) is
// read as text, which is how Spark writes a non-string value between its
// tags (as JSON), and given back its JSON value after parsing (loose).
type tool struct {
	action action.Tool
	loose  map[string]string // parameter → its JSON-schema type ("" when none)
}

// parseTools reads the request's tools: the values the template renders,
// as sent, and droidgo's reading of each.
func parseTools(raw json.RawMessage) ([]any, []tool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	v, err := chat.ParseJSON(raw)
	if err != nil {
		return nil, nil, bad("tools: %v", err)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, nil, bad("tools must be a list")
	}
	if len(list) > maxTools {
		return nil, nil, bad("%d tools offered; at most %d are allowed", len(list), maxTools)
	}
	tools := make([]tool, 0, len(list))
	seen := map[string]bool{}
	for i, tv := range list {
		o, _ := tv.(chat.Object)
		typ, _ := o.Get("type")
		fv, _ := o.Get("function")
		fn, ok := fv.(chat.Object)
		if typ != "function" || !ok {
			return nil, nil, bad(`tool %d is not {"type": "function", "function": {...}}`, i)
		}
		t, err := readTool(fn)
		if err != nil {
			return nil, nil, bad("tool %d: %v", i, err)
		}
		if seen[t.action.Name] {
			return nil, nil, bad("tool %d: the name %q is offered twice", i, t.action.Name)
		}
		seen[t.action.Name] = true
		tools = append(tools, t)
	}
	return list, tools, nil
}

func readTool(fn chat.Object) (tool, error) {
	nv, _ := fn.Get("name")
	name, _ := nv.(string)
	if !validName(name) {
		return tool{}, bad("function name %s must be 1-64 letters, digits, _ or -", quoteAny(nv))
	}
	t := tool{action: action.Tool{Name: name}, loose: map[string]string{}}
	if d, ok := fn.Get("description"); ok {
		t.action.Description, _ = d.(string)
	}
	pv, ok := fn.Get("parameters")
	if !ok || pv == nil {
		return t, nil
	}
	params, ok := pv.(chat.Object)
	if !ok {
		return tool{}, bad("%s: parameters must be a JSON schema object", name)
	}
	required := map[string]bool{}
	if rv, ok := params.Get("required"); ok {
		list, _ := rv.([]any)
		for _, r := range list {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	propsV, _ := params.Get("properties")
	props, _ := propsV.(chat.Object)
	for _, m := range props {
		if !validKey(m.Key) {
			return tool{}, bad("%s: parameter name %q cannot be written in a call", name, m.Key)
		}
		schema, _ := m.Value.(chat.Object)
		p, loose := readParam(m.Key, schema)
		p.Required = required[m.Key]
		if loose != nil {
			t.loose[m.Key] = *loose
		}
		t.action.Params = append(t.action.Params, p)
	}
	return t, nil
}

// readParam reads one property's schema; loose is set (to its JSON type)
// when droidgo reads the value as text.
func readParam(name string, schema chat.Object) (action.Param, *string) {
	p := action.Param{Name: name}
	if d, ok := schema.Get("description"); ok {
		p.Description, _ = d.(string)
	}
	typ := schemaType(schema)
	switch typ {
	case "integer", "number":
		p.Type = action.Integer
		if typ == "number" {
			p.Type = action.Number
		}
		p.Min, p.Max = bound(schema, "minimum"), bound(schema, "maximum")
		return p, nil
	case "string":
		p.Type = action.String
		if ev, ok := schema.Get("enum"); ok {
			list, _ := ev.([]any)
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					// A mixed enum is not a choice of texts.
					p.Enum = nil
					break
				}
				p.Enum = append(p.Enum, s)
			}
		}
		// Text to type is what a string parameter usually is in a
		// phone harness: keep its spaces.
		p.Verbatim = len(p.Enum) == 0
		return p, nil
	}
	p.Type = action.String
	p.Verbatim = true
	return p, &typ
}

// schemaType returns a schema's type; of a list of types the first that is
// not "null".
func schemaType(schema chat.Object) string {
	tv, _ := schema.Get("type")
	switch x := tv.(type) {
	case string:
		return x
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

func bound(schema chat.Object, key string) *float64 {
	v, ok := schema.Get(key)
	if !ok {
		return nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// restore gives a call's loose arguments their JSON values: Spark writes a
// boolean, list or object between its tags as JSON, which droidgo read as
// text. Text that is not JSON of the declared type stays text.
func (t tool) restore(c action.Call) action.Call {
	for k, typ := range t.loose {
		s, ok := c.Arguments[k].(string)
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || dec.More() {
			continue
		}
		if kindOf(v) == typ || (typ == "" && kindOf(v) != "string") {
			c.Arguments[k] = plain(jsonValue(v))
		}
	}
	return c
}

// jsonValue converts encoding/json's maps to the Objects plain reads.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		o := make(chat.Object, 0, len(x))
		for k, e := range x {
			o = append(o, chat.Member{Key: k, Value: jsonValue(e)})
		}
		return o
	case []any:
		for i := range x {
			x[i] = jsonValue(x[i])
		}
	}
	return v
}

func kindOf(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		return "number"
	case nil:
		return "null"
	}
	return "string"
}
