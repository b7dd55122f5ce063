package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/gguf"
)

const chatTestdata = "../../model/chat/testdata/"

// writeTemplateGGUF writes a metadata-only GGUF carrying tmpl.
func writeTemplateGGUF(t *testing.T, tmpl string) string {
	t.Helper()
	w := gguf.NewWriter()
	w.Set("general.architecture", "spark2_5")
	w.Set("tokenizer.chat_template", tmpl)
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// promptCases returns the chat package's reference cases by name, with the
// references rendered by jinja2.
func promptCases(t *testing.T) (cases map[string]map[string]json.RawMessage, renders map[string]struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
}) {
	t.Helper()
	var list []map[string]json.RawMessage
	for _, f := range []string{"cases.json", "renders.json"} {
		data, err := os.ReadFile(chatTestdata + f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "cases.json" {
			err = json.Unmarshal(data, &list)
		} else {
			err = json.Unmarshal(data, &renders)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cases = map[string]map[string]json.RawMessage{}
	for _, c := range list {
		var name string
		_ = json.Unmarshal(c["name"], &name)
		cases[name] = c
	}
	return cases, renders
}

func TestModelPrompt(t *testing.T) {
	t.Parallel()
	cases, renders := promptCases(t)
	model := writeTemplateGGUF(t, chat.OfficialTemplate)
	dir := t.TempDir()
	for _, name := range []string{"reasoning_and_calls", "string_args", "nonascii_everywhere", "user_only_no_think", "custom_tool_nonascii", "consecutive_tools"} {
		t.Run(name, func(t *testing.T) {
			c := cases[name]
			msgs := filepath.Join(dir, name+".json")
			if err := os.WriteFile(msgs, c["messages"], 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"model", "prompt", model, "--messages", msgs}
			if tools, ok := c["tools"]; ok {
				p := filepath.Join(dir, name+"-tools.json")
				if string(tools) == `"droidgo"` {
					p = chatTestdata + "droidgo-tools.json"
				} else if err := os.WriteFile(p, tools, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--tools", p)
			}
			if string(c["enable_thinking"]) == "false" {
				args = append(args, "--no-think")
			}
			code, out, errs := runDroidgo(t, "", args...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if want := *renders[name].Text; out != want {
				t.Errorf("prompt differs:\n got  %q\n want %q", out, want)
			}
		})
	}
}

func TestModelPromptRequestShapeAndStdin(t *testing.T) {
	t.Parallel()
	cases, renders := promptCases(t)
	model := writeTemplateGGUF(t, chat.OfficialTemplate)
	c := cases["custom_tool_nonascii"]
	body := `{"model": "x", "messages": ` + string(c["messages"]) + `, "tools": ` + string(c["tools"]) + `}`
	code, out, errs := runDroidgo(t, body, "model", "prompt", model, "--messages", "-")
	if code != 0 || out != *renders["custom_tool_nonascii"].Text {
		t.Errorf("exit %d, stderr %q, output %q", code, errs, out)
	}
}

func TestModelPromptTemplateSources(t *testing.T) {
	t.Parallel()
	msgs := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(msgs, []byte(`[{"role": "user", "content": "hi"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "<｜start▁of▁sentence｜><|System|>\nyou are a helpful assistant.<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|User|>hi<｜end▁of▁sentence｜><｜start▁of▁sentence｜><|Bot|><think>"

	hf := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"chat_template": chat.OfficialTemplate})
	if err := os.WriteFile(filepath.Join(hf, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, model, warn string
	}{
		{"gguf official", writeTemplateGGUF(t, chat.OfficialTemplate), ""},
		{"gguf other", writeTemplateGGUF(t, "{{ messages }}"), "differs"},
		{"hf official", hf, ""},
		{"hf without template", t.TempDir(), "no chat template"},
	} {
		code, out, errs := runDroidgo(t, "", "model", "prompt", tc.model, "--messages", msgs)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d, output %q", tc.name, code, out)
		}
		if (tc.warn == "") != (errs == "") || !strings.Contains(errs, tc.warn) {
			t.Errorf("%s: stderr %q, want a warning containing %q", tc.name, errs, tc.warn)
		}
	}
}

func TestModelPromptErrors(t *testing.T) {
	t.Parallel()
	model := writeTemplateGGUF(t, chat.OfficialTemplate)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"model", "prompt", model}, 2},
		{[]string{"model", "prompt", "--messages", "x.json"}, 2},
		{[]string{"model", "prompt", model, "--messages", write("bad.json", "[{")}, 1},
		{[]string{"model", "prompt", model, "--messages", write("empty.json", "[]")}, 1},
		{[]string{"model", "prompt", model, "--messages", write("role.json", `[{"role": "robot"}]`)}, 1},
		{[]string{"model", "prompt", model, "--messages", write("args.json", `[{"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": "not json"}}]}]`)}, 1},
		{[]string{"model", "prompt", model, "--messages", write("ok.json", `[{"role": "user", "content": "x"}]`), "--tools", write("tools.json", `[{"type": "function"}]`)}, 1},
		{[]string{"model", "prompt", model, "--messages", filepath.Join(dir, "missing.json")}, 1},
		{[]string{"model", "prompt", filepath.Join(dir, "missing.gguf"), "--messages", write("ok2.json", `[]`)}, 1},
	} {
		code, out, errs := runDroidgo(t, "", tc.args...)
		if code != tc.code || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "droidgo: ") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q", tc.args[2:], code, tc.code, out, errs)
		}
	}
}
