package toolparse

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestReadJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    any
		end     int    // -1: len(in)
		repairs string // substring of the joined repairs; "" means none
	}{
		{`{"a": 1}`, map[string]any{"a": json.Number("1")}, -1, ""},
		{`{"a": [1, "x", true, null, {"b": -2.5e3}]}`, map[string]any{"a": []any{json.Number("1"), "x", true, nil, map[string]any{"b": json.Number("-2.5e3")}}}, -1, ""},
		{`{"a": "\u00e9\ud83d\ude00\n\"q\""}`, map[string]any{"a": "é😀\n\"q\""}, -1, ""},
		{`{'a': 'it\'s'}`, map[string]any{"a": "it's"}, -1, "single quotes"},
		{`{a: 1, b_c: 2}`, map[string]any{"a": json.Number("1"), "b_c": json.Number("2")}, -1, "unquoted keys"},
		{`{"a": 1,}`, map[string]any{"a": json.Number("1")}, -1, "trailing"},
		{`{"a": 1 "b": 2}`, map[string]any{"a": json.Number("1"), "b": json.Number("2")}, -1, "missing a comma"},
		{`{"a": {"b": 1}`, map[string]any{"a": map[string]any{"b": json.Number("1")}}, -1, "cut off with 1 bracket"},
		{`{"a": "cut`, map[string]any{"a": "cut"}, -1, "string was cut off"},
		{`{"a": 1} trailing`, map[string]any{"a": json.Number("1")}, 8, ""},
		{`{"a": 1 and then prose`, map[string]any{"a": json.Number("1")}, 8, "before other text"},
		{`{"a": True, "b": None}`, map[string]any{"a": true, "b": nil}, -1, "Python literals"},
		{`{"a": hello world}`, map[string]any{"a": "hello world"}, -1, "unquoted text values"},
		{`{"a"= 1}`, map[string]any{"a": json.Number("1")}, -1, "'='"},
		{`[1, 2}`, []any{json.Number("1"), json.Number("2")}, -1, "wrong kind"},
		{`{"a": 3.}`, map[string]any{"a": json.Number("3")}, 7, "before other text"},
		{`[1, @]`, []any{json.Number("1")}, 4, "before other text"},
		{`{"a":`, map[string]any{}, -1, "cut off"},
		{`{"a": "say "hi" now"}`, map[string]any{"a": `say "hi" now`}, -1, "unescaped quote"},
		{`{'a': 'it's'}`, map[string]any{"a": "it's"}, -1, "unescaped quote"},
		{`{"a": "x" "b": "y"}`, map[string]any{"a": "x", "b": "y"}, -1, "missing a comma"},
		{"{\"a\": \"x\"\nprose", map[string]any{"a": "x"}, 10, "before other text"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, end, notes, err := readJSON(tt.in, 0)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(v, tt.want) {
				t.Errorf("value = %#v, want %#v", v, tt.want)
			}
			wantEnd := tt.end
			if wantEnd < 0 {
				wantEnd = len(tt.in)
			}
			if end != wantEnd {
				t.Errorf("end = %d, want %d", end, wantEnd)
			}
			joined := strings.Join(notes, " | ")
			if tt.repairs == "" && joined != "" || !strings.Contains(joined, tt.repairs) {
				t.Errorf("repairs = %q, want %q", joined, tt.repairs)
			}
		})
	}
}

func TestReadJSONErrors(t *testing.T) {
	for _, in := range []string{`{"a": @}`, `{"a": -x}`, strings.Repeat(`{"a":`, maxDepth+1)} {
		if _, _, _, err := readJSON(in, 0); err == nil {
			t.Errorf("readJSON(%q): no error", in)
		}
	}
}

func TestReadJSONExact(t *testing.T) {
	for in, ok := range map[string]bool{"3": true, " 3 ": true, `"x"`: true, "3 4": false, "'x'": false, "": false, "{": false, "x": false} {
		if _, got := readJSONExact(in); got != ok {
			t.Errorf("readJSONExact(%q) ok = %v, want %v", in, got, ok)
		}
	}
}
