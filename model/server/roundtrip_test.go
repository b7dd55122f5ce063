package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/local"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/openai"
)

// drain reads a stream to its end.
func drain(t *testing.T, st model.Stream) (deltas []model.Delta) {
	t.Helper()
	defer st.Close()
	for {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			return deltas
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		deltas = append(deltas, d)
	}
}

func agentRequest() model.ChatRequest {
	return model.ChatRequest{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You operate an Android phone."},
			{Role: model.RoleUser, Content: "Task: Turn on Wi-Fi\n\nPrevious actions:\n- open_app(name=\"Settings\") → changed\n\nCurrent screen:\n[0] text Internet\n[3] switch Wi-Fi (off)"},
			{Role: model.RoleAssistant, Content: "", Reasoning: "It is off.", ToolCalls: []action.Call{{Name: "swipe", Arguments: map[string]any{"direction": "up", "index": int64(2)}}}},
			{Role: model.RoleTool, Content: "the screen changed"},
		},
		Tools:     action.Tools,
		Think:     true,
		MaxTokens: 300,
		Sampling:  model.Sampling{Temperature: 1, TopP: 0.95, Seed: 0},
	}
}

// TestOpenAIClientRoundTrip runs droidgo's own OpenAI client against the
// server: the backend gets the very prompt the in-process engine renders
// for the same request, and the client reads back the reasoning, its end,
// the call and the usage as the backend made them.
func TestOpenAIClientRoundTrip(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{deltas: tapTurn, stats: model.Stats{PromptTokens: 321, CachedTokens: 300}}
	url, _ := start(t, Config{Backend: fb, Constrain: true, APIKey: "k"})
	ctx := context.Background()
	c, err := openai.New(ctx, openai.Config{BaseURL: url, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model() != "test-model" {
		t.Errorf("model %q", c.Model())
	}
	req := agentRequest()
	st, err := c.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	deltas := drain(t, st)
	var reasoning strings.Builder
	closed := false
	var calls []action.Call
	for _, d := range deltas {
		reasoning.WriteString(d.Reasoning)
		closed = closed || d.ReasoningClosed
		calls = append(calls, d.ToolCalls...)
		if d.Content != "" {
			t.Errorf("content %q", d.Content)
		}
	}
	want := []action.Call{{Name: "tap", Arguments: map[string]any{"index": int64(3)}}}
	if reasoning.String() != "The switch is off." || !closed || !reflect.DeepEqual(calls, want) {
		t.Errorf("reasoning %q closed %v calls %v", reasoning.String(), closed, calls)
	}
	if s := st.Stats(); s.PromptTokens != 321 || s.CachedTokens != 300 || s.GeneratedTokens != 5 {
		t.Errorf("stats %+v", s)
	}
	got := fb.requests()[0]
	prompt, err := chat.Render(req.Messages, req.Tools, chat.Options{Thinking: true, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompt != prompt {
		t.Errorf("the server's prompt is not the in-process one:\n got  %q\n want %q", got.Prompt, prompt)
	}
	if got.Sampling != req.Sampling || got.MaxTokens != 300 || !got.Think {
		t.Errorf("request %+v", got)
	}
}

// TestInProcessEngineOverHTTP serves a tiny random Spark model: with tools
// offered, the answer is produced under the constraint, so the client
// always reads one valid call, whatever the random weights say.
func TestInProcessEngineOverHTTP(t *testing.T) {
	t.Parallel()
	b, err := local.Open(localtest.Model(t, 5), local.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	url, logs := start(t, Config{Backend: b, Constrain: true})
	ctx := context.Background()
	c, err := openai.New(ctx, openai.Config{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	for i, think := range []bool{true, false} {
		req := agentRequest()
		req.Think = think
		req.MaxTokens = 40
		req.Sampling.Seed = uint64(i)
		st, err := c.Chat(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var calls []action.Call
		for _, d := range drain(t, st) {
			calls = append(calls, d.ToolCalls...)
		}
		if len(calls) != 1 {
			t.Fatalf("think=%v: calls %v", think, calls)
		}
		if err := action.Validate(calls[0], action.Tools); err != nil {
			t.Errorf("think=%v: invalid call %v: %v", think, calls[0], err)
		}
		if s := st.Stats(); s.PromptTokens == 0 || s.GeneratedTokens == 0 {
			t.Errorf("stats %+v", s)
		}
	}
	// The second request reused the shared prefix computed by the first.
	line := waitLog(t, logs, "finish=tool_calls", "reasoning=0")
	if strings.Contains(line, " cached=0 ") {
		t.Errorf("no prefix reuse: %s", line)
	}
}

// TestPromptTooLong: a prompt the engine's context cannot hold is the
// client's error, with OpenAI's code for it.
func TestPromptTooLong(t *testing.T) {
	t.Parallel()
	b, err := local.Open(localtest.Model(t, 5), local.Options{Threads: 1, MaxContext: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	url, _ := start(t, Config{Backend: b})
	for _, stream := range []bool{false, true} {
		resp := post(t, url, "", map[string]any{"messages": wifiMessages(), "tools": droidgoTools(), "stream": stream})
		var e apiError
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 400 || e.Error.Code != "context_length_exceeded" || !strings.Contains(e.Error.Message, "256") {
			t.Errorf("stream=%v: %d %+v", stream, resp.StatusCode, e)
		}
	}
}
