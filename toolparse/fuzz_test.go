package toolparse

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

// checkInvariants checks the promises Parse makes for any input.
func checkInvariants(t *testing.T, text string, r Result) {
	t.Helper()
	if r.Calls == nil || r.Recoveries == nil || r.Errors == nil {
		t.Fatalf("nil slice in result: %#v", r)
	}
	switch r.Format {
	case FormatNative, FormatBracket, FormatJSON, FormatOpenAI, FormatNone:
	default:
		t.Fatalf("format %q is not one of the contract's", r.Format)
	}
	if len(r.Calls) > 0 && r.Format == FormatNone {
		t.Fatalf("calls found but format is none")
	}
	if len(r.Calls) == 0 && len(r.Errors) == 0 {
		t.Fatalf("no call and no error explaining why")
	}
	if all := strings.Join(append(append([]string{}, r.Errors...), r.Recoveries...), " "); !r.ReasoningClosed && !strings.Contains(all, "never closed") {
		t.Fatalf("unclosed reasoning not reported: %v %v", r.Errors, r.Recoveries)
	}
	for _, c := range r.Calls {
		if err := action.Validate(c, action.Tools); err != nil {
			t.Fatalf("returned call %v is invalid: %v", c, err)
		}
		for k, v := range c.Arguments {
			switch v.(type) {
			case int64, float64, string:
			default:
				t.Fatalf("argument %s has type %T", k, v)
			}
		}
	}
	for _, s := range append(append([]string{}, r.Recoveries...), r.Errors...) {
		if strings.TrimSpace(s) == "" {
			t.Fatalf("empty recovery or error")
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("result does not marshal: %v", err)
	}
	if len(r.Reasoning)+len(r.Content) > len(text) {
		t.Fatalf("reasoning and content are longer than the input")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.text, c.opts.InThinking)
	}
	for _, s := range []string{
		"{", "[", "[tap]", "<tool_call>", "</tool_call>", "<arg_key>", "tap(", "{'a", `{"a":"\u`,
		strings.Repeat("[", 200), strings.Repeat("{\"a\":", 200), "<think>", "</think>",
		"<function=", "<function=tap><parameter=", strings.Repeat("<parameter=index>", 100),
		"<start_function_call>call:", "call:tap{text:<escape>", "Action: tap\nAction Input: {",
		"[tap(1), ", "<|observation|>", "<arg_key>a</arg_key><arg_key>b</arg_key><arg_value>",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, inThinking bool) {
		r := Parse(text, Options{InThinking: inThinking})
		checkInvariants(t, text, r)
	})
}
