package simulator

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"testing/fstest"
)

// A minimal valid fixture tree: one app with two screens and a list.
func baseFS() fstest.MapFS {
	return fstest.MapFS{
		"scenarios/t/scenario.json": {Data: []byte(`{
  "task": "Turn on the thing",
  "apps": ["home"],
  "success": {"if": ["thing == true"]}
}`)},
		"apps/home/app.json": {Data: []byte(`{
  "label": "Home", "package": "com.example.home", "launch": "main",
  "state": {"thing": "false", "q": ""},
  "lists": {"items": [{"name": "a"}, {"name": "b"}]},
  "screens": {
    "main": {"file": "main.xml", "on_tap": [
      {"target": {"text": "Thing"}, "toggle": ["thing"]},
      {"target": {"desc": "More"}, "go": "more"}
    ]},
    "more": {"file": "more.xml", "focus": "q", "keys": {"back": {"if": ["q"], "set": {"q": ""}}}}
  }
}`)},
		"apps/home/main.xml": {Data: []byte(`<hierarchy>
  <node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]">
    <node class="android.widget.TextView" text="Title" bounds="[0,100][1080,200]" />
    <node class="android.widget.LinearLayout" clickable="true" bounds="[0,200][1080,400]">
      <node class="android.widget.TextView" text="Thing" bounds="[40,250][400,350]" />
      <node class="android.widget.Switch" checked="${thing}" bounds="[900,250][1040,350]" />
    </node>
    <node class="android.widget.ImageButton" content-desc="More" clickable="true" bounds="[0,500][200,700]" />
    <node class="androidx.recyclerview.widget.RecyclerView" sim-list="l" bounds="[0,800][1080,1000]">
      <node class="android.widget.TextView" text="${item.name}" sim-each="items" bounds="[0,0][1080,150]" />
    </node>
  </node>
</hierarchy>`)},
		"apps/home/more.xml": {Data: []byte(`<hierarchy>
  <node class="android.widget.EditText" sim-input="q" hint="Search" clickable="true" bounds="[0,0][1080,200]" />
</hierarchy>`)},
		"system/system.json": {Data: []byte(`{"package": "com.android.systemui", "overlays": [{"file": "bar.xml"}]}`)},
		"system/bar.xml":     {Data: []byte(`<hierarchy><node class="android.widget.TextView" text="${clock}" resource-id="com.android.systemui:id/clock" bounds="[0,0][100,50]" /></hierarchy>`)},
	}
}

func TestLoadFSMinimal(t *testing.T) {
	p, err := LoadFS(baseFS(), "scenarios/t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if p.Success() {
		t.Fatal("success before acting")
	}
	if err := p.Tap(ctx, 100, 300); err != nil { // on the row's text
		t.Fatal(err)
	}
	if !p.Success() {
		t.Fatal("tapping the row did not toggle the thing")
	}
	root := dumpTree(t, p)
	if sw := findAll(root, "class", "android.widget.Switch"); len(sw) != 1 || sw[0].attr("checked") != "true" || sw[0].attr("checkable") != "true" {
		t.Errorf("switch not shown as checked: %+v", sw)
	}
	// Two list items of 150 in a list of 200: the second is cut to 50.
	items := findAll(root, "text", "b")
	if len(items) != 1 || items[0].attr("bounds") != "[0,950][1080,1000]" {
		t.Errorf("second item: %+v", items)
	}
	// A screen's own back handler runs while its condition holds (here: a
	// non-empty field is cleared first), then back pops as usual.
	x, y := findAll(root, "content-desc", "More")[0].center(t)
	p.Tap(ctx, x, y)
	p.Type(ctx, "abc")
	if v, _ := p.Var("q"); v != "abc" || p.Screen() != "home:more" {
		t.Fatalf("q=%q on %s", v, p.Screen())
	}
	p.Key(ctx, "back")
	if v, _ := p.Var("q"); v != "" || p.Screen() != "home:more" {
		t.Fatalf("first back: q=%q on %s, want the field cleared", v, p.Screen())
	}
	p.Key(ctx, "back")
	if p.Screen() != "home:main" {
		t.Fatalf("second back: on %s, want home:main", p.Screen())
	}
	if infos, err := ListFS(baseFS()); err != nil || len(infos) != 1 || infos[0] != (Info{Name: "t", Task: "Turn on the thing"}) {
		t.Errorf("ListFS = %v, %v", infos, err)
	}
}

func TestLoadFSBadData(t *testing.T) {
	tests := []struct {
		name string
		edit func(fstest.MapFS)
		want []string // substrings of the error
	}{
		{"missing scenario", func(m fstest.MapFS) { delete(m, "scenarios/t/scenario.json") }, []string{"scenarios/t/scenario.json"}},
		{"malformed scenario JSON", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte("{\n\"task\": \"x\",\n\"apps\": [\"home\"]\n\"success\": {}}")}
		}, []string{"scenarios/t/scenario.json:4", "malformed JSON"}},
		{"unknown predicate", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "success": {"wifi_on": true}}`)}
		}, []string{"scenarios/t/scenario.json", `unknown field "wifi_on"`}},
		{"empty predicate", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "success": {}}`)}
		}, []string{"scenarios/t/scenario.json", "success predicate is empty"}},
		{"no predicate", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"]}`)}
		}, []string{"scenarios/t/scenario.json", "no success predicate"}},
		{"predicate on unknown variable", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "success": {"if": ["wifi == true"]}}`)}
		}, []string{"scenarios/t/scenario.json", `unknown variable "wifi"`}},
		{"predicate on unknown screen", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "success": {"screen": "home:nope"}}`)}
		}, []string{"scenarios/t/scenario.json", `no screen "nope"`}},
		{"no task", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"apps": ["home"], "success": {"if": ["thing"]}}`)}
		}, []string{"scenarios/t/scenario.json", "no task"}},
		{"unknown app", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home", "mail"], "success": {"if": ["thing"]}}`)}
		}, []string{"apps/mail/app.json"}},
		{"unknown state variable", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "state": {"wfi": "true"}, "success": {"if": ["thing"]}}`)}
		}, []string{"scenarios/t/scenario.json", `unknown variable "wfi"`}},
		{"missing screen file", func(m fstest.MapFS) { delete(m, "apps/home/more.xml") }, []string{"apps/home/app.json", `"home:more"`, "more.xml"}},
		{"malformed XML", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte("<hierarchy>\n<node class=\"x\" bounds=\"[0,0][1,1]\">\n</hierarchy>")}
		}, []string{"apps/home/more.xml", "malformed XML"}},
		{"unknown attribute", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" bound="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", "line 1", `unknown attribute "bound"`}},
		{"no bounds", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", "no bounds"}},
		{"bad bounds", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" bounds="[5,5][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", "bounds"}},
		{"bad boolean", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" clickable="yes" bounds="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", `clickable="yes"`}},
		{"unknown variable in a screen", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" text="${qq}" bounds="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", `unknown variable "qq"`}},
		{"item outside a list", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" sim-input="q" text="${item.name}" bounds="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", "outside a sim-each item"}},
		{"unknown target", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"text": "Thing"`, `"text": "Thingy"`, 1))
		}, []string{"apps/home/app.json", "unknown target", `text="Thingy"`, "apps/home/main.xml"}},
		{"target not clickable", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"text": "Thing"`, `"text": "Title"`, 1))
		}, []string{"apps/home/app.json", `text="Title"`, "line 3", "not clickable"}},
		{"transition to unknown screen", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"go": "more"`, `"go": "less"`, 1))
		}, []string{"apps/home/app.json", `on_tap[1]`, `unknown target "less"`}},
		{"transition to unknown app", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"go": "more"`, `"go": "mail:inbox"`, 1))
		}, []string{"apps/home/app.json", `no app "mail"`}},
		{"toggle of unknown variable", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"toggle": ["thing"]`, `"toggle": ["thin"]`, 1))
		}, []string{"apps/home/app.json", `toggle: unknown variable "thin"`}},
		{"unknown handler field", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"go": "more"`, `"goto": "more"`, 1))
		}, []string{"apps/home/app.json", `unknown field "goto"`}},
		{"bad condition", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "success": {"if": ["thing >= high"]}}`)}
		}, []string{"scenarios/t/scenario.json", "needs a number"}},
		{"focus on a missing field", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"focus": "q"`, `"focus": "thing"`, 1))
		}, []string{"apps/home/app.json", `focus "thing"`}},
		{"no system bars", func(m fstest.MapFS) { delete(m, "system/system.json") }, []string{"system/system.json"}},
		{"null key handler", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"keys": {"back": {"if": ["q"], "set": {"q": ""}}}`, `"keys": {"back": null}`, 1))
		}, []string{"apps/home/app.json", "keys.back", "null"}},
		{"unknown key handler", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"keys": {"back": {`, `"keys": {"bak": {`, 1))
		}, []string{"apps/home/app.json", `unknown key "bak"`}},
		{"unknown swipe direction", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"focus": "q"`, `"focus": "q", "swipes": {"north": {"back": true}}`, 1))
		}, []string{"apps/home/app.json", `unknown direction "north"`}},
		{"two navigations", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"go": "more"`, `"go": "more", "back": true`, 1))
		}, []string{"apps/home/app.json", "at most one"}},
		{"null list entry", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `{"name": "a"}`, `null`, 1))
		}, []string{"apps/home/app.json", "items[0] is null"}},
		{"null list entry in a scenario", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "lists": {"items": [null]}, "success": {"if": ["thing"]}}`)}
		}, []string{"scenarios/t/scenario.json", "items[0] is null"}},
		{"reserved app name", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home", "system"], "success": {"if": ["thing"]}}`)}
		}, []string{"scenarios/t/scenario.json", "reserved"}},
		{"variable declared twice", func(m fstest.MapFS) {
			m["system/system.json"] = &fstest.MapFile{Data: []byte(`{"package": "s", "state": {"thing": "x"}}`)}
		}, []string{"system/system.json", `"thing" is declared twice`}},
		// The built-in clock may be read (the status bar shows it) but
		// never declared, set, toggled or typed into.
		{"clock declared", func(m fstest.MapFS) {
			m["system/system.json"] = &fstest.MapFile{Data: []byte(`{"package": "s", "state": {"clock": "1:00"}}`)}
		}, []string{"system/system.json", `"clock" cannot be a variable name`}},
		{"clock set by a scenario", func(m fstest.MapFS) {
			m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: []byte(`{"task": "x", "apps": ["home"], "state": {"clock": "1:00"}, "success": {"if": ["thing"]}}`)}
		}, []string{"scenarios/t/scenario.json", `unknown variable "clock"`}},
		{"clock set by a handler", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"set": {"q": ""}`, `"set": {"clock": ""}`, 1))
		}, []string{"apps/home/app.json", `set: unknown variable "clock"`}},
		{"clock toggled", func(m fstest.MapFS) {
			m["apps/home/app.json"].Data = []byte(strings.Replace(string(m["apps/home/app.json"].Data), `"toggle": ["thing"]`, `"toggle": ["clock"]`, 1))
		}, []string{"apps/home/app.json", `toggle: unknown variable "clock"`}},
		{"clock typed into", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="android.widget.EditText" sim-input="clock" bounds="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", `sim-input: unknown variable "clock"`}},
		{"list item with y1 not 0", func(m fstest.MapFS) {
			m["apps/home/main.xml"].Data = []byte(strings.Replace(string(m["apps/home/main.xml"].Data), `sim-each="items" bounds="[0,0][1080,150]"`, `sim-each="items" bounds="[0,10][1080,150]"`, 1))
		}, []string{"apps/home/main.xml", "relative to the item's top"}},
		{"computed attribute", func(m fstest.MapFS) {
			m["apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node index="0" class="x" sim-input="q" bounds="[0,0][1,1]" /></hierarchy>`)}
		}, []string{"apps/home/more.xml", `"index" is computed`}},
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
}

func TestLoadUnknownScenario(t *testing.T) {
	for _, name := range []string{"wfi", "../apps", ""} {
		_, err := Load(name)
		if err == nil || !strings.Contains(err.Error(), "unknown scenario") {
			t.Errorf("Load(%q) = %v", name, err)
		}
	}
	_, err := Load("wfi")
	if !strings.Contains(err.Error(), "wifi") {
		t.Errorf("error %q does not list the known scenarios", err)
	}
}

func TestList(t *testing.T) {
	infos, err := List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, in := range infos {
		if in.Description == "" {
			t.Errorf("%s has no description", in.Name)
		}
		got[in.Name] = in.Task
	}
	for name, task := range map[string]string{
		"wifi": "Turn on Wi-Fi", "alarm": "Set an alarm for 7:30 AM", "devopts": "Open Developer options",
		"bluetooth": "Turn off Bluetooth", "search": "Search for 'droidgo' in Chrome",
	} {
		if got[name] != task {
			t.Errorf("scenario %s task %q, want %q", name, got[name], task)
		}
	}
}

func FuzzParseScreen(f *testing.F) {
	for _, s := range []string{
		string(baseFS()["apps/home/main.xml"].Data),
		`<hierarchy><node class="x" bounds="[0,0][1,1]" sim-if="a &amp;&amp; b == 'c'" checked="?x >= 2" text="${a|pad2}" /></hierarchy>`,
		`<hierarchy><node class="x" bounds="[0,0][1,1]" sim-list="l"><node class="y" bounds="[0,0][1,1]" sim-each="i"/></node></hierarchy>`,
		`<hierarchy><node class="x" bounds="[0,0][9,9]" sim-list="l" sim-columns="3"><node class="y" bounds="[0,0][3,2]" sim-each="i"/><node class="z" bounds="[1,0][2,5]"/></node></hierarchy>`,
		`<hierarchy>`, `<node/>`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roots, err := parseScreen(data, "p")
		if err != nil {
			return
		}
		rc := &renderCtx{base: envFunc(func(string) (string, bool) { return "1", true }), scroll: map[string]int{}, vars: map[string]string{}, lists: map[string][]map[string]string{}}
		var windows []*rnode
		for _, r := range roots {
			if n := rc.render(r, nil, 0, nil, "", 0); n != nil {
				windows = append(windows, n)
			}
		}
		// Whatever the template, the dump is well-formed XML.
		var b bytes.Buffer
		writeXML(&b, windows, 0, func(v int) int { return v })
		d := xml.NewDecoder(&b)
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("rendered dump is not XML: %v\n%s", err, b.String())
			}
		}
	})
}

func FuzzParseCond(f *testing.F) {
	for _, s := range []string{"a", "!a", "a == b", "a != 'x y'", "a >= 3", "item.x < 2", "", "==", "a <"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCond(s)
		if err != nil {
			return
		}
		c.eval(envFunc(func(string) (string, bool) { return "2", true }))
	})
}

// FuzzLoadFS feeds arbitrary app.json and scenario.json to the loader and
// drives the phone a little: bad data must give an error, never a panic.
func FuzzLoadFS(f *testing.F) {
	base := baseFS()
	f.Add(base["apps/home/app.json"].Data, base["scenarios/t/scenario.json"].Data)
	f.Add([]byte(`{"label":"H","package":"p","launch":"main","lists":{"items":[null]},"screens":{"main":{"file":"main.xml","keys":{"back":null},"on_tap":[null]}}}`), base["scenarios/t/scenario.json"].Data)
	f.Add(base["apps/home/app.json"].Data, []byte(`{"task":"x","apps":["home"],"lists":{"items":[null,{}]},"success":{"list_has":{"list":"items","item":{"a":"b"}}}}`))
	f.Add([]byte(`{"label":"H","package":"p","launch":"main","screens":{"main":{"file":"main.xml","on_tap":[{"target":{"text":"Thing"},"open":"${item.name}"}]}}}`), []byte(`{"task":"x","apps":["home"],"lists":{"items":[{"name":"home"}]},"success":{"if":["thing"]}}`))
	f.Fuzz(func(t *testing.T, app, scen []byte) {
		m := baseFS()
		m["apps/home/app.json"] = &fstest.MapFile{Data: app}
		m["scenarios/t/scenario.json"] = &fstest.MapFile{Data: scen}
		p, err := LoadFS(m, "scenarios/t")
		if err != nil {
			return
		}
		ctx := context.Background()
		for _, pt := range [][2]int{{100, 300}, {100, 600}, {500, 900}, {500, 100}} {
			p.Tap(ctx, pt[0], pt[1])
			p.LongPress(ctx, pt[0], pt[1])
		}
		p.Swipe(ctx, 500, 950, 500, 100, 0)
		p.Type(ctx, "x")
		for _, k := range []string{"back", "enter", "delete", "home"} {
			p.Key(ctx, k)
		}
		if _, err := p.Dump(ctx); err != nil {
			t.Fatal(err)
		}
		p.Success()
	})
}
