package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
)

// wireRequest is the part of a chat-completion request read by type; the
// messages and tools are read again keeping their key order (chat.ParseJSON).
type wireRequest struct {
	Model         string          `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int64          `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	Seed                *json.Number    `json:"seed"`
	N                   *int64          `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	Logprobs            bool            `json:"logprobs"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
}

// request is a checked chat-completion request.
type request struct {
	stream       bool
	includeUsage bool
	// chat is what the backend gets: the rendered prompt and its prefix,
	// and the same conversation as messages for backends that render
	// nothing (model/script).
	chat model.ChatRequest
	// tools are the offered tools as droidgo reads them; parse says
	// whether the answer is parsed for calls (tools offered and
	// tool_choice not "none").
	tools []tool
	parse bool
	stops []string
}

// badRequest is a request refused: the client's to fix (400 unless
// status says otherwise).
type badRequest struct {
	status int
	code   string
	msg    string
}

func (e *badRequest) Error() string { return e.msg }

func (e *badRequest) statusOr(def int) int {
	if e.status != 0 {
		return e.status
	}
	return def
}

func bad(format string, args ...any) error {
	return &badRequest{code: "invalid_request", msg: fmt.Sprintf(format, args...)}
}

// Bounds of a request beyond its size.
const (
	maxTools = 128
	maxStops = 4
	maxStop  = 256
)

// parseRequest checks and reads a request body.
func (s *Server) parseRequest(body []byte) (*request, error) {
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, bad("the request body is not a JSON chat-completion request: %v", err)
	}
	if dec.More() {
		return nil, bad("the request body has data after its JSON object")
	}
	if w.Model != "" && w.Model != s.cfg.ModelID {
		return nil, &badRequest{status: http.StatusNotFound, code: "model_not_found", msg: fmt.Sprintf("the model %q is not served here; this server serves %q", w.Model, s.cfg.ModelID)}
	}
	req := &request{stream: w.Stream, includeUsage: w.StreamOptions != nil && w.StreamOptions.IncludeUsage}

	switch {
	case w.N != nil && *w.N != 1:
		return nil, bad("n is %d; this server generates one choice per request", *w.N)
	case w.Logprobs:
		return nil, bad("logprobs are not supported by this server")
	case w.ResponseFormat != nil && w.ResponseFormat.Type != "" && w.ResponseFormat.Type != "text":
		return nil, bad("response_format %q is not supported; the answer constraint applies to tool calls (offer tools)", w.ResponseFormat.Type)
	case w.PresencePenalty != nil && *w.PresencePenalty != 0, w.FrequencyPenalty != nil && *w.FrequencyPenalty != 0:
		return nil, bad("presence_penalty and frequency_penalty are not supported by this server (send 0 or leave them out)")
	}

	// Sampling: the request's values, else the server's defaults.
	sm := s.cfg.Sampling
	sm.Seed = 0
	if w.Temperature != nil {
		if t := *w.Temperature; t < 0 || t > 2 {
			return nil, bad("temperature %g is outside 0..2", t)
		}
		sm.Temperature = *w.Temperature
	}
	if w.TopP != nil {
		if p := *w.TopP; p <= 0 || p > 1 {
			return nil, bad("top_p %g is outside (0, 1]", p)
		}
		sm.TopP = *w.TopP
	}
	if w.TopK != nil {
		if k := *w.TopK; k < -1 || k > 1<<20 {
			return nil, bad("top_k %d is out of range", k)
		}
		sm.TopK = int(max(0, *w.TopK)) // -1 is vLLM's "off"
	}
	if w.MinP != nil {
		if p := *w.MinP; p < 0 || p > 1 {
			return nil, bad("min_p %g is outside 0..1", p)
		}
		sm.MinP = *w.MinP
	}
	if w.Seed != nil {
		seed, err := parseSeed(*w.Seed)
		if err != nil {
			return nil, err
		}
		sm.Seed = seed
	} else {
		sm.Seed = rand.Uint64()
	}
	req.chat.Sampling = sm

	maxTok := w.MaxTokens
	if w.MaxCompletionTokens != nil {
		maxTok = w.MaxCompletionTokens
	}
	req.chat.MaxTokens = s.cfg.MaxTokens
	if maxTok != nil {
		switch n := *maxTok; {
		case n < 1:
			return nil, bad("max_tokens must be at least 1, not %d", n)
		case n > int64(s.cfg.MaxTokens):
			return nil, &badRequest{code: "max_tokens_too_large", msg: fmt.Sprintf("max_tokens %d is more than this server allows (%d; droidgo serve --max-tokens)", n, s.cfg.MaxTokens)}
		default:
			req.chat.MaxTokens = int(n)
		}
	}

	stops, err := parseStops(w.Stop)
	if err != nil {
		return nil, err
	}
	req.stops = stops

	req.chat.Think = true // the template's default
	if raw, ok := w.ChatTemplateKwargs["enable_thinking"]; ok {
		if err := json.Unmarshal(raw, &req.chat.Think); err != nil {
			return nil, bad("chat_template_kwargs.enable_thinking must be true or false")
		}
	}

	msgs, err := parseMessages(w.Messages)
	if err != nil {
		return nil, err
	}
	toolVals, tools, err := parseTools(w.Tools)
	if err != nil {
		return nil, err
	}
	req.tools = tools
	choice, err := parseToolChoice(w.ToolChoice, tools)
	if err != nil {
		return nil, err
	}
	all := make([]action.Tool, len(tools))
	for i, t := range tools {
		all[i] = t.action
	}
	req.chat.Tools = all
	switch {
	case len(tools) == 0 || choice.none:
		req.chat.Tools = nil
	case choice.name != "":
		t, _ := action.Lookup(all, choice.name)
		req.chat.Tools = []action.Tool{t}
		req.chat.Constrain = true
		req.parse = true
	default:
		req.chat.Constrain = s.cfg.Constrain || choice.required
		req.parse = true
	}

	// The prompt, exactly as the template renders what was sent.
	opts := chat.Options{Thinking: req.chat.Think, AddGenerationPrompt: true}
	prompt, err := chat.RenderValues(msgs, toolVals, opts)
	if err != nil {
		return nil, bad("%v", err)
	}
	req.chat.Prompt = prompt
	n := 0
	for n < len(msgs) && role(msgs[n]) == model.RoleSystem {
		n++
	}
	if n > 0 && n < len(msgs) {
		if pre, err := chat.RenderValues(msgs[:n], toolVals, chat.Options{Thinking: req.chat.Think}); err == nil {
			req.chat.Prefix = pre
		}
	}
	if req.chat.Messages, err = messagesOf(msgs); err != nil {
		return nil, err
	}
	return req, nil
}

func parseSeed(n json.Number) (uint64, error) {
	if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
		return u, nil
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return uint64(i), nil
	}
	return 0, bad("seed %s is not a 64-bit integer", n)
}

func parseStops(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		raw, _ = json.Marshal([]string{one})
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, bad("stop must be a string or a list of strings")
	}
	if len(list) > maxStops {
		return nil, bad("stop has %d strings; at most %d are allowed", len(list), maxStops)
	}
	var out []string
	for _, s := range list {
		if len(s) > maxStop {
			return nil, bad("a stop string is longer than %d bytes", maxStop)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// parseMessages reads the messages keeping key order, in the shape the
// template takes: roles checked, "developer" read as "system", a
// "reasoning" field as reasoning_content, call arguments sent as JSON
// strings turned into objects.
func parseMessages(raw json.RawMessage) ([]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, bad("messages is missing")
	}
	v, err := chat.ParseJSON(raw)
	if err != nil {
		return nil, bad("messages: %v", err)
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, bad("messages must be a non-empty list")
	}
	for i, m := range list {
		o, ok := m.(chat.Object)
		if !ok {
			return nil, bad("message %d is not a JSON object", i)
		}
		r, _ := o.Get("role")
		rs, _ := r.(string)
		switch rs {
		case "developer":
			o = setKey(o, "role", model.RoleSystem)
		case model.RoleSystem, model.RoleUser, model.RoleAssistant, model.RoleTool:
		default:
			return nil, bad("message %d has role %s; the roles are system, developer, user, assistant and tool", i, quoteAny(r))
		}
		if _, ok := o.Get("reasoning_content"); !ok {
			if rv, ok := o.Get("reasoning"); ok {
				o = append(o, chat.Member{Key: "reasoning_content", Value: rv})
			}
		}
		list[i] = o
	}
	if err := chat.NormalizeArguments(list); err != nil {
		return nil, bad("%v", err)
	}
	return list, nil
}

func role(m any) string {
	o, _ := m.(chat.Object)
	r, _ := o.Get("role")
	s, _ := r.(string)
	return s
}

func setKey(o chat.Object, key string, v any) chat.Object {
	out := slices.Clone(o)
	for i := range out {
		if out[i].Key == key {
			out[i].Value = v
		}
	}
	return out
}

func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// messagesOf converts template-shaped messages to droidgo's own, for
// backends that read Messages rather than the rendered prompt.
func messagesOf(list []any) ([]model.Message, error) {
	out := make([]model.Message, len(list))
	for i, m := range list {
		o := m.(chat.Object)
		msg := model.Message{Role: role(o)}
		c, _ := o.Get("content")
		text, err := contentText(c)
		if err != nil && msg.Role == model.RoleTool {
			// The template prints any value a tool returned.
			b, _ := json.Marshal(plain(c))
			text, err = string(b), nil
		}
		if err != nil {
			return nil, bad("message %d: %v", i, err)
		}
		msg.Content = text
		if r, ok := o.Get("reasoning_content"); ok {
			msg.Reasoning, _ = r.(string)
		}
		calls, _ := o.Get("tool_calls")
		list, _ := calls.([]any)
		for _, c := range list {
			co, _ := c.(chat.Object)
			fv, _ := co.Get("function")
			fn, _ := fv.(chat.Object)
			name, _ := fn.Get("name")
			ns, _ := name.(string)
			av, _ := fn.Get("arguments")
			args, _ := plain(av).(map[string]any)
			msg.ToolCalls = append(msg.ToolCalls, action.Call{Name: ns, Arguments: args})
		}
		out[i] = msg
	}
	return out, nil
}

// contentText flattens a message's content: a string, nothing, or a list
// of text parts. Other parts (images) the model cannot read.
func contentText(c any) (string, error) {
	switch x := c.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []any:
		var b strings.Builder
		for _, p := range x {
			o, _ := p.(chat.Object)
			typ, _ := o.Get("type")
			if typ != "text" {
				return "", fmt.Errorf("content part of type %s: this model reads text only", quoteAny(typ))
			}
			t, _ := o.Get("text")
			ts, _ := t.(string)
			b.WriteString(ts)
		}
		return b.String(), nil
	}
	return "", errors.New("content must be a string or a list of text parts")
}

// plain turns a template value into plain Go values: maps, int64 or
// float64 numbers.
func plain(v any) any {
	switch x := v.(type) {
	case chat.Object:
		m := make(map[string]any, len(x))
		for _, e := range x {
			m[e.Key] = plain(e.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// toolChoice is a request's tool_choice.
type toolChoice struct {
	none, required bool
	name           string
}

func parseToolChoice(raw json.RawMessage, tools []tool) (toolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return toolChoice{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			return toolChoice{}, nil
		case "none":
			return toolChoice{none: true}, nil
		case "required":
			if len(tools) == 0 {
				return toolChoice{}, bad("tool_choice is \"required\" but no tools are offered")
			}
			return toolChoice{required: true}, nil
		}
		return toolChoice{}, bad("tool_choice %q is not auto, none, required or a function", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return toolChoice{}, bad(`tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": NAME}}`)
	}
	for _, t := range tools {
		if t.action.Name == named.Function.Name {
			return toolChoice{name: t.action.Name}, nil
		}
	}
	return toolChoice{}, bad("tool_choice names %q, which is not among the offered tools", named.Function.Name)
}

// validName is OpenAI's rule for function names; it also keeps a name
// from breaking Spark's call tags.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// validKey accepts a parameter name that fits between Spark's tags.
func validKey(s string) bool {
	if s == "" || len(s) > 128 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '<' || r == '>' {
			return false
		}
	}
	return true
}
