package toolparse

import (
	"reflect"
	"testing"

	"github.com/droidgo/droidgo/action"
)

func TestTextForms(t *testing.T) {
	tests := []struct {
		in   string
		want action.Call
	}{
		{`tap({"index": 3})`, call("tap", "index", int64(3))},
		{`type_text("hello, world", 2)`, call("type_text", "text", "hello, world", "index", int64(2))},
		{`press_key(key=KEYCODE_BACK)`, call("press_key", "key", "back")},
		{`open_app(name='Google Maps')`, call("open_app", "name", "Google Maps")},
		{`tap(index: 3, )`, call("tap", "index", int64(3))},
		{`functions.swipe(direction="left")`, call("swipe", "direction", "left")},
		{"Action: `wait(seconds=1)`", call("wait", "seconds", 1.0)},
		{`[long_press(index=2)]`, call("long_press", "index", int64(2))},
		{`[open_app] {"name": "Phone"}`, call("open_app", "name", "Phone")},
		{`[press_key]: {"tool": "press_key", "args": {"key": "home"}}`, call("press_key", "key", "home")},
		{"task_complete Alarm set for 7:30", call("task_complete", "summary", "Alarm set for 7:30")},
		{"`swipe down`", call("swipe", "direction", "down")},
		{"open_app name=Clock", call("open_app", "name", "Clock")},
	}
	for _, tt := range tests {
		r := Parse(tt.in, Options{})
		if len(r.Calls) != 1 || !reflect.DeepEqual(r.Calls[0], tt.want) {
			t.Errorf("Parse(%q) calls = %v (errors %q), want %v", tt.in, r.Calls, r.Errors, tt.want)
		}
		if r.Format != FormatBracket || len(r.Recoveries) == 0 {
			t.Errorf("Parse(%q): format %q, recoveries %q; want bracket with the form reported", tt.in, r.Format, r.Recoveries)
		}
	}
}

// TestNotCalls checks text that must not be read as a call.
func TestNotCalls(t *testing.T) {
	for _, in := range []string{
		"I will tap (the blue button) later.",
		"See [Settings] for more.",
		"The [Wi-Fi](https://example.com) page.",
		`{"name": "Wi-Fi", "checked": true}`,
		"Taps are cheap; I tapped twice.",
		"tapping is next",
	} {
		r := Parse(in, Options{})
		if len(r.Calls) != 0 || r.Format != FormatNone {
			t.Errorf("Parse(%q) = %v format %q, want no call", in, r.Calls, r.Format)
		}
	}
}
