package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/toolparse"
)

// scriptServer is an OpenAI-compatible chat server on 127.0.0.1 whose
// "model" is a script: it streams the script's reasoning as
// reasoning_content and its answer either as raw content (like
// llama-server without a tool parser) or as parsed tool_calls (like vLLM
// with the spark25 parser).
func scriptServer(t *testing.T, scriptPath string, parsedCalls bool) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	s, err := script.Load(scriptPath)
	if err != nil {
		t.Fatal(err)
	}
	backend := script.New(s, script.Options{})
	var requests []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		requests = append(requests, body)
		var req struct {
			Messages []model.Message `json:"messages"`
			Kwargs   struct {
				Think bool `json:"enable_thinking"`
			} `json:"chat_template_kwargs"`
		}
		json.Unmarshal(raw, &req)
		stream, err := backend.Chat(r.Context(), model.ChatRequest{Messages: req.Messages, Think: req.Kwargs.Think})
		if err != nil {
			http.Error(w, `{"error":{"message":"`+err.Error()+`"}}`, 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		delta := func(d map[string]any) { send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d}}}) }
		var content strings.Builder
		for {
			d, err := stream.Next()
			if err != nil {
				break
			}
			if d.Reasoning != "" {
				delta(map[string]any{"reasoning_content": d.Reasoning})
			}
			if d.Content != "" {
				if parsedCalls {
					content.WriteString(d.Content)
				} else {
					delta(map[string]any{"content": d.Content})
				}
			}
		}
		if parsedCalls {
			res := toolparse.Parse(content.String(), toolparse.Options{})
			for i, c := range res.Calls {
				args, _ := json.Marshal(c.Arguments)
				delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprint("c", i), "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": string(args)}}}})
			}
		}
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestRunWithEndpoint drives the Wi-Fi scenario through a real HTTP
// server, in both of the shapes servers answer in.
func TestRunWithEndpoint(t *testing.T) {
	t.Parallel()
	for _, parsed := range []bool{false, true} {
		t.Run(fmt.Sprintf("parsed=%v", parsed), func(t *testing.T) {
			h := newHarness(t)
			srv, reqs := scriptServer(t, filepath.Join(fixturesDir, "scripts", "wifi.txt"), parsed)
			r := h.run(context.Background(), "run", "--sim", "wifi", "--endpoint", srv.URL, "--model-name", "spark", "--no-tui", "--poll", "1ms")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !h.lastPhone().Success() {
				t.Fatal("exit 0 but Wi-Fi is not on")
			}
			if len(*reqs) != 5 {
				t.Errorf("%d requests, want one per step (5)", len(*reqs))
			}
			first := (*reqs)[0]
			if first["model"] != "spark" || first["stream"] != true {
				t.Errorf("request %v", first)
			}
			if kw, _ := first["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != true {
				t.Errorf("thinking not requested: %v", first["chat_template_kwargs"])
			}
			if tools, _ := first["tools"].([]any); len(tools) == 0 {
				t.Error("no tools sent")
			}
		})
	}
}

func TestRunEndpointErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"invalid api key"}}`)
	}))
	defer srv.Close()
	h := newHarness(t)
	r := h.run(context.Background(), "run", "--sim", "wifi", "--endpoint", srv.URL, "--model-name", "m", "--no-tui", "--poll", "1ms")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "DROIDGO_API_KEY") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = h.run(context.Background(), "run", "--sim", "wifi", "--endpoint", "ftp://x", "--no-tui")
	if r.code != 2 || !strings.Contains(r.stderr, "not an http(s) URL") {
		t.Errorf("bad URL: exit %d %s", r.code, r.stderr)
	}
	r = h.run(context.Background(), "run", "--sim", "wifi", "--endpoint", srv.URL, "--model", "script:x.txt", "--no-tui")
	if r.code != 2 || !strings.Contains(r.stderr, "give only one") {
		t.Errorf("both: exit %d %s", r.code, r.stderr)
	}
	r = h.run(context.Background(), "run", "--sim", "wifi", "--no-tui")
	if r.code != 2 || !strings.Contains(r.stderr, "droidgo pull") {
		t.Errorf("no model: exit %d %s", r.code, r.stderr)
	}
}

// TestEndpointBounds runs against hostile servers on 127.0.0.1: one that
// serves two models (refused, with their names, exit 2) and one that
// ignores max_tokens and streams without end (each turn is cut at the
// budget with a warning; the run ends instead of eating memory).
func TestEndpointBounds(t *testing.T) {
	t.Parallel()
	two := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"spark-a"},{"id":"spark-b"}]}`)
	}))
	defer two.Close()
	r := droidgo(t, context.Background(), "run", "--sim", "wifi", "--endpoint", two.URL, "--no-tui")
	if r.code != 2 || !strings.Contains(r.stderr, "serves 2 models (spark-a, spark-b); say which with --model-name") {
		t.Errorf("two models: exit %d, %q", r.code, r.stderr)
	}

	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, `data: {"choices":[{"delta":{"content":"blah "}}]}`+"\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer endless.Close()
	r = droidgo(t, context.Background(), "run", "--sim", "wifi", "--endpoint", endless.URL, "--model-name", "m", "--no-think", "--think-budget", "16", "--no-tui", "--poll", "1ms")
	// With thinking off a turn is bounded by the answer's room alone
	// (loop.TurnTokens), whatever the think budget.
	if r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("the server sent more than the %d tokens asked for (it ignores max_tokens)", loop.AnswerTokens)) {
		t.Errorf("endless stream: exit %d, stderr %q\n%.2000s", r.code, r.stderr, r.stdout)
	}
	if len(r.stdout) > 1<<20 {
		t.Errorf("%d bytes of output for three bounded turns", len(r.stdout))
	}
}
