package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
)

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{31, 50, 0.4815, 0.7414},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{0, 0, 0, 0},
		{1, 2, 0.0945, 0.9055},
	} {
		lo, hi := Wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestMcNemar(t *testing.T) {
	for _, c := range []struct {
		b, c int
		p    float64
	}{
		{0, 0, 1},
		{0, 6, 2.0 / 64},
		{1, 5, 2 * 7.0 / 64},
		{5, 1, 2 * 7.0 / 64},
		{3, 3, 1},
		{0, 5, 2.0 / 32},
		// Large n stays finite and tiny.
		{0, 200, 2 * math.Pow(0.5, 200)},
	} {
		if got := McNemar(c.b, c.c); math.Abs(got-c.p) > 1e-12*math.Max(1, c.p) && math.Abs(got-c.p)/c.p > 1e-9 {
			t.Errorf("McNemar(%d, %d) = %g, want %g", c.b, c.c, got, c.p)
		}
	}
}

func TestScore(t *testing.T) {
	accept := []action.Call{
		{Name: "tap", Arguments: map[string]any{"index": json.Number("4")}},
		{Name: "type_text", Arguments: map[string]any{"text": "Zoë Martin"}},
		{Name: "swipe", Arguments: map[string]any{"direction": "up"}},
	}
	for _, c := range []struct {
		call      action.Call
		tool, act bool
	}{
		{action.Call{Name: "tap", Arguments: map[string]any{"index": int64(4)}}, true, true},
		{action.Call{Name: "tap", Arguments: map[string]any{"index": float64(4)}}, true, true},
		{action.Call{Name: "tap", Arguments: map[string]any{"index": int64(5)}}, true, false},
		{action.Call{Name: "tap", Arguments: map[string]any{}}, true, false},
		{action.Call{Name: "type_text", Arguments: map[string]any{"text": "  zoË martin "}}, true, true},
		{action.Call{Name: "type_text", Arguments: map[string]any{"text": "Zoe Martin"}}, true, false},
		{action.Call{Name: "swipe", Arguments: map[string]any{"direction": "up", "index": int64(2)}}, true, true},
		{action.Call{Name: "swipe", Arguments: map[string]any{"direction": "Up"}}, true, false},
		{action.Call{Name: "long_press", Arguments: map[string]any{"index": int64(4)}}, false, false},
	} {
		tool, act := Score(c.call, accept)
		if tool != c.tool || act != c.act {
			t.Errorf("Score(%s) = %v, %v; want %v, %v", c.call.String(), tool, act, c.tool, c.act)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const tinyScreen = `<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.example" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]"><node index="0" text="OK" resource-id="" class="android.widget.Button" package="com.example" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[100,100][500,300]" /></node></hierarchy>`

func TestLoadDecisionErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "screens", "a.xml"), tinyScreen)
	write(t, filepath.Join(dir, "cases.jsonl"), strings.Join([]string{
		`{"name":"ok","screen":"screens/a.xml","task":"Tap OK","accept":[{"name":"tap","arguments":{"index":0}}]}`,
		``,
		`{"name":"bad-json","screen":`,
		`{"name":"no-tool","screen":"screens/a.xml","task":"x","accept":[{"name":"fly","arguments":{}}]}`,
		`{"name":"no-screen","screen":"screens/missing.xml","task":"x","accept":[{"name":"tap","arguments":{"index":0}}]}`,
		`{"name":"escape","screen":"../x.xml","task":"x","accept":[{"name":"tap","arguments":{"index":0}}]}`,
		`{"name":"ok","screen":"screens/a.xml","task":"dup","accept":[{"name":"tap","arguments":{"index":0}}]}`,
		`{"name":"typo","screen":"screens/a.xml","task":"x","acept":[]}`,
	}, "\n"))
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 1 || s.Cases[0].Name != "ok" {
		t.Fatalf("cases = %v, want just ok", s.Cases)
	}
	file := filepath.Join(dir, "cases.jsonl")
	want := map[string]string{
		"line-3":    file + ":3: malformed case",
		"no-tool":   file + ":4: accept[0]: unknown tool \"fly\"",
		"no-screen": file + ":5: screen " + filepath.Join(dir, "screens/missing.xml"),
		"escape":    file + ":6: screen \"../x.xml\" must be a path inside",
		"ok":        file + ":7: case name \"ok\" is also used on line 1",
		"line-8":    file + ":8: malformed case: json: unknown field \"acept\"",
	}
	if len(s.Broken) != len(want) {
		t.Errorf("broken = %+v, want %d entries", s.Broken, len(want))
	}
	for _, b := range s.Broken {
		if w, ok := want[b.Name]; !ok || !strings.HasPrefix(b.Reason, w) {
			t.Errorf("broken %q: %q, want prefix %q", b.Name, b.Reason, w)
		}
	}
	// Broken cases are reported as not run, never dropped.
	res := runSuites(t, []*Suite{s}, Options{Model: mustScripts(t, writeScript(t, "tap0", "</think><tool_call>tap<arg_key>index</arg_key><arg_value>0</arg_value></tool_call>"))})
	if got := res.Summary.Decisions; got.N != 1 || got.ActionCorrect != 1 || got.NotRun != len(want) {
		t.Errorf("summary = %+v, want 1 run and correct, %d not run", got, len(want))
	}
}

func TestLoadTaskSuiteWithOwnApps(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "apps", "hello", "app.json"), `{"label":"Hello","package":"com.example.hello","launch":"main","state":{"greeted":"false"},
"screens":{"main":{"file":"main.xml","on_tap":[{"target":{"text":"Greet"},"set":{"greeted":"true"}}]}}}`)
	write(t, filepath.Join(dir, "apps", "hello", "main.xml"), `<hierarchy rotation="0"><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node class="android.widget.Button" text="Greet" clickable="true" bounds="[100,300][980,500]"/></node></hierarchy>`)
	write(t, filepath.Join(dir, "greet", "scenario.json"), `{"task":"Press Greet in the Hello app","apps":["launcher","settings","settingssearch","clock","chrome","hello"],
"success":{"if":["greeted == true"]},"eval":{"app":"Hello","difficulty":"easy","human_steps":2}}`)
	write(t, filepath.Join(dir, "broken", "scenario.json"), `{"task":"x","apps":["nosuchapp"],"success":{"if":["x"]}}`)
	write(t, filepath.Join(dir, "typo", "scenario.json"), "{\"task\":\"x\",\n\"apps\":[\"launcher\"],\n\"succes\":{}}")
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 1 || s.Tasks[0].Name != "greet" || s.Tasks[0].Meta.HumanSteps != 2 {
		t.Fatalf("tasks = %+v, broken %+v", s.Tasks, s.Broken)
	}
	if len(s.Broken) != 2 {
		t.Fatalf("broken = %+v, want 2", s.Broken)
	}
	for _, b := range s.Broken {
		if !strings.Contains(b.Reason, filepath.Join(dir, b.Name, "scenario.json")) && !strings.Contains(b.Reason, "nosuchapp") {
			t.Errorf("broken %s: %q does not name the file", b.Name, b.Reason)
		}
	}
	greet := writeScript(t, "greet", `Open Hello.</think><tool_call>open_app<arg_key>name</arg_key><arg_value>Hello</arg_value></tool_call>
--- turn
Tap it.</think><tool_call>tap<arg_key>index</arg_key><arg_value>{{index "Greet"}}</arg_value></tool_call>
--- turn
Done.</think><tool_call>task_complete<arg_key>summary</arg_key><arg_value>Greeted</arg_value></tool_call>`)
	res := runSuites(t, []*Suite{s}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, greet)})
	if got := res.Summary.Tasks; got.N != 1 || got.Success != 1 || got.NotRun != 2 {
		t.Fatalf("summary = %+v; tasks %+v", got, res.Tasks)
	}
}

// writeScript writes a one-file script whose turns are separated by
// "--- turn" lines (the first is added).
func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".txt")
	write(t, p, "--- turn\n"+body+"\n")
	return p
}

func mustScripts(t *testing.T, spec string) ModelFunc {
	t.Helper()
	f, err := ScriptModels(spec, script.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func runSuites(t *testing.T, suites []*Suite, o Options) *Results {
	t.Helper()
	if o.Loop.MaxSteps == 0 {
		o.Loop.MaxSteps = 20
	}
	res, err := Run(context.Background(), suites, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func builtin(t *testing.T, name string) *Suite {
	t.Helper()
	s, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Broken) > 0 {
		t.Fatalf("built-in suite %s has broken entries: %+v", name, s.Broken)
	}
	return s
}

// scriptsDir is the always-right scripts of the built-in tasks.
var scriptsDir = filepath.Join("..", "fixtures", "scripts", "eval")

func TestAlwaysRightScoresFull(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	for _, task := range tasks.Tasks {
		if _, err := os.Stat(filepath.Join(scriptsDir, task.Name+".txt")); err != nil {
			t.Errorf("built-in task %s has no always-right script in %s", task.Name, scriptsDir)
		}
	}
	res := runSuites(t, []*Suite{tasks}, Options{Loop: loop.Config{Think: true, ThinkBudget: 1024}, Model: mustScripts(t, scriptsDir), Parallel: 4})
	gated := map[string]bool{"message-send": true, "message-nonascii": true, "message-fix-draft": true, "message-from-calculator": true, "contact-delete": true, "file-delete": true}
	for _, r := range res.Tasks {
		if !r.Success {
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
		// "Send" and "Delete" go through the sensitive-action policy.
		if gated[r.Name] != (r.Approvals > 0) {
			t.Errorf("%s: %d approvals", r.Name, r.Approvals)
		}
	}
	if s := res.Summary.Tasks; s.N != len(tasks.Tasks) || s.Success != s.N || s.Rate != 1 {
		t.Errorf("summary %+v, want %d/%d", s, len(tasks.Tasks), len(tasks.Tasks))
	}
}

// decisionScripts writes, for every case, a one-turn script answering
// the case's first accepted call (the always-right decision model) or,
// with wrong set, the same tool with every argument off.
func decisionScripts(t *testing.T, s *Suite, wrong bool) string {
	dir := t.TempDir()
	for _, c := range s.Cases {
		a := c.Accept[0]
		var b strings.Builder
		b.WriteString("I know this one.</think><tool_call>" + a.Name)
		keys := make([]string, 0, len(a.Arguments))
		for k := range a.Arguments {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := fmt.Sprint(a.Arguments[k])
			if wrong {
				v = wrongValue(a.Name, k, v)
			}
			fmt.Fprintf(&b, "<arg_key>%s</arg_key><arg_value>%s</arg_value>", k, v)
		}
		if _, ok := a.Arguments["summary"]; a.Name == "task_complete" && !ok {
			// Any summary is accepted; the tool requires one.
			b.WriteString("<arg_key>summary</arg_key><arg_value>The screen already shows the answer</arg_value>")
		}
		b.WriteString("</tool_call>")
		write(t, filepath.Join(dir, c.Name+".txt"), "--- turn\n"+b.String()+"\n")
	}
	return dir
}

func wrongValue(tool, key, v string) string {
	switch key {
	case "index":
		return "0"
	case "direction":
		if v == "down" {
			return "up"
		}
		return "down"
	case "key":
		if v == "home" {
			return "back"
		}
		return "home"
	}
	return v + " and more"
}

func TestDecisionsAlwaysRight(t *testing.T) {
	s := builtin(t, BuiltinDecisions)
	if len(s.Cases) < 40 {
		t.Errorf("the built-in decision suite has %d cases, want at least 40", len(s.Cases))
	}
	for _, c := range s.Cases {
		if _, err := os.Stat(filepath.Join(scriptsDir, "decisions", c.Name+".txt")); err != nil {
			t.Errorf("decision case %s has no always-right script", c.Name)
		}
	}
	res := runSuites(t, []*Suite{s}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, scriptsDir), Parallel: 4})
	for _, d := range res.Decisions {
		if !d.ActionCorrect {
			t.Errorf("%s: call %v not scored correct (reason %q)", d.Name, d.Call, d.Reason)
		}
	}
	if got := res.Summary.Decisions; got.N != len(s.Cases) || got.ActionCorrect != got.N || got.ToolCorrect != got.N {
		t.Errorf("summary %+v", got)
	}
}

func TestDecisionsWrongArgumentsRightTool(t *testing.T) {
	s := builtin(t, BuiltinDecisions)
	res := runSuites(t, []*Suite{s}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, decisionScripts(t, s, true)), Parallel: 4})
	for i, d := range res.Decisions {
		c := s.Cases[i]
		if d.Call == nil {
			t.Errorf("%s: no call (%s)", d.Name, d.Reason)
			continue
		}
		tool, act := Score(*d.Call, c.Accept)
		if d.ToolCorrect != tool || d.ActionCorrect != act || !tool {
			t.Errorf("%s: scored %v/%v for %s, recomputed %v/%v", d.Name, d.ToolCorrect, d.ActionCorrect, d.Call.String(), tool, act)
		}
	}
}

// An undoing model finishes every task but, when the task was already
// done at the start, first "does" it, which undoes it: exactly those
// tasks fail.
func TestUndoFinishedFailsExactlyThose(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	undoDir := filepath.Join("..", "fixtures", "scripts", "eval-undo")
	ents, err := os.ReadDir(undoDir)
	if err != nil {
		t.Fatal(err)
	}
	undo := map[string]bool{}
	for _, e := range ents {
		undo[strings.TrimSuffix(e.Name(), ".txt")] = true
	}
	if len(undo) < 3 {
		t.Fatalf("only %d undo scripts", len(undo))
	}
	right, wrong := mustScripts(t, scriptsDir), mustScripts(t, undoDir)
	models := func(ctx context.Context, kind, suite, name string) (model.Backend, func(), error) {
		if undo[name] {
			return wrong(ctx, kind, suite, name)
		}
		return right(ctx, kind, suite, name)
	}
	res := runSuites(t, []*Suite{tasks}, Options{Loop: loop.Config{Think: true, ThinkBudget: 1024}, Model: models, Parallel: 4})
	for _, r := range res.Tasks {
		if r.NotRun {
			t.Errorf("%s not run: %s", r.Name, r.Reason)
		}
		if r.Success == undo[r.Name] {
			t.Errorf("%s: success %v (%s), want %v", r.Name, r.Success, r.Reason, !undo[r.Name])
		}
	}
}

// An overthinking model reasons for thousands of tokens before each
// answer. With a thinking budget the loop closes its reasoning and it
// answers right; without one its turns hit the token cap and it fails.
func TestOverthinkerRescuedByBudget(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	// Tasks whose right answers name no element, so a script played on
	// the wrong screen still plays and the failure is the model's.
	names := []string{"battery-level", "message-read", "note-read", "calc-already"}
	filter := regexp.MustCompile(`^tasks/(` + strings.Join(names, "|") + `)$`)
	dir := t.TempDir()
	filler := strings.Repeat(" But wait, let me reconsider the whole screen once more from the top.", 700)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(scriptsDir, name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		// Spare turns: without a budget every answer is cut off and the
		// loop asks again, so the model is asked more often than the
		// task has steps.
		spare := strings.Repeat("\n--- turn\nHmm."+filler+"</think><tool_call>wait<arg_key>seconds</arg_key><arg_value>1</arg_value></tool_call>", 8)
		write(t, filepath.Join(dir, name+".txt"), strings.ReplaceAll(strings.TrimRight(string(data), "\n"), "</think>", filler+"</think>")+spare+"\n")
	}
	run := func(budget int) *Results {
		return runSuites(t, []*Suite{tasks}, Options{Loop: loop.Config{Think: true, ThinkBudget: budget}, Model: mustScripts(t, dir), Filter: filter, Parallel: 4})
	}
	with := run(256)
	if s := with.Summary.Tasks; s.N != len(names) || s.Success != len(names) {
		t.Errorf("with a budget: %+v %+v", s, with.Tasks)
	}
	without := run(0)
	if s := without.Summary.Tasks; s.N != len(names) || s.Success != 0 {
		t.Errorf("without a budget: %+v %+v", s, without.Tasks)
	}
	for _, r := range with.Tasks {
		if r.GeneratedTokens > 30*256 {
			t.Errorf("%s generated %d tokens with a budget of 256", r.Name, r.GeneratedTokens)
		}
	}
}

// A model that claims success at once succeeds only where the phone was
// already in the asked-for state and no answer is needed: success comes
// from the phone, never from the claim.
func TestClaimAloneIsNotSuccess(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	claim := writeScript(t, "claim", "Looks done to me.</think><tool_call>task_complete<arg_key>summary</arg_key><arg_value>Done</arg_value></tool_call>")
	res := runSuites(t, []*Suite{tasks}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, claim), Parallel: 4})
	want := map[string]bool{"wifi-already-on": true, "airplane-already-off": true, "alarm-already-set": true}
	for _, r := range res.Tasks {
		if r.NotRun || r.Success != want[r.Name] {
			t.Errorf("%s: success %v not run %v (%s), want success %v", r.Name, r.Success, r.NotRun, r.Reason, want[r.Name])
		}
	}
}

// FuzzCases feeds arbitrary cases.jsonl files to the loader: it reports
// broken lines, never panics, and every case it keeps is complete.
func FuzzCases(f *testing.F) {
	f.Add([]byte(`{"name":"ok","screen":"a.xml","task":"Tap OK","accept":[{"name":"tap","arguments":{"index":0}}]}`))
	f.Add([]byte("{\"name\":\"x\"}\n\n{bad\n" + `{"name":"y","screen":"../a.xml","task":"t","accept":[{"name":"tap"}]}`))
	f.Add([]byte(`{"name":"z","screen":"a.xml","task":"t","history":["a","b"],"accept":[{"name":"swipe","arguments":{"direction":"up","index":"3"}}]} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.xml"), tinyScreen)
		write(t, filepath.Join(dir, "cases.jsonl"), string(data))
		s, err := Load(dir)
		if err != nil {
			if !strings.Contains(err.Error(), "no cases") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		for _, c := range s.Cases {
			if c.Name == "" || c.Task == "" || len(c.Accept) == 0 || len(c.Screen) == 0 {
				t.Fatalf("incomplete case kept: %+v", c)
			}
		}
		for _, b := range s.Broken {
			if !strings.Contains(b.Reason, "cases.jsonl:") {
				t.Fatalf("broken entry without file and line: %+v", b)
			}
		}
	})
}

type brokenBackend struct{ panics bool }

func (b brokenBackend) Name() string { return "broken" }
func (b brokenBackend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	if b.panics {
		panic("backend bug")
	}
	return nil, fmt.Errorf("HTTP 500: the server fell over")
}

// A crashing backend makes runs "not run" with the reason, never a model
// failure and never a crash of the benchmark.
func TestCrashingBackendIsNotRun(t *testing.T) {
	tasks, decisions := builtin(t, BuiltinTasks), builtin(t, BuiltinDecisions)
	for _, panics := range []bool{false, true} {
		models := func(context.Context, string, string, string) (model.Backend, func(), error) {
			return brokenBackend{panics}, nil, nil
		}
		res := runSuites(t, []*Suite{tasks, decisions}, Options{Loop: loop.Config{Think: true}, Model: models, Filter: regexp.MustCompile(`^(tasks/wifi|decisions/qs-flashlight)$`)})
		if len(res.Tasks) != 1 || len(res.Decisions) != 1 {
			t.Fatalf("%d tasks, %d decisions", len(res.Tasks), len(res.Decisions))
		}
		want := "the server fell over"
		if panics {
			want = "internal error: backend bug"
		}
		if r := res.Tasks[0]; !r.NotRun || r.Success || !strings.Contains(r.Reason, want) {
			t.Errorf("panics=%v: task %+v", panics, r)
		}
		if d := res.Decisions[0]; !d.NotRun || d.ToolCorrect || !strings.Contains(d.Reason, want) {
			t.Errorf("panics=%v: decision %+v", panics, d)
		}
		if s := res.Summary; s.Tasks.N != 0 || s.Tasks.NotRun != 1 || s.Decisions.N != 0 || s.Decisions.NotRun != 1 {
			t.Errorf("summary %+v", s)
		}
	}
}

// --repeat runs everything K times and counts each run; the filter sees
// SUITE/NAME; progress is told of every run.
func TestRepeatFilterProgress(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	var seen []Progress
	res := runSuites(t, []*Suite{tasks}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, scriptsDir), Repeat: 3, Parallel: 2,
		Filter: regexp.MustCompile(`^tasks/(wifi|dnd)$`), Progress: func(p Progress) { seen = append(seen, p) }})
	if len(res.Tasks) != 6 {
		t.Fatalf("%d runs, want 6", len(res.Tasks))
	}
	reps := map[string][]int{}
	for _, r := range res.Tasks {
		reps[r.Name] = append(reps[r.Name], r.Repeat)
		if !r.Success {
			t.Errorf("%s #%d: %s", r.Name, r.Repeat, r.Reason)
		}
	}
	for _, name := range []string{"wifi", "dnd"} {
		if fmt.Sprint(reps[name]) != "[1 2 3]" {
			t.Errorf("%s repeats %v", name, reps[name])
		}
	}
	if len(seen) != 6 || seen[5].Done != 6 || seen[5].Total != 6 || seen[5].Rate() != 1 {
		t.Errorf("progress %+v", seen)
	}
}

// A model that answers prose is wrong, not broken: a decision without a
// usable call scores neither, and a task whose script runs out fails.
func TestProseAndShortScriptsFail(t *testing.T) {
	tasks, decisions := builtin(t, BuiltinTasks), builtin(t, BuiltinDecisions)
	prose := writeScript(t, "prose", "Hmm.</think>I would tap the switch, I think.")
	res := runSuites(t, []*Suite{tasks, decisions}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, prose),
		Filter: regexp.MustCompile(`^(tasks/wifi|decisions/qs-flashlight|decisions/sim-internet-off)$`)})
	for _, d := range res.Decisions {
		if d.NotRun || d.ToolCorrect || d.Call != nil {
			t.Errorf("decision %+v", d)
		}
	}
	if r := res.Tasks[0]; r.NotRun || r.Success || !strings.Contains(r.Reason, "has no turn") {
		t.Errorf("task %+v", r)
	}
}

// A stopped evaluation returns what it did, the rest reported as not run.
func TestStoppedEvaluationKeepsItsResults(t *testing.T) {
	tasks := builtin(t, BuiltinTasks)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, []*Suite{tasks}, Options{Loop: loop.Config{Think: true, MaxSteps: 20}, Model: mustScripts(t, scriptsDir),
		Progress: func(p Progress) {
			if p.Done == 2 {
				cancel()
			}
		}})
	if err == nil || res == nil {
		t.Fatalf("err %v, results %v", err, res)
	}
	s := res.Summary.Tasks
	if s.N < 2 || s.N+s.NotRun != len(tasks.Tasks) || s.NotRun == 0 {
		t.Errorf("summary %+v of %d tasks", s, len(tasks.Tasks))
	}
	for _, r := range res.Tasks {
		if r.NotRun && !strings.Contains(r.Reason, "stopped") {
			t.Errorf("%s not run: %s", r.Name, r.Reason)
		}
	}
}

func TestCompare(t *testing.T) {
	a := &Results{Model: "a", Tasks: []TaskResult{
		{Suite: "s", Name: "x", Repeat: 1, Success: true},
		{Suite: "s", Name: "y", Repeat: 1, Success: false},
		{Suite: "s", Name: "z", Repeat: 1, NotRun: true},
		{Suite: "s", Name: "only-a", Repeat: 1, Success: true},
	}, Decisions: []DecisionResult{
		{Suite: "d", Name: "p", Repeat: 1, ToolCorrect: true, ActionCorrect: true},
		{Suite: "d", Name: "q", Repeat: 1, ToolCorrect: true},
		{Suite: "d", Name: "r", Repeat: 1, NotRun: true},
	}}
	b := &Results{Model: "b", Tasks: []TaskResult{
		{Suite: "s", Name: "x", Repeat: 1, Success: false},
		{Suite: "s", Name: "y", Repeat: 1, Success: false},
		{Suite: "s", Name: "z", Repeat: 1, Success: true},
	}, Decisions: []DecisionResult{
		{Suite: "d", Name: "p", Repeat: 1},
		{Suite: "d", Name: "q", Repeat: 1, ToolCorrect: true, ActionCorrect: true},
		{Suite: "d", Name: "r", Repeat: 1, ToolCorrect: true, ActionCorrect: true},
		{Suite: "d", Name: "only-b", Repeat: 1, ToolCorrect: true, ActionCorrect: true},
	}}
	a.Summary, b.Summary = Summarize(a), Summarize(b)
	c := Compare(a, b)
	// z is not run in A and only-a is missing in B: neither is paired;
	// the same rule pairs the decisions (r not run in A, only-b missing
	// in A).
	if c.TaskTest != (PairedTest{Paired: 2, OnlyA: 1, OnlyB: 0, P: 1, Significant: false}) {
		t.Errorf("task test %+v", c.TaskTest)
	}
	if c.DecisionTest.Paired != 2 || c.DecisionTest.OnlyA != 1 || c.DecisionTest.OnlyB != 1 || c.DecisionTest.P != 1 {
		t.Errorf("decision test %+v", c.DecisionTest)
	}
	want := map[string][2]string{"x": {"success", "failure"}, "y": {"failure", "failure"}, "z": {"not run", "success"}, "only-a": {"success", ""},
		"p": {"correct", "wrong tool"}, "q": {"wrong action", "correct"}, "r": {"not run", "correct"}, "only-b": {"", "correct"}}
	for _, p := range append(c.Tasks, c.Decisions...) {
		w := want[p.Name]
		if p.A != w[0] || p.B != w[1] || p.Changed != (w[0] != w[1]) {
			t.Errorf("%s: %q -> %q changed %v, want %q -> %q", p.Name, p.A, p.B, p.Changed, w[0], w[1])
		}
	}
	var out strings.Builder
	c.WriteText(&out)
	for _, s := range []string{"s/x: success -> failure", "s/only-a: success -> -", "d/q: wrong action -> correct", "exact McNemar p = 1: could be chance"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, out.String())
		}
	}
}

// A directory laid out like fixtures/ (scenarios/NAME beside apps/) loads
// too.
func TestLoadFixturesLayout(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "scenarios", "wifi2", "scenario.json"), `{"task":"Turn on Wi-Fi","apps":["launcher","settings","settingssearch","clock","chrome"],"state":{"wifi":"false"},"success":{"if":["wifi == true"]}}`)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 1 || s.Tasks[0].Name != "wifi2" || len(s.Broken) != 0 {
		t.Fatalf("tasks %+v broken %+v", s.Tasks, s.Broken)
	}
	res := runSuites(t, []*Suite{s}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, filepath.Join(scriptsDir, "wifi.txt"))})
	if res.Summary.Tasks.Success != 1 {
		t.Errorf("%+v", res.Tasks)
	}
}

// The perturbed phones are a built-in task suite too.
func TestLoadPerturbed(t *testing.T) {
	s, err := Load(BuiltinPerturbed)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) < 8 || len(s.Broken) != 0 || s.Name != BuiltinPerturbed {
		t.Fatalf("%d tasks, broken %v", len(s.Tasks), s.Broken)
	}
	for _, task := range s.Tasks {
		if task.Meta.VariantOf == "" {
			t.Errorf("%s is a variant of nothing", task.Name)
		}
		if _, err := task.Open(); err != nil {
			t.Errorf("%s: %v", task.Name, err)
		}
	}
}

// TestTaskCompleteWithoutSummary: task_complete() is a finished task with
// an empty summary, not a refused call: a decision that wants it is fully
// correct, a task already done succeeds, and a task whose answer must be
// in the summary still fails. A call whose tool is right but whose
// arguments the schema refuses scores the tool, never the action.
func TestTaskCompleteWithoutSummary(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "screens", "a.xml"), tinyScreen)
	write(t, filepath.Join(dir, "cases.jsonl"), strings.Join([]string{
		`{"name":"done","screen":"screens/a.xml","task":"Make sure OK is there","accept":[{"name":"task_complete","arguments":{}}]}`,
		`{"name":"tap-ok","screen":"screens/a.xml","task":"Tap OK","accept":[{"name":"tap","arguments":{"index":0}}]}`,
	}, "\n"))
	decisions, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	scripts := t.TempDir()
	bare := "Nothing to do.</think><tool_call>task_complete</tool_call>\n"
	write(t, filepath.Join(scripts, "done.txt"), "--- turn\n"+bare)
	write(t, filepath.Join(scripts, "tap-ok.txt"), "--- turn\nTap.</think><tool_call>tap</tool_call>\n")
	write(t, filepath.Join(scripts, "airplane-already-off.txt"), "--- turn\n"+bare)
	write(t, filepath.Join(scripts, "calc-already.txt"), "--- turn\n"+bare)
	tasks := builtin(t, BuiltinTasks)
	res := runSuites(t, []*Suite{tasks, decisions}, Options{Loop: loop.Config{Think: true}, Model: mustScripts(t, scripts),
		Filter: regexp.MustCompile(`^(tasks/(airplane-already-off|calc-already)|.*/(done|tap-ok))$`)})
	got := map[string]string{}
	for _, r := range res.Tasks {
		got[r.Name] = fmt.Sprintf("success=%v summary=%q", r.Success, r.Summary)
		if r.Name == "calc-already" && !strings.Contains(r.Reason, "does not contain the answer") {
			t.Errorf("calc-already: %q", r.Reason)
		}
	}
	for _, r := range res.Decisions {
		got[r.Name] = fmt.Sprintf("tool=%v action=%v call=%v refused=%v", r.ToolCorrect, r.ActionCorrect, r.Call != nil, r.Refused != nil)
	}
	want := map[string]string{
		"airplane-already-off": `success=true summary=""`,
		"calc-already":         `success=false summary=""`,
		"done":                 "tool=true action=true call=true refused=false",
		"tap-ok":               "tool=true action=false call=false refused=true",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}
