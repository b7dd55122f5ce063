package toolparse

import (
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

func TestReadCall(t *testing.T) {
	tests := []struct {
		in   string
		want string // the call's String(), or "" for an error
		rec  string // a part of the recoveries, if any are expected
		err  string // a part of the error
	}{
		{in: "tap(index=3)", want: "tap(index=3)"},
		{in: "  tap( index = 3 )  ", want: "tap(index=3)"},
		{in: "tap(index: 3)", want: "tap(index=3)"},
		{in: `tap(index="3")`, want: "tap(index=3)", rec: "string"},
		{in: "tap(index=3.0)", want: "tap(index=3)", rec: "number 3.0"},
		{in: "tap(3)", want: "tap(index=3)", rec: "unnamed value 3"},
		{in: "Tap(index=3)", want: "tap(index=3)", rec: "not exact"},
		{in: `type_text(text="hello, \"world\"", index=2)`, want: `type_text(text="hello, \"world\"", index=2)`},
		{in: `type_text(text='it, works')`, want: `type_text(text="it, works")`},
		{in: "type_text(text=42)", want: `type_text(text="42")`, rec: "number 42"},
		{in: `type_text(text="a\nb")`, want: `type_text(text="a\nb")`},
		{in: "swipe(direction=up)", want: `swipe(direction="up")`},
		{in: "swipe(direction=up, index=2)", want: `swipe(direction="up", index=2)`},
		{in: "press_key(key=back)", want: `press_key(key="back")`},
		{in: "press_key(key=KEYCODE_BACK)", want: `press_key(key="back")`, rec: "read it as"},
		{in: "wait(seconds=1.5)", want: "wait(seconds=1.5)"},
		{in: "wait(seconds=2)", want: "wait(seconds=2)"},
		{in: `open_app(name="Settings")`, want: `open_app(name="Settings")`},
		{in: "tap(index=1, x=2)", want: "tap(index=1)", rec: `does not take "x"`},
		{in: `{"name":"tap","arguments":{"index":4}}`, want: "tap(index=4)"},
		{in: `{"name":"tap","arguments":"{\"index\":4}"}`, want: "tap(index=4)"},
		{in: `{"name":"press_key","arguments":{"key":"home"}}`, want: `press_key(key="home")`},
		{in: "", err: "empty"},
		{in: "tap", err: `missing required argument "index"`},
		{in: "tap(index=", err: "missing )"},
		{in: "tap(index=1", err: "missing )"},
		{in: "tap(index=)", err: `cannot read the call from ")"`},
		{in: "tap(index=1 index=2)", err: `cannot read the call from "index=2)"`},
		{in: "tap(index=1, index=2)", err: "twice"},
		{in: "tap(index=-1)", err: "out of range"},
		{in: "tap(index=1.5)", err: "must be an integer"},
		{in: "tap(index=1) now", err: "cannot read the call"},
		{in: "fly(to=moon)", err: "unknown tool"},
		{in: "swipe(direction=sideways)", err: "not valid; valid values: up"},
		{in: "press_key(key=teleport)", err: "not valid"},
		{in: "wait(seconds=99)", err: "between 0 and 30"},
		{in: `type_text(text="unterminated)`, err: "not closed"},
		{in: "2tap(index=1)", err: "name(key=value"},
		{in: "tap index 3", err: "name(key=value"},
		{in: "tap(index=\xff)", err: "UTF-8"},
		{in: `{"name":"tap","arguments":{"index":4}} extra`, err: "text after"},
		{in: `{"name":"tap",`, err: "bad JSON"},
		{in: `{"name":"tap","arguments":{"index":[1,2]}}`, err: "must be an integer"},
		{in: `{"tool_calls":[{"name":"tap","arguments":{"index":1}},{"name":"tap","arguments":{"index":2}}]}`, err: "one call"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, rec, err := ReadCall(tt.in, nil)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("error %v, want %s", err, tt.want)
				}
				if got := c.String(); got != tt.want {
					t.Fatalf("got %s, want %s", got, tt.want)
				}
				if all := strings.Join(rec, "; "); (tt.rec == "") != (all == "") || !strings.Contains(all, tt.rec) {
					t.Fatalf("recoveries %q, want %q", all, tt.rec)
				}
				if err := action.Validate(c, action.Tools); err != nil {
					t.Fatalf("the call read is invalid: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %s, want an error about %q", c, tt.err)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %q does not mention %q", err, tt.err)
			}
		})
	}
}

// TestFormatReadRoundTrip checks that every call the TUI's edit box is
// prefilled with reads back as the same call, with nothing repaired.
func TestFormatReadRoundTrip(t *testing.T) {
	calls := []action.Call{
		{Name: "tap", Arguments: map[string]any{"index": int64(0)}},
		{Name: "long_press", Arguments: map[string]any{"index": int64(12)}},
		{Name: "type_text", Arguments: map[string]any{"text": "a \"quoted\", line\nbreak ✓ <b>&\x01\u2028 'single'", "index": int64(3)}},
		{Name: "type_text", Arguments: map[string]any{"text": "  spaced  "}},
		{Name: "swipe", Arguments: map[string]any{"direction": "left"}},
		{Name: "press_key", Arguments: map[string]any{"key": "enter"}},
		{Name: "open_app", Arguments: map[string]any{"name": "com.android.settings"}},
		{Name: "wait", Arguments: map[string]any{"seconds": 0.25}},
		{Name: "wait", Arguments: map[string]any{"seconds": 30.0}},
		{Name: "task_complete", Arguments: map[string]any{"summary": "done (really), 100%"}},
	}
	for _, c := range calls {
		s := FormatCall(c, nil)
		got, rec, err := ReadCall(s, nil)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if got.String() != c.String() || len(rec) > 0 {
			t.Errorf("%s read back as %s (%q)", s, got, rec)
		}
	}
	if got := FormatCall(calls[2], nil); got != `type_text(text="a \"quoted\", line\nbreak ✓ <b>&\u0001\u2028 'single'", index=3)` {
		t.Errorf("FormatCall = %s", got)
	}
}

func FuzzReadCall(f *testing.F) {
	for _, s := range []string{"tap(index=3)", `type_text(text="a,b", index=1)`, `{"name":"wait","arguments":{"seconds":1}}`,
		"swipe(direction=up)", "tap(index=", `type_text(text='x')`, "wait(seconds=1e400)", `{"name":"tap","arguments":"{}"}`,
		"tap(3)", "tap(index=1, x=2)", `type_text(text="\u0001")`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, _, err := ReadCall(s, nil)
		if err != nil {
			return
		}
		// Whatever is accepted is a valid call that survives a round trip.
		if err := action.Validate(c, action.Tools); err != nil {
			t.Fatalf("%q read as %s, which is invalid: %v", s, c, err)
		}
		back, rec, err := ReadCall(FormatCall(c, nil), nil)
		if err != nil {
			t.Fatalf("%q read as %s, which does not read back: %v", s, c, err)
		}
		if back.String() != c.String() || len(rec) > 0 {
			t.Fatalf("%q: %s read back as %s (%q)", s, c, back, rec)
		}
	})
}
