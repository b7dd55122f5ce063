package simulator

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// A scenario of another density scales every bound and every touch, so the
// same path works at the scaled places.
func TestDensity(t *testing.T) {
	p := mustLoad(t, "wifi-small")
	w, h, err := p.Size(context.Background())
	if err != nil || w != 720 || h != 1600 || p.Density() != 280 {
		t.Fatalf("size %dx%d, density %d, %v", w, h, p.Density(), err)
	}
	root := dumpTree(t, p)
	if b := root.Children[0].attr("bounds"); b != "[0,0][720,1600]" {
		t.Errorf("the window's bounds are %s", b)
	}
	ref := mustLoad(t, "wifi")
	run(t, ref, []string{"open Settings"})
	run(t, p, []string{"open Settings"})
	a, b := find(t, ref, "text=Network & internet"), find(t, p, "text=Network & internet")
	ax, ay := a.center(t)
	bx, by := b.center(t)
	if bx != ax*2/3 && bx != ax*2/3+1 || by != ay*2/3 && by != ay*2/3+1 {
		t.Errorf("centre (%d,%d) at density 280, (%d,%d) at 420", bx, by, ax, ay)
	}
	run(t, p, []string{"tap text=Network & internet", "tap text=Internet", "tap text=Wi-Fi", "screen settings:internet"})
	if !p.Success() {
		t.Error("the path did not turn Wi-Fi on")
	}
	// A swipe scales too: the same stroke as a fraction of the screen
	// scrolls the same content.
	q := mustLoad(t, "devopts")
	r := mustLoad(t, "wifi-small")
	run(t, q, []string{"open Settings"})
	run(t, r, []string{"open Settings"})
	if err := q.Swipe(context.Background(), 540, 1800, 540, 600, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Swipe(context.Background(), 360, 1200, 360, 400, 0); err != nil {
		t.Fatal(err)
	}
	qt, rt := texts(dumpTree(t, q)), texts(dumpTree(t, r))
	if !reflect.DeepEqual(qt, rt) {
		t.Errorf("after the same swipe the screens differ:\n%q\n%q", qt, rt)
	}
	for _, bad := range []string{`"density": 100`, `"density": 2000`} {
		m := baseFS()
		m["scenarios/t/scenario.json"].Data = []byte(strings.Replace(string(m["scenarios/t/scenario.json"].Data), `"task"`, bad+`, "task"`, 1))
		if _, err := LoadFS(m, "scenarios/t"); err == nil || !strings.Contains(err.Error(), "density") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// texts are the texts of a dump but the status bar clock's.
func texts(root *xnode) []string {
	var out []string
	root.walk(func(n *xnode) {
		if s := n.attr("text"); s != "" && n.attr("resource-id") != ClockResourceID {
			out = append(out, s)
		}
	})
	return out
}

// A scenario directory's own apps/ and system/ files replace the shared
// ones for it alone, and errors name them.
func TestScenarioOwnFiles(t *testing.T) {
	m := baseFS()
	m["scenarios/u/scenario.json"] = &fstest.MapFile{Data: m["scenarios/t/scenario.json"].Data}
	m["scenarios/u/apps/home/main.xml"] = &fstest.MapFile{Data: []byte(strings.Replace(string(m["apps/home/main.xml"].Data), `text="Title"`, `text="Other title"`, 1))}
	for name, want := range map[string]string{"t": "Title", "u": "Other title"} {
		p, err := LoadFS(m, "scenarios/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if len(findAll(dumpTree(t, p), "text", want)) != 1 {
			t.Errorf("scenario %s does not show %q", name, want)
		}
	}
	m["scenarios/u/apps/home/more.xml"] = &fstest.MapFile{Data: []byte(`<hierarchy><node class="x" bound="[0,0][1,1]"/></hierarchy>`)}
	if _, err := LoadFS(m, "scenarios/u"); err == nil || !strings.HasPrefix(err.Error(), "scenarios/u/apps/home/more.xml") {
		t.Errorf("the error does not name the scenario's own file: %v", err)
	}
}

func TestState(t *testing.T) {
	p := mustLoad(t, "alarm")
	before := p.State()
	run(t, p, []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=OK"})
	after := p.State()
	if reflect.DeepEqual(before, after) {
		t.Fatal("the state did not change")
	}
	if got := after.Stack; len(got) < 2 || got[0] != "launcher:home" || got[len(got)-1] != "clock:alarms" {
		t.Errorf("stack %v", got)
	}
	if _, ok := after.Vars[clockVar]; ok {
		t.Error("the clock is in the state")
	}
	if _, ok := after.Lists[appsList]; ok {
		t.Error("the built-in apps list is in the state")
	}
	q := mustLoad(t, "alarm")
	run(t, q, []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=OK"})
	if !reflect.DeepEqual(after, q.State()) {
		t.Error("two phones that did the same are in different states")
	}
	after.Vars["x"] = "changed"
	if _, ok := p.State().Vars["x"]; ok {
		t.Error("State is not a copy")
	}
}

// The perturbed phones are variants of task suite scenarios: the same task
// on a phone that looks or behaves a little differently.
func TestPerturbedScenarios(t *testing.T) {
	infos, err := ListPerturbed()
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := List()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Info{}
	for _, in := range tasks {
		names[in.Name] = in
	}
	stops := 0
	for _, in := range infos {
		if _, dup := names[in.Name]; dup {
			t.Errorf("%s is both a task and a perturbed scenario", in.Name)
		}
		p := mustLoad(t, in.Name)
		m := p.Meta()
		base, ok := names[m.VariantOf]
		if !ok {
			t.Errorf("%s: variant_of %q is not a scenario of the task suite", in.Name, m.VariantOf)
			continue
		}
		if base.Task != in.Task {
			t.Errorf("%s: task %q, its base's %q", in.Name, in.Task, base.Task)
		}
		if m.Replay == ReplayStop {
			stops++
		}
	}
	if len(infos) < 8 || stops < 2 {
		t.Errorf("%d perturbed scenarios, %d where a replay must stop", len(infos), stops)
	}
	for _, tc := range []struct{ eval, want string }{
		{`{"replay": "stop"}`, "needs variant_of"},
		{`{"replay": "maybe", "variant_of": "x"}`, `"maybe"`},
	} {
		m := baseFS()
		m["scenarios/t/scenario.json"].Data = []byte(strings.Replace(string(m["scenarios/t/scenario.json"].Data), `"task"`, `"eval": `+tc.eval+`, "task"`, 1))
		if _, err := LoadFS(m, "scenarios/t"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval %s: %v", tc.eval, err)
		}
	}
}

// The one-time dialog of wifi-dialog is modal: a tap on the page under it
// does nothing, and "Got it" dismisses it for good.
func TestSettingsTipDialog(t *testing.T) {
	p := mustLoad(t, "wifi-dialog")
	run(t, p, []string{"open Settings", "see text=What’s new in Settings", "tap text=Network & internet", "screen settings:home", "tap text=Got it"})
	if visible(t, p, "text=Got it") {
		t.Fatal("the dialog is still there")
	}
	run(t, p, []string{"key back", "open Settings", "tap text=Network & internet", "screen settings:network"})
	if visible(t, p, "text=Got it") {
		t.Error("the dialog came back")
	}
	q := mustLoad(t, "wifi")
	run(t, q, []string{"open Settings"})
	if visible(t, q, "text=Got it") {
		t.Error("the dialog shows where the scenario does not ask for it")
	}
}
