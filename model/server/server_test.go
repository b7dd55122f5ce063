package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
)

// fakeBackend plays fixed deltas for every request and records the
// requests. With hold set, Next blocks until hold is closed or the
// request's context ends (which it records).
type fakeBackend struct {
	deltas []model.Delta
	stats  model.Stats
	hold   chan struct{}
	err    error // returned by Chat

	mu        sync.Mutex
	reqs      []model.ChatRequest
	cancelled int
	started   chan struct{} // receives once per Chat, when set
}

func (f *fakeBackend) Name() string { return "fake:test-model" }

func (f *fakeBackend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.err != nil {
		return nil, f.err
	}
	return &fakeStream{f: f, ctx: ctx, deltas: f.deltas}, nil
}

func (f *fakeBackend) requests() []model.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]model.ChatRequest(nil), f.reqs...)
}

type fakeStream struct {
	f      *fakeBackend
	ctx    context.Context
	deltas []model.Delta
	n      int
}

func (s *fakeStream) Next() (model.Delta, error) {
	if s.f.hold != nil && s.n == 1 {
		select {
		case <-s.f.hold:
		case <-s.ctx.Done():
			s.f.mu.Lock()
			s.f.cancelled++
			s.f.mu.Unlock()
			return model.Delta{}, s.ctx.Err()
		}
	}
	if s.n >= len(s.deltas) {
		return model.Delta{}, io.EOF
	}
	s.n++
	return s.deltas[s.n-1], nil
}

func (s *fakeStream) CloseReasoning() error { return model.ErrUnsupported }
func (s *fakeStream) Close() error          { return nil }
func (s *fakeStream) Stats() model.Stats {
	st := s.f.stats
	st.GeneratedTokens = s.n
	return st
}

var tapTurn = []model.Delta{
	{Reasoning: "The switch "}, {Reasoning: "is off."}, {ReasoningClosed: true},
	{Content: "<tool_call>tap<arg_key>index</arg_key>"}, {Content: "<arg_value>3</arg_value></tool_call>"},
}

// start serves cfg on 127.0.0.1 and returns its base URL and log lines.
func start(t *testing.T, cfg Config) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	cfg.Log = func(l string) {
		mu.Lock()
		lines = append(lines, l)
		mu.Unlock()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// droidgoTools are droidgo's tools as model/openai sends them.
func droidgoTools() []any {
	out := make([]any, len(action.Tools))
	for i, t := range action.Tools {
		out[i] = chat.ToolValue(t)
	}
	return out
}

func post(t *testing.T, url, key string, body any) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", rd)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads an SSE body: the data of each event, and whether [DONE]
// ended it.
func events(t *testing.T, body io.Reader) (chunks []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		chunks = append(chunks, m)
	}
	return chunks, done
}

func wifiMessages() []any {
	return []any{
		map[string]any{"role": "system", "content": "You operate a phone."},
		map[string]any{"role": "user", "content": "Task: Turn on Wi-Fi\n\nCurrent screen:\n[3] switch Wi-Fi (off)"},
	}
}

func TestStreamedToolCall(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn, stats: model.Stats{PromptTokens: 120, CachedTokens: 100, ThinkTokens: 2}}
	url, logs := start(t, Config{Backend: fb, Constrain: true})
	resp := post(t, url, "", map[string]any{
		"model": "test-model", "messages": wifiMessages(), "tools": droidgoTools(),
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	chunks, done := events(t, resp.Body)
	if !done {
		t.Error("no [DONE]")
	}
	var reasoning, content strings.Builder
	var calls []any
	var finish any
	var usage map[string]any
	for _, c := range chunks {
		if c["object"] != "chat.completion.chunk" || c["model"] != "test-model" {
			t.Errorf("chunk %v", c)
		}
		if u, ok := c["usage"].(map[string]any); ok {
			usage = u
		}
		for _, ch := range c["choices"].([]any) {
			ch := ch.(map[string]any)
			d := ch["delta"].(map[string]any)
			if s, ok := d["reasoning_content"].(string); ok {
				reasoning.WriteString(s)
			}
			if s, ok := d["content"].(string); ok {
				content.WriteString(s)
			}
			if tc, ok := d["tool_calls"].([]any); ok {
				calls = append(calls, tc...)
			}
			if ch["finish_reason"] != nil {
				finish = ch["finish_reason"]
			}
		}
	}
	if reasoning.String() != "The switch is off." || content.String() != "" {
		t.Errorf("reasoning %q, content %q", reasoning.String(), content.String())
	}
	if len(calls) != 1 {
		t.Fatalf("calls %v", calls)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "tap" || fn["arguments"] != `{"index":3}` || calls[0].(map[string]any)["index"] != 0.0 {
		t.Errorf("call %v", calls[0])
	}
	if finish != "tool_calls" {
		t.Errorf("finish %v", finish)
	}
	if usage == nil || usage["prompt_tokens"] != 120.0 || usage["completion_tokens"] != 5.0 || usage["total_tokens"] != 125.0 ||
		usage["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 100.0 ||
		usage["completion_tokens_details"].(map[string]any)["reasoning_tokens"] != 2.0 {
		t.Errorf("usage %v", usage)
	}
	// The backend got the prompt droidgo's in-process engine renders for
	// the same conversation, its shared prefix, and the constraint.
	reqs := fb.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	msgs := []model.Message{{Role: "system", Content: "You operate a phone."}, {Role: "user", Content: "Task: Turn on Wi-Fi\n\nCurrent screen:\n[3] switch Wi-Fi (off)"}}
	want, err := chat.Render(msgs, action.Tools, chat.Options{Thinking: true, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Prompt != want {
		t.Errorf("prompt\n got  %q\n want %q", r.Prompt, want)
	}
	pre, _ := chat.Render(msgs[:1], action.Tools, chat.Options{Thinking: true})
	if r.Prefix != pre || !strings.HasPrefix(r.Prompt, r.Prefix) {
		t.Errorf("prefix %q", r.Prefix)
	}
	if !r.Constrain || !r.Think || len(r.Tools) != len(action.Tools) || r.MaxTokens != DefaultMaxTokens || len(r.Messages) != 2 {
		t.Errorf("request %+v", r)
	}
	waitLog(t, logs, "POST /v1/chat/completions 200", "stream prompt=120 cached=100 completion=5 reasoning=2 finish=tool_calls")
}

// waitLog waits for a log line holding all parts (the line is written
// after the handler returns, which may be after the client read the end).
func waitLog(t *testing.T, logs func() []string, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, l := range logs() {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", parts, strings.Join(logs(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWholeAnswer(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: []model.Delta{{Reasoning: "hmm"}, {ReasoningClosed: true}, {Content: "Hello "}, {Content: "there. STOP and more"}}}
	url, _ := start(t, Config{Backend: fb})
	resp := post(t, url, "", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stop": "STOP", "max_tokens": 50, "temperature": 0.2, "seed": 7})
	defer resp.Body.Close()
	var a struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				Reasoning string  `json:"reasoning_content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	m := a.Choices[0].Message
	if a.Object != "chat.completion" || m.Role != "assistant" || m.Content == nil || *m.Content != "Hello there. " || m.Reasoning != "hmm" || a.Choices[0].FinishReason != "stop" || a.Usage.CompletionTokens != 4 {
		t.Errorf("answer %+v", a)
	}
	r := fb.requests()[0]
	if r.MaxTokens != 50 || r.Sampling.Temperature != 0.2 || r.Sampling.Seed != 7 || r.Constrain || len(r.Tools) != 0 {
		t.Errorf("request %+v", r)
	}
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: []model.Delta{{Content: "Sure: <tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>"}}}
	url, _ := start(t, Config{Backend: fb, Constrain: false})
	for _, tc := range []struct {
		choice              any
		constrain, calls    bool
		tools               int
		wantContent, finish string
	}{
		{nil, false, true, 8, "Sure:", "tool_calls"},
		{"auto", false, true, 8, "Sure:", "tool_calls"},
		{"required", true, true, 8, "Sure:", "tool_calls"},
		{map[string]any{"type": "function", "function": map[string]any{"name": "tap"}}, true, true, 1, "Sure:", "tool_calls"},
		{"none", false, false, 0, "Sure: <tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>", "stop"},
	} {
		body := map[string]any{"messages": wifiMessages(), "tools": droidgoTools()}
		if tc.choice != nil {
			body["tool_choice"] = tc.choice
		}
		resp := post(t, url, "", body)
		var a struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		r := fb.requests()
		last := r[len(r)-1]
		m := a.Choices[0].Message
		if last.Constrain != tc.constrain || len(last.Tools) != tc.tools || (len(m.ToolCalls) > 0) != tc.calls ||
			m.Content == nil || *m.Content != tc.wantContent || a.Choices[0].FinishReason != tc.finish {
			t.Errorf("tool_choice %v: request constrain=%v tools=%d; answer %+v", tc.choice, last.Constrain, len(last.Tools), a)
		}
		if tc.calls && (!strings.HasPrefix(m.ToolCalls[0].ID, "call_") || m.ToolCalls[0].Function.Arguments != `{"index":3}`) {
			t.Errorf("call %+v", m.ToolCalls[0])
		}
	}
}

// TestForeignTools: a harness's own tools, with types droidgo's action
// space does not have, are offered as sent and their calls come back with
// their JSON types.
func TestForeignTools(t *testing.T) {
	t.Parallel()
	answer := `<tool_call>input_text<arg_key>text</arg_key><arg_value>  hello </arg_value><arg_key>clear</arg_key><arg_value>true</arg_value><arg_key>keys</arg_key><arg_value>["a", 2]</arg_value></tool_call>`
	fb := &fakeBackend{deltas: []model.Delta{{Content: answer}}}
	url, _ := start(t, Config{Backend: fb, Constrain: true})
	tools := `[{"type":"function","function":{"name":"input_text","description":"Type text.","parameters":{"type":"object","properties":{"text":{"type":"string","description":"what to type"},"clear":{"type":"boolean","default":false},"keys":{"type":"array","items":{"type":["string","integer"]}}},"required":["text"]}}}]`
	body := `{"messages":[{"role":"user","content":"type hello"}],"tools":` + tools + `}`
	resp := post(t, url, "", body)
	defer resp.Body.Close()
	var a struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&a)
	if calls := a.Choices[0].Message.ToolCalls; len(calls) != 1 || calls[0].Function.Arguments != `{"text":"  hello ","clear":true,"keys":["a",2]}` {
		t.Errorf("calls %+v", calls)
	}
	r := fb.requests()[0]
	if !strings.Contains(r.Prompt, `"clear": {"type": "boolean", "default": false}`) || !strings.Contains(r.Prompt, `"items": {"type": ["string", "integer"]}`) {
		t.Errorf("the tools were not rendered as sent: %q", r.Prompt)
	}
	if p, _ := r.Tools[0].Param("clear"); !r.Constrain || p.Type != action.String {
		t.Errorf("constraint tools %+v", r.Tools)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn}
	url, logs := start(t, Config{Backend: fb, APIKey: "sesame", MaxBody: 4096, MaxTokens: 100})
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, key, body string
		status          int
		code, msg       string
	}{
		{"no key", "", "{" + user + "}", 401, "invalid_api_key", "needs an API key"},
		{"wrong key", "open", "{" + user + "}", 401, "invalid_api_key", "not the one"},
		{"oversized", "sesame", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "request_too_large", "larger than 4096 bytes"},
		{"not json", "sesame", "hello", 400, "invalid_request", "not a JSON"},
		{"trailing", "sesame", "{" + user + "} {}", 400, "invalid_request", "after its JSON"},
		{"deep", "sesame", `{"messages":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "}", 400, "invalid_request", "message 0 is not a JSON object"},
		{"no messages", "sesame", `{}`, 400, "invalid_request", "messages is missing"},
		{"bad role", "sesame", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "invalid_request", `role "wizard"`},
		{"image", "sesame", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "invalid_request", "image_url"},
		{"max_tokens", "sesame", "{" + user + `,"max_tokens":101}`, 400, "max_tokens_too_large", "more than this server allows (100"},
		{"max_tokens 0", "sesame", "{" + user + `,"max_tokens":0}`, 400, "invalid_request", "at least 1"},
		{"n", "sesame", "{" + user + `,"n":2}`, 400, "invalid_request", "one choice"},
		{"temperature", "sesame", "{" + user + `,"temperature":3}`, 400, "invalid_request", "outside 0..2"},
		{"model", "sesame", "{" + user + `,"model":"gpt-4o"}`, 404, "model_not_found", `"gpt-4o" is not served here`},
		{"tool name", "sesame", "{" + user + `,"tools":[{"type":"function","function":{"name":"a<b"}}]}`, 400, "invalid_request", "function name"},
		{"tool choice", "sesame", "{" + user + `,"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`, 400, "invalid_request", "not among the offered tools"},
		{"required without tools", "sesame", "{" + user + `,"tool_choice":"required"}`, 400, "invalid_request", "no tools"},
		{"thinking", "sesame", "{" + user + `,"chat_template_kwargs":{"enable_thinking":"yes"}}`, 400, "invalid_request", "enable_thinking"},
		{"penalty", "sesame", "{" + user + `,"frequency_penalty":0.5}`, 400, "invalid_request", "not supported"},
	} {
		resp := post(t, url, tc.key, tc.body)
		var e apiError
		err := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || err != nil || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: status %d, error %+v (%v)", tc.name, resp.StatusCode, e.Error, err)
		}
	}
	if n := len(fb.requests()); n != 0 {
		t.Errorf("%d refused requests reached the backend", n)
	}
	// /health needs no key; /v1/models does.
	for path, want := range map[string]int{"/health": 200, "/v1/models": 401, "/v1/nothing": 404, "/nothing": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	waitLog(t, logs, "POST /v1/chat/completions 413", `error="the request body is larger than 4096 bytes`)
	waitLog(t, logs, "POST /v1/chat/completions 401", `error="the API key is not the one`)
}

func TestModels(t *testing.T) {
	t.Parallel()
	url, _ := start(t, Config{Backend: &fakeBackend{}, ModelID: "spark-x2.5"})
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := get("/v1/models"); code != 200 || fmt.Sprint(m["data"]) != fmt.Sprintf("[map[created:%v id:spark-x2.5 object:model owned_by:droidgo]]", m["data"].([]any)[0].(map[string]any)["created"]) {
		t.Errorf("%d %v", code, m)
	}
	if code, m := get("/v1/models/spark-x2.5"); code != 200 || m["id"] != "spark-x2.5" {
		t.Errorf("%d %v", code, m)
	}
	if code, _ := get("/v1/models/other"); code != 404 {
		t.Errorf("other model: %d", code)
	}
	if code, m := get("/health"); code != 200 || m["status"] != "ok" || m["parallel"] != 1.0 || m["queue"] != 4.0 {
		t.Errorf("%d %v", code, m)
	}
	resp, _ := http.Post(url+"/health", "text/plain", nil)
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST /health: %d", resp.StatusCode)
	}
}

// TestQueueFull floods a server of one slot and one queue place: two
// requests are taken, the rest are answered 429 with Retry-After, and once
// the slot frees the queued one is served.
func TestQueueFull(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn, hold: make(chan struct{}), started: make(chan struct{}, 16)}
	url, logs := start(t, Config{Backend: fb, Parallel: 1, Queue: 1})
	body := map[string]any{"messages": wifiMessages(), "stream": true}
	first := post(t, url, "", body)
	<-fb.started
	type res struct {
		code  int
		retry string
		body  string
	}
	second := make(chan res, 1)
	go func() {
		r := post(t, url, "", body)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		second <- res{r.StatusCode, "", string(b)}
	}()
	// Wait until the second one is queued.
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if h["waiting"] == 1.0 && h["running"] == 1.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health %v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var wg sync.WaitGroup
	refused := make(chan res, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(t, url, "", body)
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			refused <- res{r.StatusCode, r.Header.Get("Retry-After"), string(b)}
		}()
	}
	wg.Wait()
	close(refused)
	for r := range refused {
		if r.code != 429 || r.retry == "" || r.retry == "0" || !strings.Contains(r.body, "queue_full") {
			t.Errorf("flooded request: %+v", r)
		}
	}
	close(fb.hold)
	chunks, done := events(t, first.Body)
	first.Body.Close()
	if !done || len(chunks) == 0 {
		t.Errorf("first request: done %v, %d chunks", done, len(chunks))
	}
	if r := <-second; r.code != 200 || !strings.Contains(r.body, "[DONE]") {
		t.Errorf("queued request: %+v", r)
	}
	waitLog(t, logs, " 429 ", "queue_full"[:0], `error="the server is busy`)
}

// TestClientGoneFreesSequence: a client that drops the connection mid-
// stream cancels its generation at once, and its slot serves the next.
func TestClientGoneFreesSequence(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn, hold: make(chan struct{}), started: make(chan struct{}, 4)}
	url, logs := start(t, Config{Backend: fb, Parallel: 1, Queue: 1})
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"stream":true}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(conn)
	// Read up to the first reasoning chunk, then hang up.
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "reasoning_content") {
			break
		}
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fb.mu.Lock()
		n := fb.cancelled
		fb.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the generation was not cancelled when its client went away")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitLog(t, logs, "POST /v1/chat/completions 200", "finish=cancelled", "client went away")
	// The slot is free: the next request runs to the end.
	close(fb.hold)
	resp := post(t, url, "", map[string]any{"messages": wifiMessages()})
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("next request: %d", resp.StatusCode)
	}
}

// TestKeepAlive: a stream that waits for a slot gets its headers and
// comments, so clients' header timeouts do not fire.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn, hold: make(chan struct{}), started: make(chan struct{}, 4)}
	url, _ := start(t, Config{Backend: fb, Parallel: 1, KeepAlive: 20 * time.Millisecond})
	first := post(t, url, "", map[string]any{"messages": wifiMessages(), "stream": true})
	defer first.Body.Close()
	<-fb.started
	second := post(t, url, "", map[string]any{"messages": wifiMessages(), "stream": true})
	defer second.Body.Close()
	if second.StatusCode != 200 {
		t.Fatalf("status %d", second.StatusCode)
	}
	line, err := bufio.NewReader(second.Body).ReadString('\n')
	if err != nil || line != ": keep-alive\n" {
		t.Errorf("first line %q, %v", line, err)
	}
	close(fb.hold)
}

func TestBackendErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: 9000 tokens", model.ErrPromptTooLong), 400, "context_length_exceeded"},
		{errors.New("disk on fire"), 500, "generation_failed"},
	} {
		url, _ := start(t, Config{Backend: &fakeBackend{err: tc.err}})
		for _, stream := range []bool{false, true} {
			resp := post(t, url, "", map[string]any{"messages": wifiMessages(), "stream": stream})
			var e apiError
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.err.Error()) {
				t.Errorf("%v stream=%v: %d %+v", tc.err, stream, resp.StatusCode, e)
			}
		}
	}
}

func TestStopper(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stops  []string
		pieces []string
		first  string // sent after the first piece
		all    string // sent in all
		hit    bool
	}{
		{nil, []string{"ab", "cd"}, "ab", "abcd", false},
		{[]string{"END"}, []string{"abc", "E", "N", "D", "x"}, "a", "abc", true},
		{[]string{"END"}, []string{"abE", "Nx"}, "a", "abENx", false},
		{[]string{"xy", "b"}, []string{"aab"}, "aa", "aa", true},
		{[]string{"zz"}, []string{"a\u00e9", "b"}, "a", "a\u00e9b", false}, // never splits a character
	} {
		s := newStopper(tc.stops)
		var sent []string
		for _, p := range tc.pieces {
			if s.hit {
				break
			}
			sent = append(sent, s.feed(p))
		}
		if !s.hit {
			sent = append(sent, s.flush())
		}
		if sent[0] != tc.first || strings.Join(sent, "") != tc.all || s.hit != tc.hit {
			t.Errorf("%q %q: sent %q, hit %v", tc.stops, tc.pieces, sent, s.hit)
		}
	}
}
