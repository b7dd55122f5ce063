package simulator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/fixtures"
)

// The attributes of a node in a modern uiautomator dump, in order.
var wantAttrs = []string{"index", "text", "resource-id", "class", "package", "content-desc",
	"checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
	"long-clickable", "password", "selected", "bounds", "drawing-order", "hint", "display-id"}

func TestDumpFormat(t *testing.T) {
	infos, err := List()
	if err != nil {
		t.Fatal(err)
	}
	// Visit a few screens of each scenario so every shipped screen file is
	// checked.
	visits := map[string][]string{
		"wifi":      {"open Settings", "tap text=Network & internet", "tap text=Internet"},
		"bluetooth": {"open Settings", "tap text=Connected devices", "tap text=Connection preferences", "tap text=Bluetooth"},
		"devopts":   {"open Settings", "swipe_to text=Developer options", "tap text=Developer options"},
		"alarm":     {"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=Switch to text input mode for the time input."},
		"search":    {"open Chrome", "tap text=Search or type URL", "type x", "key enter"},
	}
	for _, info := range infos {
		p := mustLoad(t, info.Name)
		check := func(t *testing.T) {
			root := dumpTree(t, p)
			p.mu.Lock()
			full := p.top().screen.fullscreen
			p.mu.Unlock()
			if got := len(root.Children); got < 3 && !full {
				t.Fatalf("%s: %d windows, want the app, the navigation bar and the status bar", p.Screen(), got)
			}
			w, h, _ := p.Size(context.Background())
			root.walk(func(n *xnode) {
				if n == root {
					return
				}
				var names []string
				for _, a := range n.Attrs {
					names = append(names, a.Name.Local)
				}
				if strings.Join(names, " ") != strings.Join(wantAttrs, " ") {
					t.Fatalf("%s: node attributes\n%v\nwant\n%v", p.Screen(), names, wantAttrs)
				}
				var x1, y1, x2, y2 int
				if _, err := fmt.Sscanf(n.attr("bounds"), "[%d,%d][%d,%d]", &x1, &y1, &x2, &y2); err != nil || x1 < 0 || y1 < 0 || x2 > w || y2 > h || x2 <= x1 || y2 <= y1 {
					t.Errorf("%s: node %s %q has bounds %s outside the %dx%d screen or empty", p.Screen(), n.attr("class"), n.attr("text"), n.attr("bounds"), w, h)
				}
				if n.attr("package") == "" || n.attr("class") == "" {
					t.Errorf("%s: node without package or class", p.Screen())
				}
			})
		}
		t.Run(info.Name, func(t *testing.T) {
			check(t)
			for _, st := range visits[info.Name] {
				run(t, p, []string{st})
				check(t)
			}
			// Every screen of every app, as it starts.
			screens := 0
			for _, a := range append(slices.Clone(p.sc.apps), p.sc.home, p.sc.overlays[0].app) {
				for _, s := range a.screens {
					p.mu.Lock()
					p.stack = append(p.stack, newFrame(s))
					p.mu.Unlock()
					check(t)
					screens++
				}
			}
			if screens < 20 {
				t.Errorf("checked only %d screens", screens)
			}
		})
	}
}

func TestClockTicksPerDump(t *testing.T) {
	p := mustLoad(t, "wifi")
	var times []string
	for range 3 {
		n := findAll(dumpTree(t, p), "resource-id", ClockResourceID)
		if len(n) != 1 {
			t.Fatalf("%d status bar clocks", len(n))
		}
		times = append(times, n[0].attr("text"))
	}
	if want := "9:41 9:42 9:43"; strings.Join(times, " ") != want {
		t.Errorf("clock shows %v, want %s", times, want)
	}
	if a, b := stableDump(t, p), stableDump(t, p); !same(a, b) {
		t.Error("two dumps of an unchanged screen differ beyond the clock")
	}
}

// Touches a phone would ignore change nothing.
func TestIgnoredTouches(t *testing.T) {
	type touch struct {
		name string
		do   func(p *Phone) error
	}
	at := func(x, y int) func(p *Phone) error {
		return func(p *Phone) error { return p.Tap(context.Background(), x, y) }
	}
	tests := []struct {
		scenario string
		setup    []string
		touches  []touch
	}{
		{"wifi", nil, []touch{
			{"empty home screen", at(540, 1000)},
			{"status bar clock", at(100, 60)},
			{"off screen", at(-5, 5000)},
			{"long press on empty home", func(p *Phone) error { return p.LongPress(context.Background(), 540, 1000) }},
			{"sideways swipe", func(p *Phone) error { return p.Swipe(context.Background(), 900, 1000, 100, 1000, time.Second) }},
			{"tiny swipe", func(p *Phone) error { return p.Swipe(context.Background(), 540, 1000, 540, 990, time.Second) }},
			{"type with no field", func(p *Phone) error { return p.Type(context.Background(), "hello") }},
			{"enter", func(p *Phone) error { return p.Key(context.Background(), "enter") }},
		}},
		{"wifi", []string{"open Settings"}, []touch{
			{"page title", func(p *Phone) error {
				x, y := find(t, p, "text=Settings").center(t)
				return p.Tap(context.Background(), x, y)
			}},
			{"row without a handler", func(p *Phone) error {
				x, y := find(t, p, "text=Apps").center(t)
				return p.Tap(context.Background(), x, y)
			}},
		}},
		{"wifi", []string{"open Settings", "tap text=Network & internet", "tap text=Internet"}, []touch{
			{"scroll a list that fits", func(p *Phone) error { return p.Swipe(context.Background(), 540, 1800, 540, 700, time.Second) }},
		}},
		{"alarm", []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm"}, []touch{
			{"dialog padding", at(300, 1700)},
			{"centre of the dial", at(540, 1240)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			p := mustLoad(t, tc.scenario)
			run(t, p, tc.setup)
			screen := p.Screen()
			before := stableDump(t, p)
			for _, to := range tc.touches {
				if err := to.do(p); err != nil {
					t.Fatalf("%s: %v", to.name, err)
				}
				if after := stableDump(t, p); !same(before, after) || p.Screen() != screen {
					t.Errorf("%s changed the screen (now %s)", to.name, p.Screen())
				}
			}
		})
	}
}

func TestBackAndHome(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "wifi")
	run(t, p, []string{"open Settings", "tap text=Network & internet", "tap text=Internet"})
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return p.Key(ctx, "back") }, "settings:network"},
		{func() error { tap(t, p, "desc=Navigate up"); return nil }, "settings:home"},
		{func() error { tap(t, p, "desc=Back"); return nil }, "launcher:home"}, // the navigation bar
		{func() error { return p.Key(ctx, "back") }, "launcher:home"},
		{func() error { return p.OpenApp(ctx, "settings") }, "settings:home"},
		{func() error { tap(t, p, "text=Network & internet"); return nil }, "settings:network"},
		{func() error { return p.Key(ctx, "home") }, "launcher:home"},
		{func() error { swipeUp(t, p); return nil }, "launcher:drawer"},
		{func() error { tap(t, p, "text=Clock"); return nil }, "clock:clock"},
		{func() error { tap(t, p, "desc=Home"); return nil }, "launcher:home"},
	}
	for i, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := p.Screen(); got != st.want {
			t.Fatalf("step %d: on %s, want %s", i, got, st.want)
		}
	}
}

func TestScrollKeptOnBack(t *testing.T) {
	p := mustLoad(t, "devopts")
	run(t, p, []string{"open Settings"})
	if visible(t, p, "text=Developer options") {
		t.Fatal("Developer options is visible before scrolling")
	}
	run(t, p, []string{"swipe_to text=Developer options", "tap text=Developer options", "key back", "see text=Developer options"})
	// Every shown node stays inside the list: items are clipped to it.
	for _, n := range findAll(dumpTree(t, p), "resource-id", "android:id/title") {
		_, y := n.center(t)
		if y < 118 || y > 2274 {
			t.Errorf("title %q at y=%d is outside the list", n.attr("text"), y)
		}
	}
	// Scrolling past the end stops at the end.
	for range 10 {
		swipeUp(t, p)
	}
	if !visible(t, p, "text=Tips & support") {
		t.Error("the last row is not shown at the end of the list")
	}
	for range 10 {
		p.Swipe(context.Background(), 540, 600, 540, 1800, 0)
	}
	if !visible(t, p, "id=com.android.settings:id/homepage_title") {
		t.Error("scrolling back down does not show the top again")
	}
}

func TestCurrentApp(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "search")
	for _, step := range []struct{ open, want string }{
		{"", "com.google.android.apps.nexuslauncher"},
		{"Chrome", "com.android.chrome"},
		{"com.google.android.deskclock", "com.google.android.deskclock"},
		{"  SETTINGS ", "com.android.settings"},
		{"browser", "com.android.chrome"},
		{"Pixel Launcher", "com.google.android.apps.nexuslauncher"},
	} {
		if step.open != "" {
			if err := p.OpenApp(ctx, step.open); err != nil {
				t.Fatalf("open %q: %v", step.open, err)
			}
		}
		got, err := p.CurrentApp(ctx)
		if err != nil || got != step.want {
			t.Errorf("after open %q: current app %q, %v; want %q", step.open, got, err, step.want)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "wifi")
	tests := []struct {
		name   string
		err    error
		target error
		says   string
	}{
		{"typo of an app", p.OpenApp(ctx, "Setings"), device.ErrUnknownApp, "did you mean Settings?"},
		{"app part", p.OpenApp(ctx, "clock app"), device.ErrUnknownApp, "Clock"},
		{"unrelated app", p.OpenApp(ctx, "WhatsApp"), device.ErrUnknownApp, "installed apps: Pixel Launcher, Settings, Clock, Chrome"},
		{"app without a launcher entry", p.OpenApp(ctx, "Settings Search"), device.ErrUnknownApp, "did you mean Settings?"},
		{"unknown key", p.Key(ctx, "brightness_up"), device.ErrUnknownKey, "brightness_up"},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.target) {
			t.Errorf("%s: error %v is not %v", tc.name, tc.err, tc.target)
			continue
		}
		if !strings.Contains(tc.err.Error(), tc.says) {
			t.Errorf("%s: error %q does not say %q", tc.name, tc.err, tc.says)
		}
	}
	if got := p.Screen(); got != "launcher:home" {
		t.Errorf("failed calls moved the phone to %s", got)
	}
}

// Phones of the same scenario share its definition but not its state.
func TestPhonesIndependent(t *testing.T) {
	a, b := mustLoad(t, "alarm"), mustLoad(t, "alarm")
	run(t, a, []string{"open Clock", "tap desc=Alarm", "tap id=com.google.android.deskclock:id/onoff", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=OK"})
	if !a.Success() || b.Success() {
		t.Fatalf("success: a %v, b %v", a.Success(), b.Success())
	}
	if got := b.List("alarms"); len(got) != 2 || got[0]["enabled"] != "false" {
		t.Errorf("the second phone's alarms changed: %v", got)
	}
	if b.Screen() != "launcher:home" || len(b.Actions()) != 0 {
		t.Errorf("the second phone moved: %s %v", b.Screen(), b.Actions())
	}
	if c := mustLoad(t, "alarm"); len(c.List("alarms")) != 2 {
		t.Errorf("a new phone starts with %v", c.List("alarms"))
	}
}

func TestFailNextDumps(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "wifi")
	p.FailNextDumps(2)
	for i := range 2 {
		if _, err := p.Dump(ctx); !errors.Is(err, device.ErrDumpNotIdle) {
			t.Fatalf("dump %d: %v, want ErrDumpNotIdle", i, err)
		}
	}
	if _, err := p.Dump(ctx); err != nil {
		t.Fatalf("third dump: %v", err)
	}
	if p.Dumps() != 1 {
		t.Errorf("Dumps() = %d, want 1", p.Dumps())
	}
}

func TestDelayAndCancel(t *testing.T) {
	p := mustLoad(t, "wifi")
	p.SetDelay(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]error{}
	_, calls["dump"] = p.Dump(ctx)
	calls["tap"] = p.Tap(ctx, 1, 1)
	calls["type"] = p.Type(ctx, "x")
	calls["key"] = p.Key(ctx, "back")
	calls["open"] = p.OpenApp(ctx, "Settings")
	_, _, calls["size"] = p.Size(ctx)
	_, calls["current"] = p.CurrentApp(ctx)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
	if len(p.Actions()) != 0 || p.Screen() != "launcher:home" {
		t.Errorf("cancelled calls acted: %v", p.Actions())
	}
	// A short delay is waited out.
	p.SetDelay(time.Millisecond)
	if _, err := p.Dump(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestActionsLog(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "search")
	p.Tap(ctx, 10, 20)
	p.LongPress(ctx, 30, 40)
	p.Swipe(ctx, 1, 2, 3, 4, 300*time.Millisecond)
	p.Type(ctx, `a "b"`)
	p.Key(ctx, "back")
	p.OpenApp(ctx, "Nope")
	p.Dump(ctx)
	want := []string{"tap(10, 20)", "long_press(30, 40)", "swipe(1, 2, 3, 4, 300ms)", `type("a \"b\"")`, "key(back)", `open_app("Nope")`}
	if got := p.Actions(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("actions\n%q\nwant\n%q", got, want)
	}
	p.Type(ctx, "\x00;$(x)\n")
	if got := p.Typed(); len(got) != 2 || got[0] != `a "b"` || got[1] != "\x00;$(x)\n" {
		t.Errorf("Typed() = %q", got)
	}
}

func TestTyping(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "search")
	run(t, p, []string{"open Chrome", "tap text=Search or type URL"})
	url := find(t, p, "id=com.android.chrome:id/url_bar")
	if url.attr("focused") != "true" || url.attr("text") != "Search or type URL" {
		t.Fatalf("empty focused omnibox: focused=%s text=%q", url.attr("focused"), url.attr("text"))
	}
	p.Type(ctx, "dro")
	p.Type(ctx, "idgox")
	p.Key(ctx, "delete")
	if got := find(t, p, "id=com.android.chrome:id/url_bar").attr("text"); got != "droidgo" {
		t.Errorf("omnibox shows %q, want droidgo", got)
	}
	tap(t, p, "desc=Clear input")
	if got := find(t, p, "id=com.android.chrome:id/url_bar").attr("text"); got != "Search or type URL" {
		t.Errorf("cleared omnibox shows %q", got)
	}
	// Text that needs escaping shows literally in the dump.
	odd := "<a href=\"x\">&amp; 'q'\n é \x00\xff"
	p.Type(ctx, odd)
	if got, want := find(t, p, "id=com.android.chrome:id/url_bar").attr("text"), "<a href=\"x\">&amp; 'q'\n é \uFFFD"; got != want {
		t.Errorf("omnibox shows %q, want %q", got, want)
	}
	// Digit-only fields with a length limit, as the time picker's.
	p = mustLoad(t, "alarm")
	run(t, p, []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=Switch to text input mode for the time input.", "type 1a2345"})
	if v, _ := p.Var("pk_hour_text"); v != "12" {
		t.Errorf("hour field holds %q, want 12", v)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := mustLoad(t, "wifi")
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				switch (g + i) % 4 {
				case 0:
					if _, err := p.Dump(ctx); err != nil {
						t.Error(err)
					}
				case 1:
					p.Tap(ctx, 400, 1500)
				case 2:
					p.Swipe(ctx, 540, 1800, 540, 600, 0)
				case 3:
					p.Key(ctx, "back")
				}
				p.Success()
			}
		}()
	}
	wg.Wait()
	if n := len(p.Actions()); n != 60 {
		t.Errorf("%d actions logged, want 60", n)
	}
}

func BenchmarkDump(b *testing.B) {
	p, err := Load("devopts")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p.OpenApp(ctx, "Settings")
	for b.Loop() {
		if _, err := p.Dump(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadFS(b *testing.B) {
	for b.Loop() {
		if _, err := LoadFS(fixtures.FS, "scenarios/alarm"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is Load of a scenario already loaded once (cached).
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load("alarm"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPackagesListsScenarioApps(t *testing.T) {
	p, err := Load("wifi")
	if err != nil {
		t.Fatal(err)
	}
	pk := p.Packages()
	has := map[string]bool{}
	for _, x := range pk {
		has[x] = true
	}
	if !has["com.android.settings"] || !sort.StringsAreSorted(pk) {
		t.Errorf("packages %v", pk)
	}
}
