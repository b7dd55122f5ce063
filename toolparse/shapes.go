package toolparse

import (
	"fmt"
	"sort"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// Keys under which JSON call shapes put the tool name and its arguments.
var (
	nameKeys = []string{"name", "tool", "tool_name", "action", "function", "function_name", "command", "api", "call"}
	argKeys  = []string{"arguments", "parameters", "args", "params", "input", "action_input", "tool_input", "kwargs", "argument", "inputs"}
	// metaKeys are fields of a call object that are not arguments.
	metaKeys = map[string]bool{"thought": true, "thoughts": true, "thinking": true, "reasoning": true,
		"explanation": true, "observation": true, "plan": true, "comment": true, "type": true, "id": true,
		"index_of_call": true, "rationale": true}
)

// callsFromJSON reads the calls a JSON value describes, in the shapes
// models use: {"name","arguments"}, {"tool","parameters"|"args"},
// {"action":"tap","index":3}, {"action":{...}}, {"tool_calls":[...]},
// {"function":{"name","arguments"}}, {"tap":{"index":3}}, and lists of
// those. format is the format to report unless the shape is OpenAI's.
// Values that describe no call give nothing.
func callsFromJSON(v any, format Format, tools []action.Tool, depth int) []candidate {
	if depth > 8 {
		return nil
	}
	switch x := v.(type) {
	case []any:
		var out []candidate
		for _, e := range x {
			out = append(out, callsFromJSON(e, format, tools, depth+1)...)
		}
		return out
	case map[string]any:
		return callsFromObject(x, format, tools, depth)
	}
	return nil
}

func callsFromObject(m map[string]any, format Format, tools []action.Tool, depth int) []candidate {
	// OpenAI: {"tool_calls":[{"type":"function","function":{"name","arguments":"{...}"}}]}
	for _, k := range []string{"tool_calls", "function_call", "tool_call", "calls", "actions"} {
		if inner, ok := m[k]; ok {
			f := format
			if k == "tool_calls" || k == "function_call" {
				f = FormatOpenAI
			}
			if cs := callsFromJSON(inner, f, tools, depth+1); len(cs) > 0 {
				return cs
			}
		}
	}
	if fn, ok := m["function"].(map[string]any); ok {
		if cs := callsFromObject(fn, FormatOpenAI, tools, depth+1); len(cs) > 0 {
			for i := range cs {
				cs[i].format = FormatOpenAI
			}
			return cs
		}
	}
	// {"action": {...}} (ReAct-like wrappers) and {"action": "tap", "action_input": {...}}
	for _, k := range []string{"action", "tool", "call"} {
		if inner, ok := m[k].(map[string]any); ok {
			if cs := callsFromObject(inner, format, tools, depth+1); len(cs) > 0 {
				return cs
			}
		}
	}
	nameKey, name := "", ""
	for _, k := range nameKeys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			nameKey, name = k, s
			break
		}
	}
	if nameKey == "" {
		return singleKeyCall(m, format, tools)
	}
	c := candidate{name: strings.TrimSpace(name), format: format}
	argKey := ""
	for _, k := range argKeys {
		if _, ok := m[k]; ok {
			argKey = k
			break
		}
	}
	if nameKey == "name" && argKey == "" {
		// {"name": ...} alone is as likely data as a call: only a known
		// tool name makes it one.
		if _, ok := resolveName(name, tools); !ok {
			return nil
		}
	}
	if argKey != "" {
		switch a := m[argKey].(type) {
		case map[string]any:
			c.args = a
		case string:
			// OpenAI sends arguments as a JSON string.
			s := strings.TrimSpace(a)
			if s == "" {
				c.args = map[string]any{}
				break
			}
			i := strings.IndexByte(s, '{')
			if i < 0 {
				// "arguments": "Settings" — one plain value, matched
				// to the first parameter not given otherwise.
				c.args = map[string]any{"": a}
				if m := keyValue.FindStringSubmatch(s); m != nil {
					// "index=3"
					var v any = strings.Trim(m[2], `"'`)
					if n, ok := readJSONExact(m[2]); ok {
						v = n
					}
					c.args = map[string]any{m[1]: v}
				}
				c.notes = append(c.notes, fmt.Sprintf("the arguments of %q were plain text, not an object: %s", c.name, describe(a)))
				break
			}
			v, _, notes, err := readJSON(s, i)
			obj, ok := v.(map[string]any)
			if err != nil || !ok {
				c.problem = fmt.Sprintf("the arguments of %q are not a JSON object: %s", c.name, describe(a))
				break
			}
			c.args = obj
			for _, n := range notes {
				c.notes = append(c.notes, "in the arguments string: "+n)
			}
		case nil:
			c.args = map[string]any{}
		case []any:
			// Positional arguments: matched to parameters in order later.
			c.args = positional(a)
		default:
			c.args = map[string]any{"": a}
		}
	}
	// Fields beside the name that are not arguments or known metadata
	// are taken as arguments ({"action":"tap","index":3}).
	var top []string
	for k := range m {
		if k == nameKey || k == argKey || metaKeys[k] {
			continue
		}
		top = append(top, k)
	}
	sort.Strings(top)
	if len(top) > 0 {
		if c.args == nil {
			// {"action": "tap", "index": 3}: the arguments sit beside
			// the name, a shape of its own.
			c.args = map[string]any{}
			for _, k := range top {
				c.args[k] = m[k]
			}
		} else {
			// Both an arguments object and fields beside it: take the
			// fields the tool declares, ignore the rest.
			t, known := lookupLoose(c.name, tools)
			var moved, ignored []string
			for _, k := range top {
				if _, isParam := t.Param(k); known && isParam {
					if _, exists := c.args[k]; !exists {
						c.args[k] = m[k]
						moved = append(moved, k)
						continue
					}
				}
				ignored = append(ignored, k)
			}
			if len(moved) > 0 {
				c.notes = append(c.notes, fmt.Sprintf("took %s from beside the arguments object as %s", quoteList(moved), plural(len(moved), "an argument", "arguments")))
			}
			if len(ignored) > 0 {
				c.notes = append(c.notes, fmt.Sprintf("ignored %s beside the call's arguments", quoteList(ignored)))
			}
		}
	}
	if c.args == nil {
		c.args = map[string]any{}
	}
	return []candidate{c}
}

// singleKeyCall reads {"tap": {"index": 3}} or {"tap": 3}.
func singleKeyCall(m map[string]any, format Format, tools []action.Tool) []candidate {
	if len(m) != 1 {
		return nil
	}
	for k, v := range m {
		if _, ok := resolveName(k, tools); !ok {
			return nil
		}
		c := candidate{name: k, format: format,
			notes: []string{fmt.Sprintf("the JSON used the tool name %q as its key; read the value as the arguments", k)}}
		switch a := v.(type) {
		case map[string]any:
			c.args = a
		case []any:
			c.args = positional(a)
		case nil:
			c.args = map[string]any{}
		default:
			c.args = map[string]any{"": a}
		}
		return []candidate{c}
	}
	return nil
}

// positional stores unnamed arguments under keys "", "\x00", ... for
// bindPositional to match with parameters in declared order.
func positional(a []any) map[string]any {
	m := map[string]any{}
	for i, v := range a {
		m[strings.Repeat("\x00", i)] = v
	}
	return m
}

func quoteList(ks []string) string {
	q := make([]string, len(ks))
	for i, k := range ks {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}
