package chat

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
)

// Render renders droidgo's own conversation and tools. Tools are written as
// the OpenAI function objects of Tool.FunctionSchema, keys in the usual order
// (name, description, parameters; type, properties, required; per property
// type, description, enum, minimum, maximum; properties in parameter order).
// Tool-call arguments are written in the order of the called tool's
// parameters, then any other keys sorted. Go floats are written as
// encoding/json would send them (2.0 as 2), so the prompt is the one an
// OpenAI-compatible server running the official template would build from
// the same request.
func Render(msgs []model.Message, tools []action.Tool, opts Options) (string, error) {
	vals := make([]any, len(msgs))
	for i, m := range msgs {
		v, err := MessageValue(m, tools)
		if err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
		vals[i] = v
	}
	tv := make([]any, len(tools))
	for i, t := range tools {
		tv[i] = ToolValue(t)
	}
	return RenderValues(vals, tv, opts)
}

// ToolValue returns a tool as {"type": "function", "function": {...}}.
func ToolValue(t action.Tool) Object {
	fn := ordered(t.FunctionSchema(), []string{"name", "description", "parameters"})
	if p, ok := fn.Get("parameters"); ok {
		params := ordered(p, []string{"type", "properties", "required"})
		if props, ok := params.Get("properties"); ok {
			names := make([]string, len(t.Params))
			for i, p := range t.Params {
				names[i] = p.Name
			}
			po := ordered(props, names)
			for i := range po {
				po[i].Value = ordered(po[i].Value, []string{"type", "description", "enum", "minimum", "maximum"})
			}
			params = params.set("properties", po)
		}
		fn = fn.set("parameters", params)
	}
	return Object{{"type", "function"}, {"function", fn}}
}

// ordered turns a map (or reorders an Object) into an Object, keys in order
// first, the rest sorted; nested maps are converted with sorted keys. Other
// values pass through goValue.
func ordered(v any, order []string) Object {
	var o Object
	switch x := v.(type) {
	case map[string]any:
		o = make(Object, 0, len(x))
		for k, e := range x {
			o = append(o, Member{k, goValue(e)})
		}
	case Object:
		o = slices.Clone(x)
	default:
		return nil
	}
	rank := func(k string) int {
		if i := slices.Index(order, k); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(o, func(a, b Member) int {
		if c := cmp.Compare(rank(a.Key), rank(b.Key)); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return o
}

// goValue converts Go values to the JSON values the renderer takes.
func goValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return ordered(x, nil)
	case []string:
		a := make([]any, len(x))
		for i, s := range x {
			a[i] = s
		}
		return a
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = goValue(e)
		}
		return a
	case *float64:
		if x == nil {
			return nil
		}
		return *x
	}
	return v
}

// MessageValue converts a message to its OpenAI-shaped JSON value. Argument
// keys follow the parameter order of the called tool in tools, then any
// other keys sorted (action.Call.OrderedKeys).
func MessageValue(m model.Message, tools []action.Tool) (Object, error) {
	o := Object{{"role", m.Role}, {"content", m.Content}}
	if m.Reasoning != "" {
		o = append(o, Member{"reasoning_content", m.Reasoning})
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			args := Object{}
			for _, k := range c.OrderedKeys(tools) {
				args = append(args, Member{k, goValue(c.Arguments[k])})
			}
			calls[i] = Object{{"type", "function"}, {"function", Object{{"name", c.Name}, {"arguments", args}}}}
		}
		o = append(o, Member{"tool_calls", calls})
	}
	return o, nil
}
