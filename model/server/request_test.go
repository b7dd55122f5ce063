package server

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model"
)

func testServer(t testing.TB) *Server {
	s, err := New(Config{Backend: &fakeBackend{}, Constrain: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPromptAsTemplateRenders: the prompt of a request is the official
// template's rendering (by Python's jinja2) of its messages and tools, for
// every reference case of model/chat that a server can receive.
func TestPromptAsTemplateRenders(t *testing.T) {
	t.Parallel()
	var cases []map[string]json.RawMessage
	var renders map[string]struct {
		Text  *string `json:"text"`
		Error string  `json:"error"`
	}
	for f, v := range map[string]any{"cases.json": &cases, "renders.json": &renders} {
		data, err := os.ReadFile("../chat/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	s := testServer(t)
	tried := 0
	for _, c := range cases {
		var name string
		json.Unmarshal(c["name"], &name)
		want := renders[name]
		tools := c["tools"]
		if string(tools) == `"droidgo"` {
			raw, err := os.ReadFile("../chat/testdata/droidgo-tools.json")
			if err != nil {
				t.Fatal(err)
			}
			tools = raw
		}
		if want.Text == nil || string(c["add_generation_prompt"]) == "false" || len(c["messages"]) == 0 {
			continue
		}
		body := `{"messages": ` + string(c["messages"])
		if len(tools) > 0 {
			body += `, "tools": ` + string(tools)
		}
		if string(c["enable_thinking"]) == "false" {
			body += `, "chat_template_kwargs": {"enable_thinking": false}`
		}
		req, err := s.parseRequest([]byte(body + "}"))
		if err != nil {
			// A case the template renders but a server refuses (e.g. a
			// tool that is not a function) is fine; say which.
			t.Logf("%s: refused: %v", name, err)
			continue
		}
		tried++
		if req.chat.Prompt != *want.Text {
			t.Errorf("%s:\n got  %q\n want %q", name, req.chat.Prompt, *want.Text)
		}
	}
	if tried < 10 {
		t.Errorf("only %d reference cases compared", tried)
	}
}

func TestDeepJSON(t *testing.T) {
	t.Parallel()
	s := testServer(t)
	body := `{"messages":` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "}"
	if _, err := s.parseRequest([]byte(body)); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("err %v", err)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"tap","arguments":"{\"index\":3}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"}],"tools":[{"type":"function","function":{"name":"tap","parameters":{"type":"object","properties":{"index":{"type":"integer","minimum":0}},"required":["index"]}}}],"tool_choice":"required","stream":true,"stop":["x"],"seed":-1,"max_tokens":5}`)
	f.Add(`{"messages":[{"role":"developer","content":"d"},{"role":"user","content":"u","reasoning":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"b":{"type":["boolean","null"]},"e":{"type":"string","enum":["a",1]}}}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`)
	s := testServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := s.parseRequest([]byte(body))
		if err != nil {
			if _, ok := err.(*badRequest); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if req.chat.Prompt == "" || len(req.chat.Messages) == 0 || req.chat.MaxTokens < 1 {
			t.Fatalf("accepted request %+v", req.chat)
		}
		if req.chat.Prefix != "" && !strings.HasPrefix(req.chat.Prompt, req.chat.Prefix) {
			t.Fatalf("prefix %q is not the start of %q", req.chat.Prefix, req.chat.Prompt)
		}
		for _, tl := range req.tools {
			if tl.action.Name == "" {
				t.Fatal("tool without a name")
			}
		}
		_ = model.RoleUser
	})
}
