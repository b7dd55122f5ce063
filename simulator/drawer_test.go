package simulator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/droidgo/droidgo/fixtures"
)

// overFS reads from top first, then from the shipped fixtures, so a test
// scenario can use the shipped apps with a set of its own.
type overFS struct{ top fs.FS }

func (o overFS) Open(name string) (fs.File, error) {
	f, err := o.top.Open(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	return fixtures.FS.Open(name)
}

// ownApp is a scenario with the apps the launcher's home screen needs and
// an app of its own whose label starts in lower case.
func ownApp() fs.FS {
	return overFS{fstest.MapFS{
		"scenarios/few/scenario.json": {Data: []byte(`{"task": "Open hello", "apps": ["launcher", "settings", "settingssearch", "clock", "chrome", "hello"],
  "success": {"app": "com.example.hello"}}`)},
		"apps/hello/app.json": {Data: []byte(`{"label": "hello world", "package": "com.example.hello", "launch": "main",
  "screens": {"main": {"file": "main.xml"}}}`)},
		"apps/hello/main.xml": {Data: []byte(`<hierarchy><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node class="android.widget.TextView" text="Hello" bounds="[100,300][980,500]" /></node></hierarchy>`)},
	}}
}

// drawerIcons returns the app icons of the drawer, in dump order.
func drawerIcons(t *testing.T, p *Phone) []*xnode {
	t.Helper()
	return findAll(dumpTree(t, p), "resource-id", "com.google.android.apps.nexuslauncher:id/icon")
}

// The app drawer lists exactly the scenario's launchable apps, sorted by
// label, in a four-column grid, and each icon opens its app.
func TestDrawerListsAndOpensTheScenarioApps(t *testing.T) {
	type app struct{ label, pkg, screen string }
	tests := []struct {
		name string
		load func() (*Phone, error)
		want []app
	}{
		{"five apps", func() (*Phone, error) { return Load("wifi") }, []app{
			{"Chrome", "com.android.chrome", "chrome:ntp"},
			{"Clock", "com.google.android.deskclock", "clock:clock"},
			{"Settings", "com.android.settings", "settings:home"},
		}},
		{"eleven apps", func() (*Phone, error) { return Load("airplane-on") }, []app{
			{"Calculator", "com.google.android.calculator", "calculator:main"},
			{"Camera", "com.android.camera2", "camera:viewfinder"},
			{"Chrome", "com.android.chrome", "chrome:ntp"},
			{"Clock", "com.google.android.deskclock", "clock:clock"},
			{"Contacts", "com.google.android.contacts", "contacts:list"},
			{"Files", "com.google.android.documentsui", "files:downloads"},
			{"Keep Notes", "com.google.android.keep", "notes:list"},
			{"Messages", "com.google.android.apps.messaging", "messages:inbox"},
			{"Settings", "com.android.settings", "settings:home"},
		}},
		{"an app of the scenario's own", func() (*Phone, error) { return LoadFS(ownApp(), "scenarios/few") }, []app{
			{"Chrome", "com.android.chrome", "chrome:ntp"},
			{"Clock", "com.google.android.deskclock", "clock:clock"},
			{"hello world", "com.example.hello", "hello:main"}, // before Settings: the order ignores case
			{"Settings", "com.android.settings", "settings:home"},
		}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			swipeUp(t, p)
			if got := p.Screen(); got != "launcher:drawer" {
				t.Fatalf("swipe up on home: on %s, want launcher:drawer", got)
			}
			icons := drawerIcons(t, p)
			var got, want []string
			for i, n := range icons {
				got = append(got, n.attr("text"))
				if n.attr("content-desc") != n.attr("text") || n.attr("clickable") != "true" {
					t.Errorf("icon %q: content-desc %q, clickable %s", n.attr("text"), n.attr("content-desc"), n.attr("clickable"))
				}
				// Four columns of 247 px from x=46, rows of 328 px below the search box.
				col, row := i%4, i/4
				if b := fmt.Sprintf("[%d,%d][%d,%d]", 46+247*col, 330+328*row, 293+247*col, 658+328*row); n.attr("bounds") != b {
					t.Errorf("icon %q at %s, want %s", n.attr("text"), n.attr("bounds"), b)
				}
			}
			for _, a := range tc.want {
				want = append(want, a.label)
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("drawer lists %q, want %q", got, want)
			}
			for _, a := range tc.want {
				if p.Screen() != "launcher:drawer" {
					swipeUp(t, p)
				}
				tap(t, p, "text="+a.label)
				if got := p.Screen(); got != a.screen {
					t.Errorf("tap %s in the drawer: on %s, want %s", a.label, got, a.screen)
				}
				if pkg, err := p.CurrentApp(ctx); err != nil || pkg != a.pkg {
					t.Errorf("tap %s in the drawer: current app %s, %v; want %s", a.label, pkg, err, a.pkg)
				}
				// The drawer closes when an app starts: back is the home screen.
				if err := p.Key(ctx, "back"); err != nil {
					t.Fatal(err)
				}
				if got := p.Screen(); got != "launcher:home" {
					t.Errorf("back from %s opened in the drawer: on %s, want launcher:home", a.label, got)
				}
			}
		})
	}
}

// The scenario of one's own apps is solved through the drawer.
func TestDrawerSolvesOwnAppScenario(t *testing.T) {
	p, err := LoadFS(ownApp(), "scenarios/few")
	if err != nil {
		t.Fatal(err)
	}
	if p.Success() {
		t.Fatal("success before acting")
	}
	if visible(t, p, "text=hello world") {
		t.Fatal("the home screen shows the app; the test wants it only in the drawer")
	}
	swipeUp(t, p)
	tap(t, p, "desc=hello world")
	if !p.Success() {
		t.Fatalf("on %s after tapping the app in the drawer", p.Screen())
	}
	if got := p.List("apps"); len(got) != 4 || got[2]["name"] != "hello" || got[2]["label"] != "hello world" || got[2]["package"] != "com.example.hello" {
		t.Errorf("List(apps) = %v", got)
	}
}

// gridFS is a screen with a two-column grid of seven items in a list that
// shows three rows of the four.
func gridFS() fstest.MapFS {
	return fstest.MapFS{
		"scenarios/g/scenario.json": {Data: []byte(`{"task": "x", "apps": ["g"], "success": {"screen": "g:main"}}`)},
		"apps/g/app.json": {Data: []byte(`{"label": "G", "package": "com.example.g", "launch": "main",
  "lists": {"cells": [{"n": "1"}, {"n": "2"}, {"n": "3"}, {"n": "4"}, {"n": "5"}, {"n": "6"}, {"n": "7"}]},
  "screens": {"main": {"file": "main.xml"}}}`)},
		"apps/g/main.xml": {Data: []byte(`<hierarchy><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]">
  <node class="android.widget.GridView" sim-list="grid" sim-columns="2" bounds="[0,1000][1000,1300]">
    <node class="android.widget.TextView" text="${item.n}" sim-each="cells" bounds="[0,0][500,100]" />
  </node>
</node></hierarchy>`)},
		"system/system.json": {Data: []byte(`{"package": "com.android.systemui"}`)},
	}
}

func TestGridListLayoutAndScroll(t *testing.T) {
	p, err := LoadFS(gridFS(), "scenarios/g")
	if err != nil {
		t.Fatal(err)
	}
	bounds := func() string {
		var out []string
		for _, n := range findAll(dumpTree(t, p), "class", "android.widget.TextView") {
			out = append(out, n.attr("text")+n.attr("bounds"))
		}
		return strings.Join(out, " ")
	}
	if got, want := bounds(), "1[0,1000][500,1100] 2[500,1000][1000,1100] 3[0,1100][500,1200] 4[500,1100][1000,1200] 5[0,1200][500,1300] 6[500,1200][1000,1300]"; got != want {
		t.Errorf("grid:\n got %s\nwant %s", got, want)
	}
	// Four rows of 100 in 300: the list scrolls by at most 100, which shows
	// the last, half-full row.
	if err := p.Swipe(context.Background(), 500, 1290, 500, 1010, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, want := bounds(), "3[0,1000][500,1100] 4[500,1000][1000,1100] 5[0,1100][500,1200] 6[500,1100][1000,1200] 7[0,1200][500,1300]"; got != want {
		t.Errorf("grid scrolled to the end:\n got %s\nwant %s", got, want)
	}
}

func TestDrawerBadData(t *testing.T) {
	// The list items of baseFS made tappable, each opening the app its
	// entry names.
	tappable := func(m fstest.MapFS, open string) {
		m["apps/home/main.xml"].Data = []byte(strings.Replace(string(m["apps/home/main.xml"].Data), `sim-each="items"`, `sim-each="items" resource-id="x:id/item" clickable="true"`, 1))
		m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `{"target": {"desc": "More"}, "go": "more"}`,
			`{"target": {"desc": "More"}, "go": "more"}, {"target": {"id": "x:id/item"}, "open": "`+open+`"}`, 1))
	}
	edit := func(file, old, new string) func(fstest.MapFS) {
		return func(m fstest.MapFS) {
			if !strings.Contains(string(m[file].Data), old) {
				panic("test edit does not apply: " + old)
			}
			m[file].Data = []byte(strings.Replace(string(m[file].Data), old, new, 1))
		}
	}
	tests := []struct {
		name string
		edit func(fstest.MapFS)
		want []string
	}{
		{"entry names no app", func(m fstest.MapFS) { tappable(m, "${item.name}") },
			[]string{"apps/home/app.json", `on_tap[2]`, `entry 0 of the list "items" names the app "a"`, "not among the scenario's apps [home]"}},
		{"entry of the scenario names no app", func(m fstest.MapFS) {
			tappable(m, "${item.name}")
			m["scenarios/t/scenario.json"].Data = []byte(`{"task": "x", "apps": ["home"], "lists": {"items": [{"name": "home"}, {"name": "mail"}]}, "success": {"if": ["thing"]}}`)
		}, []string{"apps/home/app.json", `entry 1 of the list "items" names the app "mail"`}},
		{"open from a state variable", func(m fstest.MapFS) { tappable(m, "${q}") },
			[]string{"apps/home/app.json", `open "${q}"`, `"q" is not a field of the tapped list entry`}},
		{"open from a list that grows", func(m fstest.MapFS) {
			tappable(m, "${item.name}")
			m["scenarios/t/scenario.json"].Data = []byte(`{"task": "x", "apps": ["home"], "lists": {"items": [{"name": "home"}]}, "success": {"if": ["thing"]}}`)
			edit("apps/home/app.json", `"toggle": ["thing"]`, `"toggle": ["thing"], "append": {"list": "items", "item": {"name": "mail"}}`)(m)
		}, []string{"apps/home/app.json", "on_tap[0] appends to the list \"items\""}},
		{"open in a key handler", edit("apps/home/app.json", `"set": {"q": ""}`, `"open": "${item.name}"`),
			[]string{"apps/home/app.json", "keys.back", "only defined in tap handlers"}},
		{"a list called apps", edit("apps/home/app.json", `"lists": {"items"`, `"lists": {"apps"`),
			[]string{"apps/home/app.json", `"apps" is a built-in list`}},
		{"the scenario sets apps", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"].Data = []byte(`{"task": "x", "apps": ["home"], "lists": {"apps": []}, "success": {"if": ["thing"]}}`)
		}, []string{"scenarios/t/scenario.json", `"apps" is built in`}},
		{"append to apps", edit("apps/home/app.json", `"toggle": ["thing"]`, `"append": {"list": "apps", "item": {"name": "x"}}`),
			[]string{"apps/home/app.json", "on_tap[0]", `built-in list "apps" cannot be changed`}},
		{"toggle an apps entry", func(m fstest.MapFS) {
			edit("apps/home/main.xml", `sim-each="items"`, `sim-each="apps" resource-id="x:id/item" clickable="true"`)(m)
			edit("apps/home/main.xml", `${item.name}`, `${item.label}`)(m)
			edit("apps/home/app.json", `{"target": {"desc": "More"}, "go": "more"}`, `{"target": {"id": "x:id/item"}, "toggle_item": "label"}`)(m)
		}, []string{"apps/home/app.json", "toggle_item", `built-in list "apps" cannot be changed`}},
		{"unknown field of apps", edit("apps/home/main.xml", `text="${item.name}" sim-each="items"`, `text="${item.title}" sim-each="apps"`),
			[]string{"apps/home/main.xml", `"item.title"`, "name, label, package"}},
		{"sim-columns outside a list", edit("apps/home/main.xml", `text="Title"`, `text="Title" sim-columns="2"`),
			[]string{"apps/home/main.xml", "line 3", "sim-columns is only allowed on a sim-list"}},
		{"sim-columns not a number", edit("apps/home/main.xml", `sim-list="l"`, `sim-list="l" sim-columns="two"`),
			[]string{"apps/home/main.xml", `sim-columns "two"`}},
		{"sim-columns too many", edit("apps/home/main.xml", `sim-list="l"`, `sim-list="l" sim-columns="9223372036854775807"`),
			[]string{"apps/home/main.xml", "not a number from 1 to 100"}},
		{"columns wider than the list", edit("apps/home/main.xml", `sim-list="l"`, `sim-list="l" sim-columns="2"`),
			[]string{"apps/home/main.xml", "line 10", "2 columns of items 1080 wide", "end at x=2160"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := baseFS()
			tc.edit(m)
			p, err := LoadFS(m, "scenarios/t")
			if err == nil {
				t.Fatalf("loaded bad data: %v", p.Info())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// The same list, naming apps of the scenario, loads and opens them.
	m := baseFS()
	tappable(m, "${item.name|lower}")
	m["apps/other/app.json"] = &fstest.MapFile{Data: []byte(`{"label": "Other", "package": "com.example.other", "launch": "main", "screens": {"main": {"file": "main.xml"}}}`)}
	m["apps/other/main.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]" /></hierarchy>`)}
	m["scenarios/t/scenario.json"].Data = []byte(`{"task": "x", "apps": ["home", "other"], "lists": {"items": [{"name": "OTHER"}, {"name": "Home"}]}, "success": {"if": ["thing"]}}`)
	p, err := LoadFS(m, "scenarios/t")
	if err != nil {
		t.Fatal(err)
	}
	tap(t, p, "text=OTHER")
	if got := p.Screen(); got != "other:main" {
		t.Errorf("tapping the entry OTHER: on %s, want other:main", got)
	}
}
