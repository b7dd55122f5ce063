package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// TestDoCall: `droidgo do` reads its words as the model's tool calls, with
// the old verbs as aliases, and refuses what the schema refuses.
func TestDoCall(t *testing.T) {
	t.Parallel()
	ok := []struct {
		args []string
		want string // the call, as action.Call.String writes it
		note string // a repair Coerce reports, if any
	}{
		{[]string{"tap", "3"}, `tap(index=3)`, ""},
		{[]string{"long_press", "0"}, `long_press(index=0)`, ""},
		{[]string{"long-press", "0"}, `long_press(index=0)`, ""},
		{[]string{"type_text", "hello world"}, `type_text(text="hello world")`, ""},
		{[]string{"type", " two  spaces "}, `type_text(text=" two  spaces ")`, ""},
		{[]string{"type_text", "hi", "5"}, `type_text(text="hi", index=5)`, ""},
		{[]string{"swipe", "up"}, `swipe(direction="up")`, ""},
		{[]string{"swipe", "left", "2"}, `swipe(direction="left", index=2)`, ""},
		{[]string{"press_key", "back"}, `press_key(key="back")`, ""},
		{[]string{"key", "KEYCODE_BACK"}, `press_key(key="back")`, "KEYCODE_BACK"},
		{[]string{"open_app", "Settings"}, `open_app(name="Settings")`, ""},
		{[]string{"open", "com.android.settings"}, `open_app(name="com.android.settings")`, ""},
		{[]string{"Tap", "3"}, `tap(index=3)`, `"Tap"`},
		{[]string{"tap", "3.0"}, `tap(index=3)`, "3.0"},
	}
	for _, c := range ok {
		call, notes, err := doCall(c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if call.String() != c.want {
			t.Errorf("%q = %s, want %s", c.args, call, c.want)
		}
		if got := strings.Join(notes, "; "); c.note == "" && got != "" || !strings.Contains(got, c.note) {
			t.Errorf("%q: notes %q, want one naming %q", c.args, got, c.note)
		}
		// The call is what the agent's schema check accepts.
		if fixed, _, err := toolparse.Coerce(call, nil); err != nil || action.Validate(fixed, action.Tools) != nil {
			t.Errorf("%q: the agent's check refuses %s: %v", c.args, call, err)
		}
	}
	bad := []struct {
		args []string
		msg  string
	}{
		{[]string{"fly"}, `unknown action "fly"`},
		{[]string{"task_complete", "done"}, "unknown action"},
		{[]string{"wait", "1"}, "unknown action"},
		{[]string{"tap"}, `missing required argument "index"`},
		{[]string{"tap", "x"}, "index must be an integer"},
		{[]string{"tap", "-1"}, "at least 0"},
		{[]string{"tap", "1", "2"}, "usage: droidgo do tap INDEX"},
		{[]string{"swipe", "sideways"}, `direction "sideways" is not valid`},
		{[]string{"key", "reboot"}, `key "reboot" is not valid`},
		{[]string{"type", "a", "b"}, "usage: droidgo do type_text TEXT [INDEX]"},
		{[]string{"type", ""}, "nothing to type"},
	}
	for _, c := range bad {
		if _, _, err := doCall(c.args); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v, want one saying %q", c.args, err, c.msg)
		}
	}
}

// geometryDump is a 1080x2400 screen with elements partly off it.
const geometryDump = `<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="p" bounds="[0,0][1080,2400]">` +
	`<node class="android.widget.Button" text="Inside" clickable="true" enabled="true" bounds="[100,100][500,300]"/>` +
	`<node class="android.widget.Button" text="Off the bottom" clickable="true" enabled="true" bounds="[0,2300][1080,2700]"/>` +
	`<node class="android.widget.Button" text="Off the right" clickable="true" enabled="true" bounds="[900,500][1300,700]"/>` +
	`<node class="android.widget.ScrollView" scrollable="true" enabled="true" bounds="[0,800][1080,2000]"><node class="android.widget.TextView" text="Row" bounds="[0,800][1080,900]"/></node>` +
	`</node></hierarchy>`

// gestureDevice serves one screen and records the gestures made on it.
type gestureDevice struct {
	mu       sync.Mutex
	gestures []string
}

func (g *gestureDevice) record(s string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gestures = append(g.gestures, s)
	return nil
}

func (g *gestureDevice) Dump(context.Context) ([]byte, error) { return []byte(geometryDump), nil }
func (g *gestureDevice) Tap(_ context.Context, x, y int) error {
	return g.record(fmt.Sprintf("tap %d,%d", x, y))
}
func (g *gestureDevice) LongPress(_ context.Context, x, y int) error {
	return g.record(fmt.Sprintf("long press %d,%d", x, y))
}
func (g *gestureDevice) Swipe(_ context.Context, x1, y1, x2, y2 int, _ time.Duration) error {
	return g.record(fmt.Sprintf("swipe %d,%d to %d,%d", x1, y1, x2, y2))
}
func (g *gestureDevice) Type(_ context.Context, s string) error     { return g.record("type " + s) }
func (g *gestureDevice) Key(_ context.Context, k string) error      { return g.record("key " + k) }
func (g *gestureDevice) OpenApp(context.Context, string) error      { return nil }
func (g *gestureDevice) Size(context.Context) (int, int, error)     { return 1080, 2400, nil }
func (g *gestureDevice) CurrentApp(context.Context) (string, error) { return "p", nil }

// TestDoAndAgentGestures: for elements on the screen, partly off it and
// for swipes, `droidgo do` makes exactly the gesture the agent makes for
// the same call. A tap lands on the centre of the part that is on screen.
func TestDoAndAgentGestures(t *testing.T) {
	t.Parallel()
	scr, err := uixml.Parse([]byte(geometryDump))
	if err != nil {
		t.Fatal(err)
	}
	index := func(label string) string {
		for _, e := range scr.Elements {
			if e.Label == label {
				return fmt.Sprint(e.Index)
			}
		}
		t.Fatalf("no element %q in:\n%s", label, scr.Prompt())
		return ""
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"on screen", []string{"tap", index("Inside")}, "tap 300,200"},
		{"off the bottom", []string{"tap", index("Off the bottom")}, "tap 540,2350"},
		{"off the right", []string{"tap", index("Off the right")}, "tap 990,600"},
		{"long press off the bottom", []string{"long_press", index("Off the bottom")}, "long press 540,2350"},
		{"type into a field off the right", []string{"type_text", "x", index("Off the right")}, "tap 990,600"},
		{"swipe the screen", []string{"swipe", "up"}, "swipe 540,1920 to 540,480"},
		{"swipe an element", []string{"swipe", "down", index("Row")}, "swipe 540,820 to 540,880"},
		// A swipe strokes the element's whole bounds, on screen or not.
		{"swipe an element off the bottom", []string{"swipe", "right", index("Off the bottom")}, "swipe 216,2500 to 864,2500"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			byHand := &gestureDevice{}
			h.setup = func(d *deps) {
				d.openADB = func(context.Context, string) (device.Device, string, error) { return byHand, "fake", nil }
			}
			if r := h.run(context.Background(), append([]string{"do"}, c.args...)...); r.code != 0 {
				t.Fatalf("do %q: exit %d: %s", c.args, r.code, r.stderr)
			}

			call, _, err := doCall(c.args)
			if err != nil {
				t.Fatal(err)
			}
			agent := &gestureDevice{}
			d := h.deps(context.Background(), nil, nil, nil)
			script := filepath.Join(t.TempDir(), "script.txt")
			os.WriteFile(script, []byte("--- turn 1\n</think>"+toolparse.RenderNative(call)+"\n--- turn 2\n</think><tool_call>task_complete<arg_key>summary</arg_key><arg_value>done</arg_value></tool_call>\n"), 0o644)
			backend, err := d.openModel(context.Background(), "script:"+script+"?pace=0", nil)
			if err != nil {
				t.Fatal(err)
			}
			res := loop.Run(context.Background(), loop.Config{
				Task: "check", Device: agent, Model: backend, MaxSteps: 2, Sensitive: []string{},
				PollInterval: time.Millisecond, SettleTimeout: 10 * time.Millisecond,
			})
			if !res.Success {
				t.Fatalf("agent run: %s", res.Reason)
			}
			if len(byHand.gestures) == 0 || len(agent.gestures) == 0 {
				t.Fatalf("gestures: by hand %q, agent %q", byHand.gestures, agent.gestures)
			}
			if byHand.gestures[0] != c.want || agent.gestures[0] != c.want {
				t.Errorf("%q: by hand %q, agent %q; want both %q", c.args, byHand.gestures, agent.gestures, c.want)
			}
		})
	}
}

// TestDoChecksTheIndexAsTheAgent: an index that is not on the screen is
// refused by the loop's own check, in its words.
func TestDoChecksTheIndexAsTheAgent(t *testing.T) {
	t.Parallel()
	scr, err := uixml.Parse([]byte(geometryDump))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	dev := &gestureDevice{}
	h.setup = func(d *deps) {
		d.openADB = func(context.Context, string) (device.Device, string, error) { return dev, "fake", nil }
	}
	r := h.run(context.Background(), "do", "tap", "99")
	if want := loop.CheckIndex(99, len(scr.Elements)).Error(); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, %q; want 1 and %q", r.code, r.stderr, want)
	}
	if len(dev.gestures) != 0 {
		t.Errorf("the phone did %q", dev.gestures)
	}
}
