package action

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range Tools {
		if seen[tool.Name] {
			t.Errorf("tool %q declared twice", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		params := map[string]bool{}
		for _, p := range tool.Params {
			if params[p.Name] {
				t.Errorf("%s.%s declared twice", tool.Name, p.Name)
			}
			params[p.Name] = true
			switch p.Type {
			case Integer, Number, String:
			default:
				t.Errorf("%s.%s has type %q", tool.Name, p.Name, p.Type)
			}
			if len(p.Enum) > 0 && p.Type != String {
				t.Errorf("%s.%s: enum on a non-string", tool.Name, p.Name)
			}
		}
	}
	for _, name := range []string{Tap, LongPress, TypeText, Swipe, PressKey, OpenApp, Wait, TaskComplete} {
		if !seen[name] {
			t.Errorf("constant %q has no tool", name)
		}
	}
	for alias, key := range KeyAliases {
		if _, ok := Keys[key]; !ok {
			t.Errorf("alias %q maps to unknown key %q", alias, key)
		}
		if _, ok := Keys[alias]; ok {
			t.Errorf("alias %q shadows a real key", alias)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		call   Call
		errHas string // "" means valid
	}{
		{Call{Name: Tap, Arguments: map[string]any{"index": int64(0)}}, ""},
		{Call{Name: TypeText, Arguments: map[string]any{"text": "hi", "index": int64(2)}}, ""},
		{Call{Name: Swipe, Arguments: map[string]any{"direction": "left"}}, ""},
		{Call{Name: Wait, Arguments: map[string]any{"seconds": 30.0}}, ""},
		{Call{Name: "fly"}, "unknown tool \"fly\"; valid tools: tap, long_press, type_text, swipe, press_key, open_app, wait, task_complete"},
		{Call{Name: Tap, Arguments: map[string]any{}}, `tap: missing required argument "index" (integer)`},
		{Call{Name: Tap, Arguments: map[string]any{"index": "3"}}, `index must be an integer, got "3"`},
		{Call{Name: Tap, Arguments: map[string]any{"index": 3.0}}, "index must be an integer, got 3"},
		{Call{Name: Tap, Arguments: map[string]any{"index": int64(-1)}}, "index -1 is out of range; it must be at least 0"},
		{Call{Name: Wait, Arguments: map[string]any{"seconds": 31.0}}, "seconds 31 is out of range; it must be between 0 and 30"},
		{Call{Name: Wait, Arguments: map[string]any{"seconds": int64(3)}}, "seconds must be a number, got 3"},
		{Call{Name: Swipe, Arguments: map[string]any{"direction": "north"}}, `direction "north" is not valid; valid values: up, down, left, right`},
		{Call{Name: PressKey, Arguments: map[string]any{"key": "BACK"}}, "valid values: back, delete, dpad_down"},
		{Call{Name: Tap, Arguments: map[string]any{"index": int64(1), "why": "x"}}, `unknown argument "why"; tap takes index (integer)`},
	}
	for _, tt := range tests {
		err := Validate(tt.call, Tools)
		switch {
		case tt.errHas == "" && err != nil:
			t.Errorf("%v: unexpected error %v", tt.call, err)
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("%v: error %v, want it to contain %q", tt.call, err, tt.errHas)
		}
	}
}

func TestCallString(t *testing.T) {
	tests := []struct {
		call Call
		want string
	}{
		{Call{Name: Tap, Arguments: map[string]any{"index": int64(1)}}, "tap(index=1)"},
		{Call{Name: TypeText, Arguments: map[string]any{"index": int64(2), "text": "a \"b\""}}, `type_text(text="a \"b\"", index=2)`},
		{Call{Name: Wait, Arguments: map[string]any{"seconds": 1.5}}, "wait(seconds=1.5)"},
		{Call{Name: "other", Arguments: map[string]any{"b": int64(1), "a": "x"}}, `other(a="x", b=1)`},
	}
	for _, tt := range tests {
		if got := tt.call.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

func TestSignatureAndSchema(t *testing.T) {
	sw, _ := Lookup(Tools, Swipe)
	if got, want := sw.Signature(), "swipe(direction: up|down|left|right, index?: integer)"; got != want {
		t.Errorf("Signature() = %q, want %q", got, want)
	}
	b, err := json.Marshal(sw.FunctionSchema())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"swipe"`, `"required":["direction"]`, `"enum":["up","down","left","right"]`, `"minimum":0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema %s lacks %s", b, want)
		}
	}
	if got := sw.ParamList(); got != "direction (up|down|left|right), index (integer, optional)" {
		t.Errorf("ParamList() = %q", got)
	}
}
