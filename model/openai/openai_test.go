package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
)

// sse writes chunks as a server-sent event stream, flushing each.
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

func delta(field, text string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"choices":[{"index":0,"delta":{%q:%s},"finish_reason":null}]}`, field, b)
}

// collect reads a whole stream.
func collect(t *testing.T, s model.Stream) (reasoning, content string, calls []action.Call, closed int, err error) {
	t.Helper()
	defer s.Close()
	for {
		d, e := s.Next()
		if e == io.EOF {
			return
		}
		if e != nil {
			err = e
			return
		}
		reasoning += d.Reasoning
		content += d.Content
		calls = append(calls, d.ToolCalls...)
		if d.ReasoningClosed {
			closed++
		}
	}
}

func newTestBackend(t *testing.T, h http.HandlerFunc, mod func(*Config)) *Backend {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := Config{BaseURL: srv.URL, Model: "spark", Backoff: time.Millisecond, APIKey: "k"}
	if mod != nil {
		mod(&cfg)
	}
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var req = model.ChatRequest{
	Messages: []model.Message{
		{Role: model.RoleSystem, Content: "sys"},
		{Role: model.RoleUser, Content: "Turn on Wi-Fi"},
		{Role: model.RoleAssistant, ToolCalls: []action.Call{{Name: "tap", Arguments: map[string]any{"index": int64(2)}}}},
		{Role: model.RoleTool, Content: "tapped"},
	},
	Tools: action.Tools,
	Think: true,
}

// noThink is req with thinking off: content is the answer from the start.
var noThink = func() model.ChatRequest { r := req; r.Think = false; return r }()

func TestVLLMStyleParsedToolCalls(t *testing.T) {
	var body map[string]any
	var auth string
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&body)
		sse(w,
			delta("reasoning_content", "The switch "),
			delta("reasoning_content", "is off."),
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"tap","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"index\": "}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"5}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":812,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":800}}}`,
			"[DONE]")
	}, nil)
	s, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, c, calls, closed, err := collect(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if r != "The switch is off." || c != "" || closed != 1 {
		t.Errorf("reasoning %q content %q closed %d", r, c, closed)
	}
	if len(calls) != 1 || calls[0].Name != "tap" || calls[0].Arguments["index"] != int64(5) {
		t.Errorf("calls = %#v", calls)
	}
	st := s.Stats()
	if st.PromptTokens != 812 || st.GeneratedTokens != 9 || st.CachedTokens != 800 {
		t.Errorf("stats = %+v", st)
	}
	if auth != "Bearer k" {
		t.Errorf("authorization = %q", auth)
	}
	if kw, _ := body["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != true {
		t.Errorf("chat_template_kwargs = %v", body["chat_template_kwargs"])
	}
	if tools, _ := body["tools"].([]any); len(tools) != len(action.Tools) {
		t.Errorf("sent %d tools", len(tools))
	}
	msgs, _ := body["messages"].([]any)
	asst := msgs[2].(map[string]any)
	tc := asst["tool_calls"].([]any)[0].(map[string]any)
	tool := msgs[3].(map[string]any)
	if tc["id"] != tool["tool_call_id"] || tc["function"].(map[string]any)["arguments"] != `{"index":2}` {
		t.Errorf("tool call %v answered by %v", tc, tool)
	}
}

func TestLlamaServerStyleRawContent(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			delta("reasoning_content", "Tap Wi-Fi."),
			delta("content", "<tool_call>tap<arg_key>index</arg_key>"),
			delta("content", "<arg_value>3</arg_value></tool_call>"),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			"[DONE]")
	}, nil)
	s, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, c, calls, closed, err := collect(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "<tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>"
	if r != "Tap Wi-Fi." || c != want || len(calls) != 0 || closed != 1 {
		t.Errorf("reasoning %q content %q calls %v closed %d", r, c, calls, closed)
	}
}

// A server without a reasoning parser streams the raw text; with thinking
// on, the text up to </think> is reasoning, even when the tag is split
// across chunks.
func TestRawContentIsSplit(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			delta("content", "The switch is off.</th"),
			delta("content", "ink>\n<tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>"),
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			"[DONE]")
	}, nil)
	s, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, c, _, closed, err := collect(t, s)
	if err != nil || r != "The switch is off." || closed != 1 || !strings.HasPrefix(c, "\n<tool_call>tap") {
		t.Errorf("reasoning %q content %q closed %d err %v", r, c, closed, err)
	}
}

func TestBrokenToolArgumentsGoToTheParser(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"tap","arguments":"{\"index\": 4"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			"[DONE]")
	}, nil)
	s, _ := b.Chat(context.Background(), req)
	_, c, calls, _, err := collect(t, s)
	if err != nil || len(calls) != 0 || c != `{"name": "tap", "arguments": {"index": 4}` {
		t.Errorf("content %q calls %v err %v", c, calls, err)
	}
}

func TestStreamErrors(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		cfg     func(*Config)
		want    error
		text    string
	}{
		{"cut halfway", func(w http.ResponseWriter, r *http.Request) {
			sse(w, delta("reasoning_content", "thinking"), delta("content", "<tool_"))
		}, nil, ErrStreamBroken, "closed the stream before it finished"},
		{"malformed chunk", func(w http.ResponseWriter, r *http.Request) {
			sse(w, delta("content", "a"), `{"choices":[{"delta":`)
		}, nil, ErrStreamBroken, "malformed chunk"},
		{"stalls", func(w http.ResponseWriter, r *http.Request) {
			sse(w, delta("content", "a"))
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond }, ErrStreamBroken, "no data for"},
		{"error mid-stream", func(w http.ResponseWriter, r *http.Request) {
			sse(w, delta("content", "a"), `{"error":{"message":"out of KV cache"}}`)
		}, nil, nil, "out of KV cache"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBackend(t, tc.handler, tc.cfg)
			s, err := b.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, _, err = collect(t, s)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestStatusErrorsAndRetries(t *testing.T) {
	cases := []struct {
		name     string
		statuses []int // answers in order; the last repeats
		body     string
		want     error
		text     string
		attempts int32
	}{
		{"429 then ok", []int{429, 429, 200}, "", nil, "", 3},
		{"503 forever", []int{503}, `{"error":{"message":"overloaded"}}`, nil, "overloaded", 4},
		{"401", []int{401}, `{"error":{"message":"bad key"}}`, ErrUnauthorized, "DROIDGO_API_KEY", 1},
		{"unknown model", []int{404}, `{"error":{"message":"The model 'spark' does not exist."}}`, ErrUnknownModel, `does not serve model "spark"`, 1},
		{"400", []int{400}, `{"message":"messages too long"}`, nil, "messages too long", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				st := tc.statuses[min(i, len(tc.statuses)-1)]
				if st == 200 {
					sse(w, delta("content", "ok"), "[DONE]")
					return
				}
				w.WriteHeader(st)
				io.WriteString(w, tc.body)
			}, nil)
			s, err := b.Chat(context.Background(), noThink)
			if tc.want == nil && tc.text == "" {
				if err != nil {
					t.Fatal(err)
				}
				_, c, _, _, err := collect(t, s)
				if err != nil || c != "ok" {
					t.Errorf("content %q err %v", c, err)
				}
			} else if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
			if n.Load() != tc.attempts {
				t.Errorf("%d attempts, want %d", n.Load(), tc.attempts)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	b, err := New(context.Background(), Config{BaseURL: "http://" + addr, Model: "m", Backoff: time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Chat(context.Background(), req)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("err = %v", err)
	}
}

func TestModelDiscoveryAndURLs(t *testing.T) {
	var path string
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		io.WriteString(w, `{"object":"list","data":[{"id":"XHToken/Spark-X2.5-1.7B"}]}`)
	}, func(c *Config) { c.Model = "" })
	if b.Model() != "XHToken/Spark-X2.5-1.7B" || path != "/v1/models" {
		t.Errorf("model %q from %q", b.Model(), path)
	}
	for _, bad := range []string{"", "ftp://x", "127.0.0.1:8000", "http://"} {
		if _, err := New(context.Background(), Config{BaseURL: bad, Model: "m"}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

func TestNonStreamingAnswer(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","reasoning_content":"r","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"press_key","arguments":"{\"key\":\"back\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
	}, nil)
	s, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r, _, calls, _, err := collect(t, s)
	if err != nil || r != "r" || len(calls) != 1 || calls[0].Arguments["key"] != "back" {
		t.Errorf("r %q calls %v err %v", r, calls, err)
	}
}

func TestCancel(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, delta("content", "a"))
		<-r.Context().Done()
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := b.Chat(ctx, noThink)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Next(); err != nil || d.Content != "a" {
		t.Fatalf("first delta %v %v", d, err)
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
}
