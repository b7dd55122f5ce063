package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func runParse(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), append([]string{"parse"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestParseJSONContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		args []string
		want string
		code int
	}{
		{
			name: "native after reasoning",
			in:   "Tap Wi-Fi.</think>\n<tool_call>tap<arg_key>index</arg_key><arg_value>1</arg_value></tool_call>",
			args: []string{"--json", "--in-thinking"},
			want: `{"reasoning":"Tap Wi-Fi.","reasoning_closed":true,"content":"","calls":[{"name":"tap","arguments":{"index":1}}],"format":"native","recoveries":[],"errors":[]}`,
		},
		{
			name: "bracket failure mode",
			in:   "[tap]\n{\"tool\": \"tap\", \"parameters\": {\"index\": 1}",
			args: []string{"--json"},
			want: `{"reasoning":"","reasoning_closed":true,"content":"","calls":[{"name":"tap","arguments":{"index":1}}],"format":"bracket","recoveries":["the call was written as [tap] followed by JSON; read the call from the JSON","the JSON was cut off with 1 bracket(s) still open; closed them at the end of the output"],"errors":[]}`,
		},
		{
			name: "unclosed reasoning",
			in:   "thinking about it",
			args: []string{"--json", "--in-thinking"},
			want: `{"reasoning":"thinking about it","reasoning_closed":false,"content":"","calls":[],"format":"none","recoveries":[],"errors":["the reasoning never closed (no </think>): the output ended while the model was still thinking, with no tool call"]}`,
			code: 1,
		},
		{
			// A real call after a user turn the model wrote inside its
			// reasoning was once dropped with the rest of the output.
			name: "user turn inside the reasoning",
			in:   "abc<|User|>def</think><tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>",
			args: []string{"--json", "--in-thinking"},
			want: `{"reasoning":"abc","reasoning_closed":true,"content":"","calls":[{"name":"swipe","arguments":{"direction":"up"}}],"format":"native","recoveries":["ignored the reasoning from a user turn the model wrote itself on, up to </think>"],"errors":[]}`,
		},
		{
			name: "unknown tool",
			in:   `{"name": "fly", "arguments": {}}`,
			args: []string{"--json"},
			want: `{"reasoning":"","reasoning_closed":true,"content":"","calls":[],"format":"json","recoveries":[],"errors":["unknown tool \"fly\"; valid tools: tap, long_press, type_text, swipe, press_key, open_app, wait, task_complete"]}`,
			code: 1,
		},
		{
			name: "openai with string argument",
			in:   `{"tool_calls":[{"function":{"name":"wait","arguments":"{\"seconds\":\"2\"}"}}]}`,
			args: []string{"--json"},
			want: `{"reasoning":"","reasoning_closed":true,"content":"","calls":[{"name":"wait","arguments":{"seconds":2}}],"format":"openai","recoveries":["wait: seconds was the string \"2\"; used the number 2"],"errors":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runParse(t, tt.in, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr = %q, want nothing", errOut)
			}
			if got := strings.TrimSuffix(out, "\n"); got != tt.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tt.want)
			}
			if strings.Count(out, "\n") != 1 {
				t.Errorf("want exactly one line of JSON, got %q", out)
			}
		})
	}
}

// TestParseJSONKeys checks the key set and order of the contract on every
// kind of result, independently of the values.
func TestParseJSONKeys(t *testing.T) {
	t.Parallel()
	want := []string{"reasoning", "reasoning_closed", "content", "calls", "format", "recoveries", "errors"}
	for _, in := range []string{"", "tap", "<tool_call>tap<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>", "{", "\x00\xff"} {
		_, out, _ := runParse(t, in, "--json")
		dec := json.NewDecoder(strings.NewReader(out))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("%q: output %q is not an object", in, out)
		}
		var keys []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tok.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
			if k := tok.(string); (k == "calls" || k == "recoveries" || k == "errors") && string(skip) == "null" {
				t.Errorf("%q: %s is null, want []", in, k)
			}
		}
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("%q: keys %v, want %v", in, keys, want)
		}
	}
}

func TestParseHuman(t *testing.T) {
	t.Parallel()
	in := "<tool_call>type_text<arg_key>text</arg_key><arg_value>hi</arg_value><arg_key>index</arg_key><arg_value>\"2\"</arg_value></tool_call>" +
		"<tool_call>swipe<arg_key>direction</arg_key><arg_value>north</arg_value></tool_call>"
	code, out, _ := runParse(t, in)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != `type_text(text="hi", index=2)` {
		t.Errorf("first line %q, want the call", lines[0])
	}
	for _, want := range []string{"format: native; no reasoning", `recovered: type_text: index was the string "2"; used the integer 2`, `error: swipe: direction "north" is not valid; valid values: up, down, left, right`} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runParse(t, "I am not sure.")
	if code != 1 || !strings.Contains(out, "no valid tool call") || !strings.Contains(out, "error: no tool call found") {
		t.Errorf("no call: code %d, output %q", code, out)
	}
}

func TestParseUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"extra"}, {"--nope"}, {"--json=maybe"}} {
		code, out, errOut := runParse(t, "tap(1)", args...)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if out != "" || !strings.HasPrefix(errOut, "droidgo: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: stdout %q stderr %q, want one error line", args, out, errOut)
		}
	}
}
