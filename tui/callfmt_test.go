package tui

import (
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
)

func TestParseCall(t *testing.T) {
	tests := []struct {
		in   string
		want string // the call's String(), or "" for an error
		err  string // a part of the error
	}{
		{in: "tap(index=3)", want: "tap(index=3)"},
		{in: "  tap( index = 3 )  ", want: "tap(index=3)"},
		{in: "tap(index: 3)", want: "tap(index=3)"},
		{in: `tap(index="3")`, want: "tap(index=3)"},
		{in: "tap(index=3.0)", want: "tap(index=3)"},
		{in: `type_text(text="hello, \"world\"", index=2)`, want: `type_text(text="hello, \"world\"", index=2)`},
		{in: `type_text(text='it, works')`, want: `type_text(text="it, works")`},
		{in: "type_text(text=42)", want: `type_text(text="42")`},
		{in: "swipe(direction=up)", want: `swipe(direction="up")`},
		{in: "press_key(key=back)", want: `press_key(key="back")`},
		{in: "wait(seconds=1.5)", want: "wait(seconds=1.5)"},
		{in: "wait(seconds=2)", want: "wait(seconds=2)"},
		{in: `open_app(name="Settings")`, want: `open_app(name="Settings")`},
		{in: `{"name":"tap","arguments":{"index":4}}`, want: "tap(index=4)"},
		{in: `{"name":"tap","arguments":"{\"index\":4}"}`, want: "tap(index=4)"},
		{in: `{"name":"press_key","arguments":{"key":"home"}}`, want: `press_key(key="home")`},
		{in: "", err: "empty"},
		{in: "tap", err: "needs the argument index"},
		{in: "tap(index=", err: "missing )"},
		{in: "tap(index=)", err: "missing value"},
		{in: "tap(3)", err: "expected ="},
		{in: "tap(index=1 index=2)", err: "whole number"},
		{in: "tap(index=1, index=2)", err: "twice"},
		{in: "tap(index=-1)", err: "below"},
		{in: "tap(index=1.5)", err: "whole number"},
		{in: "tap(index=1, x=2)", err: `no argument "x"`},
		{in: "fly(to=moon)", err: "unknown tool"},
		{in: "swipe(direction=sideways)", err: "not one of"},
		{in: "press_key(key=teleport)", err: "not one of"},
		{in: "wait(seconds=99)", err: "above"},
		{in: `type_text(text="unterminated)`, err: "unterminated"},
		{in: "2tap(index=1)", err: "not a tool name"},
		{in: "tap index 3", err: "name(key=value"},
		{in: `{"name":"tap","arguments":{"index":4}} extra`, err: "text after"},
		{in: `{"name":"tap",`, err: "bad JSON"},
		{in: `{"name":"tap","arguments":[1]}`, err: "bad arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := parseCall(tt.in)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("error %v, want %s", err, tt.want)
				}
				if got := c.String(); got != tt.want {
					t.Fatalf("got %s, want %s", got, tt.want)
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

// TestFormatParseRoundTrip checks that every call the edit box is prefilled
// with reads back as the same call.
func TestFormatParseRoundTrip(t *testing.T) {
	calls := []action.Call{
		{Name: "tap", Arguments: map[string]any{"index": int64(0)}},
		{Name: "long_press", Arguments: map[string]any{"index": int64(12)}},
		{Name: "type_text", Arguments: map[string]any{"text": "a \"quoted\", line\nbreak ✓", "index": int64(3)}},
		{Name: "swipe", Arguments: map[string]any{"direction": "left"}},
		{Name: "press_key", Arguments: map[string]any{"key": "enter"}},
		{Name: "open_app", Arguments: map[string]any{"name": "com.android.settings"}},
		{Name: "wait", Arguments: map[string]any{"seconds": 0.25}},
		{Name: "task_complete", Arguments: map[string]any{"summary": "done (really)"}},
	}
	for _, c := range calls {
		got, err := parseCall(formatCall(c))
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if got.String() != c.String() {
			t.Errorf("%s read back as %s", c, got)
		}
	}
}

func FuzzParseCall(f *testing.F) {
	for _, s := range []string{"tap(index=3)", `type_text(text="a,b", index=1)`, `{"name":"wait","arguments":{"seconds":1}}`,
		"swipe(direction=up)", "tap(index=", `type_text(text='x')`, "wait(seconds=1e400)", `{"name":"tap","arguments":"{}"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCall(s)
		if err != nil {
			return
		}
		// Whatever is accepted is a valid call that survives a round trip.
		back, err := parseCall(formatCall(c))
		if err != nil {
			t.Fatalf("%q parsed as %s, which does not parse back: %v", s, c, err)
		}
		if back.String() != c.String() {
			t.Fatalf("%q: %s read back as %s", s, c, back)
		}
	})
}
