package toolparse

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

func TestCoerce(t *testing.T) {
	tests := []struct {
		name     string
		in       action.Call
		want     map[string]any // nil when an error is expected
		wantName string
		recovers bool   // at least one recovery expected
		errHas   string // substring of the error
	}{
		{name: "exact int64", in: call("tap", "index", int64(3)), want: args("index", int64(3))},
		{name: "json number", in: call("tap", "index", json.Number("3")), want: args("index", int64(3))},
		{name: "std json float", in: call("tap", "index", 3.0), want: args("index", int64(3))},
		{name: "number 3.0 as json", in: call("tap", "index", json.Number("3.0")), want: args("index", int64(3)), recovers: true},
		{name: "string index", in: call("tap", "index", "3"), want: args("index", int64(3)), recovers: true},
		{name: "hash index", in: call("tap", "index", "#12"), want: args("index", int64(12)), recovers: true},
		{name: "list of one", in: call("tap", "index", []any{json.Number("5")}), want: args("index", int64(5)), recovers: true},
		{name: "fractional index", in: call("tap", "index", 2.5), errHas: "must be an integer, got 2.5"},
		{name: "word index", in: call("tap", "index", "three"), errHas: `must be an integer, the element's number N from [N] in the screen list, not a label; got "three"`},
		{name: "label for index", in: call("long_press", "index", "Wi-Fi"), errHas: `long_press: index must be an integer, the element's number N from [N] in the screen list, not a label; got "Wi-Fi"`},
		{name: "symbol index", in: call("tap", "index", "?"), errHas: `index must be an integer, got "?"`},
		{name: "prompt line copied", in: call("tap", "index", `[12] switch "Wi-Fi" off`), want: args("index", int64(12)), recovers: true},
		{name: "number then label", in: call("tap", "index", "3 (Wi-Fi)"), want: args("index", int64(3)), recovers: true},
		{name: "number colon label", in: call("tap", "index", "4: Settings"), want: args("index", int64(4)), recovers: true},
		{name: "element word", in: call("tap", "index", "element 7"), want: args("index", int64(7)), recovers: true},
		{name: "item hash", in: call("long_press", "index", "Item #2"), want: args("index", int64(2)), recovers: true},
		{name: "number inside a name", in: call("tap", "index", "Wi-Fi 6"), errHas: `not a label; got "Wi-Fi 6"`},
		{name: "count in parentheses", in: call("tap", "index", "Results (89)"), errHas: `not a label; got "Results (89)"`},
		{name: "range", in: call("tap", "index", "10-12"), errHas: `must be an integer, got "10-12"`},
		{name: "two numbers", in: call("tap", "index", "index 3 or 4"), errHas: `not a label; got "index 3 or 4"`},
		{name: "bool index", in: call("tap", "index", true), errHas: "must be an integer, got true"},
		{name: "negative index", in: call("tap", "index", int64(-2)), errHas: "at least 0"},
		{name: "missing index", in: call("tap"), errHas: `missing required argument "index" (integer)`},
		{name: "null index", in: call("tap", "index", nil), errHas: `missing required argument "index"`},
		{name: "wait number", in: call("wait", "seconds", int64(2)), want: args("seconds", 2.0)},
		{name: "wait string", in: call("wait", "seconds", "1.5"), want: args("seconds", 1.5), recovers: true},
		{name: "wait unit", in: call("wait", "seconds", "2 sec"), want: args("seconds", 2.0), recovers: true},
		{name: "wait too long", in: call("wait", "seconds", json.Number("45")), errHas: "between 0 and 30"},
		{name: "text number", in: call("type_text", "text", json.Number("1234")), want: args("text", "1234"), recovers: true},
		{name: "text verbatim", in: call("type_text", "text", "  spaced  "), want: args("text", "  spaced  ")},
		{name: "text line breaks", in: call("type_text", "text", "\nhello\n"), want: args("text", "hello"), recovers: true},
		{name: "name trimmed", in: call("open_app", "name", " Settings\n"), want: args("name", "Settings"), recovers: true},
		{name: "name quoted", in: call("open_app", "name", `"Clock"`), want: args("name", "Clock"), recovers: true},
		{name: "text quotes kept", in: call("type_text", "text", `"hi"`), want: args("text", `"hi"`)},
		{name: "enum trimmed", in: call("swipe", "direction", "\nup\n"), want: args("direction", "up"), recovers: true},
		{name: "text and optional index", in: call("type_text", "text", "hi", "index", "2"), want: args("text", "hi", "index", int64(2)), recovers: true},
		{name: "optional null dropped", in: call("swipe", "direction", "up", "index", nil), want: args("direction", "up"), recovers: true},
		{name: "enum case", in: call("swipe", "direction", "UP"), want: args("direction", "up"), recovers: true},
		{name: "enum bad", in: call("swipe", "direction", "north"), errHas: "valid values: up, down, left, right"},
		{name: "keycode", in: call("press_key", "key", "KEYCODE_BACK"), want: args("key", "back"), recovers: true},
		{name: "key alias", in: call("press_key", "key", "Backspace"), want: args("key", "delete"), recovers: true},
		{name: "key app switch", in: call("press_key", "key", "KEYCODE_APP_SWITCH"), want: args("key", "recent_apps"), recovers: true},
		{name: "key bad", in: call("press_key", "key", "launch"), errHas: "valid values: back, delete"},
		{name: "name case", in: call("Tap", "index", int64(1)), wantName: "tap", want: args("index", int64(1)), recovers: true},
		{name: "name dash", in: call("long-press", "index", int64(1)), wantName: "long_press", want: args("index", int64(1)), recovers: true},
		{name: "name camel", in: call("TypeText", "text", "x"), wantName: "type_text", want: args("text", "x"), recovers: true},
		{name: "name flat", in: call("taskcomplete", "summary", "ok"), wantName: "task_complete", want: args("summary", "ok"), recovers: true},
		{name: "unknown tool", in: call("click", "index", int64(1)), errHas: "valid tools: tap, long_press"},
		{name: "empty tool", in: call(""), errHas: "no tool name"},
		{name: "synonym", in: call("tap", "element_id", json.Number("4")), want: args("index", int64(4)), recovers: true},
		{name: "single leftover", in: call("open_app", "target_app", "Maps"), want: args("name", "Maps"), recovers: true},
		{name: "unknown extra dropped", in: call("tap", "index", int64(1), "why", "x"), want: args("index", int64(1)), recovers: true},
		{name: "two problems", in: call("swipe", "direction", "north", "index", int64(-1)), errHas: "valid values: up, down, left, right; index -1 is out of range"},
		{name: "object text", in: call("type_text", "text", map[string]any{}), errHas: "text must be a string, got an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rec, err := Coerce(tt.in, nil)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			wantName := tt.wantName
			if wantName == "" {
				wantName = tt.in.Name
			}
			if got.Name != wantName || !reflect.DeepEqual(got.Arguments, tt.want) {
				t.Fatalf("got %s %#v, want %s %#v", got.Name, got.Arguments, wantName, tt.want)
			}
			if tt.recovers != (len(rec) > 0) {
				t.Fatalf("recoveries = %q, want some: %v", rec, tt.recovers)
			}
			if err := action.Validate(got, action.Tools); err != nil {
				t.Fatalf("coerced call does not validate: %v", err)
			}
		})
	}
}

func call(name string, kv ...any) action.Call {
	return action.Call{Name: name, Arguments: args(kv...)}
}

func args(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestCoerceCustomTools(t *testing.T) {
	tools := []action.Tool{{Name: "zoom", Params: []action.Param{{Name: "level", Type: action.Number, Required: true}}}}
	got, _, err := Coerce(call("zoom", "level", "2"), tools)
	if err != nil || got.Arguments["level"] != 2.0 {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, _, err := Coerce(call("tap", "index", int64(1)), tools); err == nil || !strings.Contains(err.Error(), "valid tools: zoom") {
		t.Fatalf("err = %v, want unknown tool naming zoom", err)
	}
}

func TestRenderNativeRoundTrip(t *testing.T) {
	calls := []action.Call{
		call("tap", "index", int64(3)),
		call("type_text", "text", "a <b> & \"c\"\nline", "index", int64(0)),
		call("swipe", "direction", "left"),
		call("wait", "seconds", 1.5),
		call("task_complete", "summary", "done: 100%"),
	}
	var all strings.Builder
	for _, c := range calls {
		s := RenderNative(c)
		all.WriteString(s)
		r := Parse(s, Options{})
		if len(r.Calls) != 1 || !reflect.DeepEqual(r.Calls[0], c) || len(r.Recoveries) != 0 || r.Format != FormatNative {
			t.Errorf("RenderNative(%v) = %q parses back as %+v", c, s, r)
		}
	}
	r := Parse(all.String(), Options{})
	if !reflect.DeepEqual(r.Calls, calls) {
		t.Errorf("concatenated calls parse as %v, want %v", r.Calls, calls)
	}
	if got, want := RenderNative(call("type_text", "index", int64(2), "text", "hi")),
		"<tool_call>type_text<arg_key>text</arg_key><arg_value>hi</arg_value><arg_key>index</arg_key><arg_value>2</arg_value></tool_call>"; got != want {
		t.Errorf("RenderNative = %q, want %q (schema order, template form)", got, want)
	}
}
