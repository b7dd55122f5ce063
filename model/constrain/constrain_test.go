package constrain

import (
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

func TestCheck(t *testing.T) {
	c := New(action.Tools, []int{0, 1, 2, 12, 30})
	cases := []struct {
		in               string
		viable, complete bool
	}{
		{"", true, false},
		{"\n", true, false},
		{"\n\n\n\n\n", false, false},
		{"<tool", true, false},
		{"<tool_call>", true, false},
		{"<tool_call>ta", true, false},
		{"<tool_call>tap", true, false},
		{"<tool_call>tapx", false, false},
		{"<tool_call>tip", false, false},
		{"<tool_call>tap<", true, false},
		{"<tool_call>tap</", false, false}, // index is required
		{"<tool_call>tap<arg_key>in", true, false},
		{"<tool_call>tap<arg_key>text", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>1", true, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>3", true, false}, // 30
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>3<", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>5", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>12</arg_value>", true, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>12</arg_value></tool_call>", true, true},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>12</arg_value></tool_call>\n", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>12</arg_value><arg_key>index", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value>x", false, false},
		{"<tool_call>tap<arg_key>index</arg_key><arg_value></arg_value>", false, false},
		{"<tool_call>type_text<arg_key>text</arg_key><arg_value>hello world; $(x)</arg_value></tool_call>", true, true},
		{"<tool_call>type_text<arg_key>text</arg_key><arg_value>hi</arg_value><arg_key>index</arg_key><arg_value>2</arg_value></tool_call>", true, true},
		{"<tool_call>type_text<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>", false, false},
		{"<tool_call>swipe<arg_key>direction</arg_key><arg_value>u", true, false},
		{"<tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>", true, true},
		{"<tool_call>swipe<arg_key>direction</arg_key><arg_value>upward", false, false},
		{"<tool_call>press_key<arg_key>key</arg_key><arg_value>back</arg_value></tool_call>", true, true},
		{"<tool_call>press_key<arg_key>key</arg_key><arg_value>reboot", false, false},
		{"<tool_call>wait<arg_key>seconds</arg_key><arg_value>2.5</arg_value></tool_call>", true, true},
		{"<tool_call>wait<arg_key>seconds</arg_key><arg_value>31", false, false},
		{"<tool_call>wait<arg_key>seconds</arg_key><arg_value>2.</arg_value>", false, false},
		{"<tool_call>task_complete<arg_key>summary</arg_key><arg_value>Wi-Fi is on</arg_value></tool_call>", true, true},
		{"Sure! <tool_call>", false, false},
		{"<tool_call>open_app<arg_key>name</arg_key><arg_value> Settings", false, false},
		{"<tool_call>open_app<arg_key>name</arg_key><arg_value>Settings </arg_value>", false, false},
		{"<tool_call>open_app<arg_key>name</arg_key><arg_value>Google Maps</arg_value></tool_call>", true, true},
		{"<tool_call>type_text<arg_key>text</arg_key><arg_value> two  spaces </arg_value></tool_call>", true, true},
		{`{"name": "tap"}`, false, false},
	}
	for _, tc := range cases {
		v, done := c.Check(tc.in)
		if v != tc.viable || done != tc.complete {
			t.Errorf("Check(%q) = %v, %v; want %v, %v", tc.in, v, done, tc.viable, tc.complete)
		}
	}
}

// Every complete answer must be a call that names an offered tool with
// valid arguments: walk random token sequences through the constraint and
// check what it accepts.
func FuzzCheck(f *testing.F) {
	f.Add("<tool_call>tap<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>")
	f.Add("<tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>")
	f.Add("\n<tool_call>wait<arg_key>seconds</arg_key><arg_value>1.5</arg_value></tool_call>")
	c := New(action.Tools, []int{0, 4, 7})
	f.Fuzz(func(t *testing.T, s string) {
		v, done := c.Check(s)
		if done && !v {
			t.Fatal("complete but not viable")
		}
		// Every prefix of a viable text is viable.
		if v {
			for i := 0; i < len(s); i++ {
				if pv, _ := c.Check(s[:i]); !pv {
					t.Fatalf("prefix %q of viable %q is not viable", s[:i], s)
				}
			}
		}
		if done && !strings.HasSuffix(s, closeCall) {
			t.Fatalf("complete without closing: %q", s)
		}
	})
}
