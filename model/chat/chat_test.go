package chat

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
)

var update = flag.Bool("update", false, "rewrite testdata/droidgo-tools.json and testdata/go-cases.json (then run testdata/gen_renders.py)")

type render struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
}

func loadRenders(t *testing.T) map[string]render {
	t.Helper()
	data, err := os.ReadFile("testdata/renders.json")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]render
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func readValue(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestTemplateCases renders the JSON cases and compares them byte for byte
// with jinja2's renders of the official template.
func TestTemplateCases(t *testing.T) {
	renders := loadRenders(t)
	droidgoTools := readValue(t, "testdata/droidgo-tools.json").([]any)
	cases := readValue(t, "testdata/cases.json").([]any)
	for _, c := range cases {
		c := c.(Object)
		nameV, _ := c.Get("name")
		name := nameV.(string)
		t.Run(name, func(t *testing.T) {
			want, ok := renders[name]
			if !ok {
				t.Fatalf("no reference render (run testdata/gen_renders.py)")
			}
			msgsV, _ := c.Get("messages")
			msgs := msgsV.([]any)
			var tools []any
			if tv, ok := c.Get("tools"); ok {
				if tv == "droidgo" {
					tools = droidgoTools
				} else {
					tools = tv.([]any)
				}
			}
			opts := Options{Thinking: true, AddGenerationPrompt: true}
			if v, ok := c.Get("enable_thinking"); ok {
				opts.Thinking = v.(bool)
			}
			if v, ok := c.Get("add_generation_prompt"); ok {
				opts.AddGenerationPrompt = v.(bool)
			}
			got, err := func() (string, error) {
				if err := NormalizeArguments(msgs); err != nil {
					return "", err
				}
				return RenderValues(msgs, tools, opts)
			}()
			checkRender(t, got, err, want)
		})
	}
}

func checkRender(t *testing.T, got string, err error, want render) {
	t.Helper()
	if want.Text == nil {
		if err == nil {
			t.Fatalf("rendered %q, want an error like jinja2's %q", got, want.Error)
		}
		return
	}
	if err != nil {
		t.Fatalf("error %v, want the render %q", err, *want.Text)
	}
	if got != *want.Text {
		i := 0
		for i < len(got) && i < len(*want.Text) && got[i] == (*want.Text)[i] {
			i++
		}
		t.Fatalf("render differs at byte %d:\n got  %q\n want %q", i, got[i:], (*want.Text)[i:])
	}
}

// testTools are fixed here, not taken from action.Tools, so that these
// cases do not change when the action space does.
var testTools = []action.Tool{
	{Name: "tap", Description: "Tap an element.", Params: []action.Param{{Name: "index", Type: action.Integer, Description: "element index", Required: true, Min: ptr(0)}}},
	{Name: "type_text", Description: "Type text.", Params: []action.Param{
		{Name: "text", Type: action.String, Description: "the text", Required: true},
		{Name: "index", Type: action.Integer, Description: "field index", Min: ptr(0)}}},
	{Name: "swipe", Description: "Swipe.", Params: []action.Param{{Name: "direction", Type: action.String, Description: "direction", Required: true, Enum: []string{"up", "down"}}}},
	{Name: "wait", Description: "Wait.", Params: []action.Param{{Name: "seconds", Type: action.Number, Description: "seconds", Required: true, Min: ptr(0), Max: ptr(30)}}},
}

func ptr(f float64) *float64 { return &f }

type goCase struct {
	name  string
	msgs  []model.Message
	tools []action.Tool
	opts  Options
}

var goCases = []goCase{
	{"go_agent_step", []model.Message{
		{Role: model.RoleSystem, Content: "Screen:\n[0] Clock\n[1] Settings"},
		{Role: model.RoleUser, Content: "Set an alarm for 7:30"},
		{Role: model.RoleAssistant, Reasoning: "Open the clock first.", ToolCalls: []action.Call{{Name: "tap", Arguments: map[string]any{"index": int64(0)}}}},
		{Role: model.RoleTool, Content: "ok: tapped [0] Clock"},
		{Role: model.RoleUser, Content: "Screen:\n[0] Alarm"},
	}, testTools, Options{Thinking: true, AddGenerationPrompt: true}},
	{"go_argument_order", []model.Message{
		{Role: model.RoleUser, Content: "type"},
		{Role: model.RoleAssistant, Content: "", ToolCalls: []action.Call{
			{Name: "type_text", Arguments: map[string]any{"index": int64(2), "text": "héllo \"w\"", "zzz": true, "aaa": nil}},
			{Name: "wait", Arguments: map[string]any{"seconds": 2.0}},
			{Name: "wait", Arguments: map[string]any{"seconds": 1.5}},
			{Name: "unknown", Arguments: map[string]any{"b": []any{1, "x"}, "a": map[string]any{"y": 1, "x": 2}}},
		}},
		{Role: model.RoleTool, Content: "typed"},
		{Role: model.RoleTool, Content: "waited"},
	}, testTools, Options{Thinking: false, AddGenerationPrompt: true}},
	{"go_no_tools", []model.Message{{Role: model.RoleUser, Content: "hi"}}, nil, Options{Thinking: true, AddGenerationPrompt: true}},
}

// TestRender checks the Go-typed entry point on droidgo's message and tool
// types against jinja2's renders of the same conversations.
func TestRender(t *testing.T) {
	if *update {
		writeGoCases(t)
	}
	renders := loadRenders(t)
	for _, c := range goCases {
		t.Run(c.name, func(t *testing.T) {
			want, ok := renders[c.name]
			if !ok {
				t.Fatalf("no reference render (run go test -update, then testdata/gen_renders.py)")
			}
			got, err := Render(c.msgs, c.tools, c.opts)
			checkRender(t, got, err, want)
		})
	}
}

func writeGoCases(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i, c := range goCases {
		msgs := make([]any, len(c.msgs))
		for j, m := range c.msgs {
			v, err := MessageValue(m, c.tools)
			if err != nil {
				t.Fatal(err)
			}
			msgs[j] = v
		}
		tools := make([]any, len(c.tools))
		for j, tl := range c.tools {
			tools[j] = ToolValue(tl)
		}
		obj := Object{{"name", c.name}, {"messages", msgs}, {"tools", tools},
			{"enable_thinking", c.opts.Thinking}, {"add_generation_prompt", c.opts.AddGenerationPrompt}}
		j, err := toJSON(obj)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(j)
	}
	b.WriteString("\n]\n")
	if err := os.WriteFile("testdata/go-cases.json", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDroidgoToolsGolden keeps testdata/droidgo-tools.json (the tools the
// reference renders use) equal to droidgo's action space.
func TestDroidgoToolsGolden(t *testing.T) {
	tools := make([]any, len(action.Tools))
	for i, tl := range action.Tools {
		tools[i] = ToolValue(tl)
	}
	got, err := toJSON(tools)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "droidgo-tools.json")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got+"\n" != string(want) {
		t.Errorf("action.Tools changed: run go test ./model/chat -update, then python3 model/chat/testdata/gen_renders.py")
	}
}

func TestIsOfficial(t *testing.T) {
	if !IsOfficial(OfficialTemplate) || !IsOfficial("\n"+strings.ReplaceAll(OfficialTemplate, "\n", "\r\n")+"  \n") {
		t.Error("the official template is not recognised")
	}
	if IsOfficial(strings.Replace(OfficialTemplate, "helpful", "harmless", 1)) {
		t.Error("a modified template is recognised as official")
	}
}

func TestPyFloat(t *testing.T) {
	tenth := 0.1 // a variable, so that 0.1 + 0.2 is not folded exactly
	for _, tc := range []struct {
		f    float64
		want string
	}{{1, "1.0"}, {0.5, "0.5"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {1e-4, "0.0001"}, {1e-5, "1e-05"},
		{1.5e20, "1.5e+20"}, {math.Copysign(0, -1), "-0.0"}, {123456789.123, "123456789.123"}, {tenth + 0.2, "0.30000000000000004"}} {
		if got := pyFloat(tc.f, "Infinity", "NaN"); got != tc.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": [1.5, "x", null, true]}`, `[]`, `{"a":1,"a":2}`, `1e400`, `"\ud800"`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseJSON([]byte(s))
		if err != nil {
			return
		}
		out, err := toJSON(v)
		if err != nil {
			t.Fatalf("toJSON: %v", err)
		}
		// Python's output is JSON (or Infinity); Go must read it back
		// unless it holds an infinity.
		if !strings.Contains(out, "Infinity") && !json.Valid([]byte(out)) {
			t.Fatalf("toJSON(%q) = %q is not JSON", s, out)
		}
		_, _ = pyStr(v)
		_ = truthy(v)
	})
}
