package macro_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/macro"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/replay/replaytest"
	"github.com/droidgo/droidgo/simulator"
)

// sendMacro is the message-send run as a macro whose message is a
// parameter.
func sendMacro(t *testing.T) *macro.Macro {
	t.Helper()
	phone, err := simulator.Load("message-send")
	if err != nil {
		t.Fatal(err)
	}
	rec, res, _ := replaytest.RunScript(t, phone, "message-send")
	if !res.Success {
		t.Fatal(res.Reason)
	}
	plan, err := replay.FromRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := macro.FromPlan("send", plan, map[string]string{"message": "On my way"}, "made from a test run")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A macro saved with a parameter runs with two values, each arriving
// exactly (non-ASCII included), and refuses to run without one.
func TestMacroParameters(t *testing.T) {
	store := macro.Store{Dir: t.TempDir()}
	m := sendMacro(t)
	if m.Task != "Send '{{message}}' to Alice Moreau" || !slices.Equal(m.Params, []string{"message"}) {
		t.Fatalf("task %q, params %q", m.Task, m.Params)
	}
	path, err := store.Save(m, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(m, false); err == nil {
		t.Error("saved over an existing macro without overwrite")
	}
	loaded, err := store.Load("send")
	if err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(loaded.Steps, m.Steps) || loaded.Task != m.Task {
		t.Fatalf("the file does not read back as written:\n%+v\n%+v", loaded.Steps, m.Steps)
	}
	for _, msg := range []string{"Running 10 minutes late", "Grüße aus Köln 👋 — 你好!"} {
		plan, err := loaded.Plan(map[string]string{"message": msg})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Task != "Send '"+msg+"' to Alice Moreau" {
			t.Errorf("task %q", plan.Task)
		}
		phone, err := simulator.Load("message-send")
		if err != nil {
			t.Fatal(err)
		}
		cfg := replaytest.Config(plan, phone)
		cfg.Approver = replaytest.ApproveAll // the Send is sensitive
		cfg.Verify = nil                     // the scenario checks its own message
		res := replay.Run(context.Background(), cfg)
		if !res.AsRecorded {
			t.Fatalf("%q: %+v", msg, res)
		}
		if typed := phone.Typed(); !slices.Equal(typed, []string{msg}) {
			t.Errorf("typed %q, want exactly %q", typed, msg)
		}
		sent := phone.List("sent")
		if len(sent) != 1 || sent[0]["text"] != msg || sent[0]["to"] != "Alice Moreau" {
			t.Errorf("sent %v", sent)
		}
	}
	for _, vals := range []map[string]string{nil, {"msg": "x"}, {"message": "x", "other": "y"}} {
		if _, err := loaded.Plan(vals); err == nil {
			t.Errorf("Plan(%v) accepted", vals)
		}
	}
	if _, err := loaded.Plan(nil); err == nil || !strings.Contains(err.Error(), "--set message=") {
		t.Errorf("the refusal does not say how to give the value: %v", err)
	}
}

func TestFromPlanRefuses(t *testing.T) {
	rec := replaytest.Shipped(t, "wifi-loop")
	plan, err := replay.FromRecording(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := macro.FromPlan("loop", plan, nil, ""); err == nil || !strings.Contains(err.Error(), "successful") {
		t.Errorf("a failed run became a macro: %v", err)
	}
	plan, err = replay.FromRecording(replaytest.Shipped(t, "search"))
	if err != nil {
		t.Fatal(err)
	}
	for _, params := range []map[string]string{
		{"q": "not typed anywhere"},
		{"bad name": "droidgo"},
		{"q": ""},
	} {
		if _, err := macro.FromPlan("s", plan, params, ""); err == nil {
			t.Errorf("FromPlan with %v accepted", params)
		}
	}
	m, err := macro.FromPlan("s", plan, map[string]string{"q": "droidgo"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Task != "Search for '{{q}}' in Chrome" {
		t.Errorf("task %q", m.Task)
	}
}

// A malformed macro file is reported with its line.
func TestParseErrors(t *testing.T) {
	good := `task = "Turn on Wi-Fi"
params = []

[[step]]
do = 'open_app(name="Settings")'

[[step]]
do = 'tap(index=4)'
[step.target]
label = "Wi-Fi"
`
	if _, err := macro.Parse([]byte(good), "w", "w.toml"); err != nil {
		t.Fatalf("good file: %v", err)
	}
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"syntax", strings.Replace(good, `do = 'tap(index=4)'`, `do = 'tap(index=4)`, 1), 8, ""},
		{"unknown key", strings.Replace(good, `label = "Wi-Fi"`, `lable = "Wi-Fi"`, 1), 10, "lable"},
		{"unknown tool", strings.Replace(good, `tap(index=4)`, `tapp(index=4)`, 1), 8, "tapp"},
		{"bad argument", strings.Replace(good, `tap(index=4)`, `tap(index="four")`, 1), 8, "index"},
		{"index without target", strings.Replace(good, "[step.target]\nlabel = \"Wi-Fi\"\n", "", 1), 8, "target"},
		{"no do", strings.Replace(good, `do = 'open_app(name="Settings")'`, ``, 1), 4, "no do"},
		{"undeclared parameter", strings.Replace(good, `name="Settings"`, `name="{{app}}"`, 1), 5, "{{app}}"},
		{"bad parameter name", strings.Replace(good, `params = []`, `params = ["a b"]`, 1), 2, "not a name"},
		{"parameter twice", strings.Replace(good, `params = []`, `params = ["a", "a"]`, 1), 2, "twice"},
		{"no task", strings.Replace(good, `task = "Turn on Wi-Fi"`, `task = " "`, 1), 1, "no task"},
		{"no steps", "task = \"x\"\n", 0, "no steps"},
		{"wrong type", strings.Replace(good, `params = []`, `params = "a"`, 1), 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := macro.Parse([]byte(tc.text), "w", "w.toml")
			var me *macro.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *macro.Error", err)
			}
			if me.Line != tc.line || me.File != "w.toml" || !strings.Contains(me.Msg, tc.want) {
				t.Errorf("error %q: line %d, want %d mentioning %q", err, me.Line, tc.line, tc.want)
			}
		})
	}
	big := strings.Repeat("#", macro.MaxFileSize+1)
	if _, err := macro.Parse([]byte(big), "w", "w.toml"); err == nil {
		t.Error("a file over the size limit parsed")
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	store := macro.Store{Dir: filepath.Join(dir, "macros")}
	if infos, err := store.List(); err != nil || len(infos) != 0 {
		t.Fatalf("empty store: %v %v", infos, err)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "-x", "x.toml", strings.Repeat("a", 65)} {
		if _, err := store.Load(bad); !errors.Is(err, macro.ErrBadName) {
			t.Errorf("Load(%q): %v", bad, err)
		}
	}
	if _, err := store.Load("nope"); !errors.Is(err, macro.ErrNotFound) {
		t.Errorf("Load of a missing macro: %v", err)
	}
	if _, err := store.Remove("nope"); !errors.Is(err, macro.ErrNotFound) {
		t.Errorf("Remove of a missing macro: %v", err)
	}
	plan, err := replay.FromRecording(replaytest.Shipped(t, "wifi"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := macro.FromPlan("wifi", plan, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save(m, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store.Path("broken"), []byte("task = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	infos, err := store.List()
	if err != nil || len(infos) != 2 || infos[0].Name != "broken" || infos[0].Err == nil || infos[1].Macro == nil {
		t.Fatalf("list %+v %v", infos, err)
	}
	if _, err := store.Remove("wifi"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load("wifi"); !errors.Is(err, macro.ErrNotFound) {
		t.Errorf("a removed macro loads: %v", err)
	}
	for _, tc := range []struct{ xdg, home, want string }{
		{"/data", "/home/u", "/data/droidgo/macros"},
		{"", "/home/u", "/home/u/.local/share/droidgo/macros"},
	} {
		got, err := macro.DefaultDir(func(k string) string {
			return map[string]string{"XDG_DATA_HOME": tc.xdg, "HOME": tc.home}[k]
		})
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("DefaultDir(%q, %q) = %q, %v", tc.xdg, tc.home, got, err)
		}
	}
	if _, err := macro.DefaultDir(func(k string) string { return map[string]string{"XDG_DATA_HOME": "rel"}[k] }); err == nil {
		t.Error("a relative XDG_DATA_HOME is accepted")
	}
}

// FuzzParse: any file is a macro or an *Error, and a macro read back is
// written and read again the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte("task = \"x\"\nparams = [\"p\"]\n[[step]]\ndo = 'type_text(text=\"{{p}}\")'\n"))
	f.Add([]byte("task = \"x\"\n[[step]]\ndo = 'tap(index=1)'\n[step.target]\nlabel = \"a\"\nancestors = [{class = \"c\", sibling = 2}]\n[step.screen]\napp = \"p\"\nlabels = [\"a\"]\n"))
	f.Add([]byte("task = 'x'\n[[step]]\ndo = '{\"name\":\"wait\",\"arguments\":{\"seconds\":1}}'\n"))
	f.Add([]byte("[[step]]\n[[step]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := macro.Parse(data, "f", "f.toml")
		if err != nil {
			var me *macro.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *macro.Error", err)
			}
			return
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := macro.Parse(out, "f", "f.toml")
		if err != nil {
			t.Fatalf("written file does not read back: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back.Steps, m.Steps) || back.Task != m.Task || !slices.Equal(back.Params, m.Params) {
			t.Fatalf("read back differently:\n%+v\n%+v", back, m)
		}
		vals := map[string]string{}
		for _, p := range m.Params {
			vals[p] = "v"
		}
		m.Plan(vals)
	})
}
