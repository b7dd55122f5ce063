package toolparse

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

// TestParseBehaviour covers rules the corpus does not show one by one.
func TestParseBehaviour(t *testing.T) {
	tests := []struct {
		name        string
		text        string
		opts        Options
		calls       []action.Call
		format      Format
		reasoning   string
		closed      bool
		content     string
		recoveryHas string
		errorHas    string
	}{
		{name: "late close reinterprets", text: "plan</think>tap(1)", calls: []action.Call{call("tap", "index", int64(1))},
			format: FormatBracket, reasoning: "plan", closed: true, recoveryHas: "function-call syntax"},
		{name: "think off, no tags", text: `{"name":"tap","arguments":{"index":2}}`, calls: []action.Call{call("tap", "index", int64(2))},
			format: FormatJSON, closed: true},
		{name: "empty in thinking", text: "", opts: Options{InThinking: true}, calls: []action.Call{}, format: FormatNone,
			closed: false, errorHas: "never closed"},
		{name: "native wins over JSON", text: `{"name":"tap","arguments":{"index":2}} <tool_call>tap<arg_key>index</arg_key><arg_value>5</arg_value></tool_call>`,
			calls: []action.Call{call("tap", "index", int64(5))}, format: FormatNative, closed: true,
			content: `{"name":"tap","arguments":{"index":2}}`},
		{name: "first format decides", text: `tap(1) then {"name":"tap","arguments":{"index":2}}`,
			calls: []action.Call{call("tap", "index", int64(1))}, format: FormatBracket, closed: true,
			content: `then {"name":"tap","arguments":{"index":2}}`, recoveryHas: "function-call"},
		{name: "custom tools", text: `<tool_call>zoom<arg_key>level</arg_key><arg_value>2</arg_value></tool_call>`,
			opts:  Options{Tools: []action.Tool{{Name: "zoom", Params: []action.Param{{Name: "level", Type: action.Integer, Required: true}}}}},
			calls: []action.Call{call("zoom", "level", int64(2))}, format: FormatNative, closed: true},
		{name: "custom tools reject default", text: `<tool_call>tap<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>`,
			opts:  Options{Tools: []action.Tool{{Name: "zoom"}}},
			calls: []action.Call{}, format: FormatNative, closed: true, errorHas: "valid tools: zoom"},
		{name: "closed reasoning, empty answer", text: `<think>so: {"name":"tap","arguments":{"index":2}}</think>`,
			calls: []action.Call{call("tap", "index", int64(2))}, format: FormatJSON, reasoning: `so: {"name":"tap","arguments":{"index":2}}`, closed: true,
			recoveryHas: "the answer had no tool call but the reasoning did"},
		{name: "closed reasoning JSON not used", text: `<think>maybe {"name":"tap","arguments":{"index":2}}</think>not sure`,
			calls: []action.Call{}, format: FormatNone, reasoning: `maybe {"name":"tap","arguments":{"index":2}}`, closed: true,
			content: "not sure", errorHas: "no tool call found"},
		{name: "unclosed reasoning picks last valid", text: "tap(1) or maybe tap(-4)? No: swipe(up) is right, or tap(",
			opts: Options{InThinking: true}, calls: []action.Call{call("swipe", "direction", "up")}, format: FormatBracket,
			reasoning: "tap(1) or maybe tap(-4)? No: swipe(up) is right, or tap(", recoveryHas: "never closed"},
		{name: "eos then junk", text: "<tool_call>tap<arg_key>index</arg_key><arg_value>1</arg_value></tool_call><｜end▁of▁sentence｜>garbage",
			calls: []action.Call{call("tap", "index", int64(1))}, format: FormatNative, closed: true, recoveryHas: "end-of-sentence"},
		// A turn the model writes inside its reasoning ends only the
		// reasoning: the call after </think> is the answer (this call was
		// once dropped with the rest of the output).
		{name: "user turn in reasoning", text: "abc<|User|>def</think><tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>",
			opts: Options{InThinking: true}, calls: []action.Call{call("swipe", "direction", "up")}, format: FormatNative, reasoning: "abc", closed: true,
			recoveryHas: "ignored the reasoning from a user turn the model wrote itself on, up to </think>"},
		{name: "user turn in reasoning without in-thinking", text: "abc<|User|>def</think><tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>",
			calls: []action.Call{call("swipe", "direction", "up")}, format: FormatNative, reasoning: "abc", closed: true,
			recoveryHas: "ignored the reasoning from a user turn"},
		{name: "user turn in unclosed reasoning", text: "maybe tap(1)<|User|>now tap(2)",
			opts: Options{InThinking: true}, calls: []action.Call{call("tap", "index", int64(1))}, format: FormatBracket, reasoning: "maybe tap(1)",
			recoveryHas: "ignored the text from a user turn"},
		// An end token ends the output wherever it is.
		{name: "end token in reasoning", text: "plan<|im_end|>x</think><tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>",
			opts: Options{InThinking: true}, calls: []action.Call{}, format: FormatNone, reasoning: "plan",
			recoveryHas: "ignored the text from an end-of-turn token on", errorHas: "never closed"},
		{name: "turn marker before a late think ends the output", text: "tap(1)<|User|>hi<think>tap(2)</think>",
			calls: []action.Call{call("tap", "index", int64(1))}, format: FormatBracket, closed: true,
			recoveryHas: "ignored the text from a user turn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Parse(tt.text, tt.opts)
			if !reflect.DeepEqual(r.Calls, tt.calls) {
				t.Errorf("calls %v, want %v", r.Calls, tt.calls)
			}
			if r.Format != tt.format || r.Reasoning != tt.reasoning || r.ReasoningClosed != tt.closed || r.Content != tt.content {
				t.Errorf("format %q reasoning %q closed %v content %q; want %q %q %v %q",
					r.Format, r.Reasoning, r.ReasoningClosed, r.Content, tt.format, tt.reasoning, tt.closed, tt.content)
			}
			rec := strings.Join(r.Recoveries, " | ")
			if (tt.recoveryHas == "") != (rec == "") || !strings.Contains(rec, tt.recoveryHas) {
				t.Errorf("recoveries %q, want %q", rec, tt.recoveryHas)
			}
			errs := strings.Join(r.Errors, " | ")
			if (tt.errorHas == "") != (errs == "") || !strings.Contains(errs, tt.errorHas) {
				t.Errorf("errors %q, want %q", errs, tt.errorHas)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	long := strings.Repeat("The screen lists Settings entries; element 3 is Network & internet. ", 60)
	cases := []struct{ name, text string }{
		{"native", "Tap the switch.</think>\n<tool_call>tap<arg_key>index</arg_key><arg_value>5</arg_value></tool_call>"},
		{"bracket-broken", "Element 1.</think>\n[tap]\n{\"tool\": \"tap\", \"parameters\": {\"index\": 1}"},
		{"native-long-reasoning", long + "</think><tool_call>type_text<arg_key>text</arg_key><arg_value>hello</arg_value></tool_call>"},
		{"unclosed-long-reasoning", long + " so I think"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				Parse(c.text, Options{InThinking: true})
			}
		})
	}
}

// TestRepeatedRecoveriesAreCounted: one broken call repeated 200,000
// times gives each recovery and error once, with its count, and a parse
// whose memory stays a small multiple of the input (at most maxCalls calls
// are read).
func TestRepeatedRecoveriesAreCounted(t *testing.T) {
	in := strings.Repeat("</think>tap(", 200000)
	var res Result
	allocs := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			res = Parse(in, Options{})
		}
	}).AllocedBytesPerOp()
	if len(res.Recoveries) > 4 || len(res.Errors) > 3 {
		t.Fatalf("%d recoveries, %d errors: %q", len(res.Recoveries), len(res.Errors), res.Recoveries)
	}
	found := false
	for _, r := range append(res.Recoveries, res.Errors...) {
		if strings.HasSuffix(r, fmt.Sprintf("(%d times)", maxCalls)) {
			found = true
		}
	}
	if !found {
		t.Errorf("no count in %q / %q", res.Recoveries, res.Errors)
	}
	if !strings.Contains(strings.Join(res.Recoveries, "\n"), "read the first 64") {
		t.Errorf("the cap is not reported: %q", res.Recoveries)
	}
	if allocs > 10*int64(len(in)) {
		t.Errorf("%d bytes allocated to parse %d bytes", allocs, len(in))
	}
}

// TestUnclosedReasoningSaidOnce: an output whose reasoning never closed
// gets one sentence saying so, whether the call came from the reasoning
// or stood before it; which sentence is decided by where the call was
// found, not by the words of the other (rewording one must not add the
// other).
func TestUnclosedReasoningSaidOnce(t *testing.T) {
	call := "<tool_call>tap<arg_key>index</arg_key><arg_value>1</arg_value></tool_call>"
	for _, c := range []struct {
		name, out string
		opts      Options
		want      string
	}{
		{"call in the reasoning", "I will tap it. " + call, Options{InThinking: true}, "used the last tool call written in the reasoning"},
		{"call before the reasoning", call + "<think>and then I thought on", Options{}, "used the call written before it"},
	} {
		res := Parse(c.out, c.opts)
		if len(res.Calls) != 1 {
			t.Fatalf("%s: %+v", c.name, res)
		}
		var unclosed []string
		for _, r := range res.Recoveries {
			if strings.Contains(r, "no </think>") {
				unclosed = append(unclosed, r)
			}
		}
		if len(unclosed) != 1 || !strings.Contains(unclosed[0], c.want) {
			t.Errorf("%s: recoveries %q, want one naming %q", c.name, res.Recoveries, c.want)
		}
	}
}
