package chat

import (
	"encoding/json"
	"math"
	"testing"
)

// TestPrinters writes every kind of value the renderer takes in both forms,
// json.dumps (tojson) and Python's str (~ and {{ }}), as Python 3 prints
// them, so the two cannot drift apart on which values they accept.
func TestPrinters(t *testing.T) {
	half := 0.5
	var nilFloat *float64
	for _, tc := range []struct {
		name       string
		v          any
		json, repr string
		truthy     bool
	}{
		{"nil", nil, `null`, `None`, false},
		{"true", true, `true`, `True`, true},
		{"false", false, `false`, `False`, false},
		// pyStr returns a bare string as itself; inside a list it is quoted.
		{"string", []any{"it's \"x\"\n"}, `["it's \"x\"\n"]`, `['it\'s "x"\n']`, true},
		{"string with quote", []any{"it's"}, `["it's"]`, `["it's"]`, true},
		{"json int", json.Number("-0"), `0`, `0`, false},
		{"json float", json.Number("2.50"), `2.5`, `2.5`, true},
		{"int", 7, `7`, `7`, true},
		{"int64", int64(-3), `-3`, `-3`, true},
		{"uint8", uint8(0), `0`, `0`, false},
		{"float64 whole", 2.0, `2`, `2`, true},
		{"float32", float32(0.25), `0.25`, `0.25`, true},
		{"float64 small", 1e-5, `1e-05`, `1e-05`, true},
		{"+inf", math.Inf(1), `Infinity`, `inf`, true},
		{"-inf", math.Inf(-1), `-Infinity`, `-inf`, true},
		{"nan", math.NaN(), `NaN`, `nan`, true},
		{"*float64", &half, `0.5`, `0.5`, true},
		{"nil *float64", nilFloat, `null`, `None`, false},
		{"object", Object{{"b", 1}, {"a", []any{true}}}, `{"b": 1, "a": [true]}`, `{'b': 1, 'a': [True]}`, true},
		{"empty object", Object{}, `{}`, `{}`, false},
		{"list", []any{nil, "x", 1.5}, `[null, "x", 1.5]`, `[None, 'x', 1.5]`, true},
		{"empty list", []any{}, `[]`, `[]`, false},
		{"[]string", []string{"a", "b"}, `["a", "b"]`, `['a', 'b']`, true},
		{"empty []string", []string{}, `[]`, `[]`, false},
		{"map", map[string]any{"z": []string{"q"}, "a": nil}, `{"a": null, "z": ["q"]}`, `{'a': None, 'z': ['q']}`, true},
		{"empty map", map[string]any{}, `{}`, `{}`, false},
		{"nested", Object{{"l", []any{map[string]any{"k": &half}}}}, `{"l": [{"k": 0.5}]}`, `{'l': [{'k': 0.5}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := toJSON(tc.v); err != nil || got != tc.json {
				t.Errorf("toJSON = %q, %v; want %q", got, err, tc.json)
			}
			if got, err := pyStr(tc.v); err != nil || got != tc.repr {
				t.Errorf("pyStr = %q, %v; want %q", got, err, tc.repr)
			}
			if got := truthy(tc.v); got != tc.truthy {
				t.Errorf("truthy = %v, want %v", got, tc.truthy)
			}
		})
	}
}

func TestPrintersReject(t *testing.T) {
	for _, v := range []any{struct{}{}, []int{1}, Object{{"k", make(chan int)}}} {
		if got, err := toJSON(v); err == nil {
			t.Errorf("toJSON(%T) = %q, want an error", v, got)
		}
		if got, err := pyStr(v); err == nil {
			t.Errorf("pyStr(%T) = %q, want an error", v, got)
		}
	}
}
