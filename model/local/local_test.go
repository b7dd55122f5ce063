package local

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/toolparse"
)

// turnOut is one streamed turn.
type turnOut struct {
	reasoning, content string
	closed             bool
	deltas             int
	stats              model.Stats
}

// run streams a turn to the end. closeAfter > 0 calls CloseReasoning after
// that many reasoning deltas.
func run(t *testing.T, b *Backend, req model.ChatRequest, closeAfter int) turnOut {
	t.Helper()
	st, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	defer st.Close()
	var o turnOut
	var r, c strings.Builder
	nr := 0
	for {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		o.deltas++
		if d.Reasoning != "" && d.Content != "" {
			t.Fatalf("delta with both reasoning and content: %+v", d)
		}
		if d.Content != "" && req.Think && !o.closed {
			t.Fatalf("content %q before the reasoning was closed", d.Content)
		}
		r.WriteString(d.Reasoning)
		c.WriteString(d.Content)
		if d.ReasoningClosed {
			if o.closed {
				t.Fatal("reasoning closed twice")
			}
			o.closed = true
		}
		if d.Reasoning != "" {
			nr++
			if closeAfter > 0 && nr == closeAfter {
				if err := st.CloseReasoning(); err != nil {
					t.Fatalf("CloseReasoning: %v", err)
				}
			}
		}
	}
	o.reasoning, o.content, o.stats = r.String(), c.String(), st.Stats()
	return o
}

func open(t *testing.T, path string, opts Options) *Backend {
	t.Helper()
	b, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

const screen1 = "[0] Wi-Fi (switch, off)\n[1] Bluetooth (switch, on)\n[2] Network & internet\n"

// agentMessages mimics the loop's prompt: a fixed system message and a
// user message with the task, past actions and the screen.
func agentMessages(history []string, screen string) []model.Message {
	u := "Task: Turn on Wi-Fi\n"
	if len(history) > 0 {
		u += "\nPrevious actions:\n"
		for _, h := range history {
			u += "- " + h + "\n"
		}
	}
	u += "\nCurrent screen:\n" + screen
	return []model.Message{
		{Role: model.RoleSystem, Content: "You operate an Android phone. Answer with exactly one tool call."},
		{Role: model.RoleUser, Content: u},
	}
}

func agentRequest(history []string, think bool) model.ChatRequest {
	return model.ChatRequest{
		Messages:     agentMessages(history, screen1),
		Tools:        action.Tools,
		Think:        think,
		MaxTokens:    40,
		Constrain:    true,
		ValidIndices: []int{0, 1, 2},
	}
}

func TestOpen(t *testing.T) {
	path := localtest.Model(t, 1)
	b := open(t, path, Options{})
	if want := "spark:spark-rich-1.gguf"; b.Name() != want {
		t.Errorf("Name() = %q, want %q", b.Name(), want)
	}
	if w := b.Warnings(); len(w) != 0 {
		t.Errorf("warnings for the official template: %q", w)
	}

	other := t.TempDir() + "/other.gguf"
	if err := localtest.Write(other, localtest.Config(), 1, "{{ messages }}"); err != nil {
		t.Fatal(err)
	}
	b2 := open(t, other, Options{})
	if w := b2.Warnings(); len(w) != 1 || !strings.Contains(w[0], "not Spark's official") {
		t.Errorf("warnings for an unofficial template: %q", w)
	}

	if _, err := Open(t.TempDir()+"/missing.gguf", Options{}); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

// The second step of an agent run prefills only the part of its prompt
// that differs from the cache, and produces exactly what a fresh backend
// produces for the same prompt.
func TestCacheReuse(t *testing.T) {
	path := localtest.Model(t, 2)
	for _, think := range []bool{false, true} {
		b := open(t, path, Options{})
		steps := [][]string{nil, {"tap index 0 (Wi-Fi)"}, {"tap index 0 (Wi-Fi)", "swipe up"}}
		var outs []turnOut
		for i, h := range steps {
			before := b.Prefilled()
			req := agentRequest(h, think)
			st, err := b.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			stats := st.Stats()
			prefilled := b.Prefilled() - before
			st.Close()
			if prefilled != int64(stats.PromptTokens-stats.CachedTokens) {
				t.Errorf("think=%v step %d: engine prefilled %d tokens, stats say %d-%d", think, i, prefilled, stats.PromptTokens, stats.CachedTokens)
			}
			if i == 0 && stats.CachedTokens != 0 {
				t.Errorf("think=%v step 0: %d cached tokens in a new backend", think, stats.CachedTokens)
			}
			if i > 0 && prefilled*4 > int64(stats.PromptTokens) {
				t.Errorf("think=%v step %d prefilled %d of %d prompt tokens; want less than a quarter", think, i, prefilled, stats.PromptTokens)
			}
			t.Logf("think=%v step %d: prompt %d tokens, cached %d, prefilled %d", think, i, stats.PromptTokens, stats.CachedTokens, prefilled)
			outs = append(outs, run(t, b, req, 0))
		}
		// The same last step in a fresh backend.
		fresh := open(t, path, Options{})
		want := run(t, fresh, agentRequest(steps[2], think), 0)
		got := outs[2]
		if got.reasoning != want.reasoning || got.content != want.content {
			t.Errorf("think=%v: with the cache %q/%q, fresh %q/%q", think, got.reasoning, got.content, want.reasoning, want.content)
		}
		if want.stats.CachedTokens != 0 || got.stats.CachedTokens == 0 {
			t.Errorf("think=%v: cached tokens fresh %d, reused %d", think, want.stats.CachedTokens, got.stats.CachedTokens)
		}
	}
}

// Whatever the weights, a constrained answer parses into exactly one valid
// call whose index is on the screen, and is valid UTF-8: several random models, greedy and
// sampled, thinking on (closed by the budget or by the model) and off,
// token budgets that cut the call short.
func TestConstrainedAnswersParse(t *testing.T) {
	valid := []int{0, 4, 17}
	onScreen := map[int64]bool{0: true, 4: true, 17: true}
	for seed := uint64(1); seed <= 4; seed++ {
		b := open(t, localtest.Model(t, seed), Options{})
		for i, tc := range []struct {
			think      bool
			closeAfter int
			maxTokens  int
			sampling   model.Sampling
		}{
			{think: false, maxTokens: 60},
			{think: false, maxTokens: 60, sampling: model.Sampling{Temperature: 1, TopP: 0.95, Seed: seed}},
			{think: true, closeAfter: 4, maxTokens: 80, sampling: model.Sampling{Temperature: 1, TopP: 0.95, Seed: seed + 10}},
			{think: true, closeAfter: 1, maxTokens: 80, sampling: model.Sampling{Temperature: 1.5, TopK: 40, Seed: seed + 20}},
			{think: true, maxTokens: 6}, // budget spent while reasoning
			{think: false, maxTokens: 3, sampling: model.Sampling{Temperature: 2, Seed: seed}}, // spent mid-call
		} {
			req := model.ChatRequest{
				Messages:     agentMessages(nil, "[0] Wi-Fi\n[4] Bluetooth\n[17] Display\n"),
				Tools:        action.Tools,
				Think:        tc.think,
				MaxTokens:    tc.maxTokens,
				Sampling:     tc.sampling,
				Constrain:    true,
				ValidIndices: valid,
			}
			o := run(t, b, req, tc.closeAfter)
			if tc.think && !o.closed {
				t.Errorf("seed %d case %d: the reasoning was not closed", seed, i)
			}
			if !utf8.ValidString(o.content) {
				t.Errorf("seed %d case %d: answer %q is not valid UTF-8", seed, i, o.content)
			}
			res := toolparse.Parse(o.content, toolparse.Options{Tools: action.Tools})
			if len(res.Calls) != 1 || len(res.Errors) != 0 || res.Format != toolparse.FormatNative {
				t.Errorf("seed %d case %d: answer %q parsed as %+v", seed, i, o.content, res)
				continue
			}
			c := res.Calls[0]
			if err := action.Validate(c, action.Tools); err != nil {
				t.Errorf("seed %d case %d: %q: %v", seed, i, o.content, err)
			}
			if idx, ok := c.Arguments["index"]; ok && !onScreen[idx.(int64)] {
				t.Errorf("seed %d case %d: %q: index %v is not on the screen", seed, i, o.content, idx)
			}
			if lim := tc.maxTokens + closingGrace; o.stats.GeneratedTokens > lim {
				t.Errorf("seed %d case %d: %d tokens generated, limit %d", seed, i, o.stats.GeneratedTokens, lim)
			}
			t.Logf("seed %d case %d: %d tokens: %s", seed, i, o.stats.GeneratedTokens, c)
		}
	}
}

// Without the constraint the model's garbage answer is passed through
// untouched, and the turn stops at MaxTokens.
func TestUnconstrained(t *testing.T) {
	for _, mode := range []ConstrainMode{ConstrainOff, ConstrainAsRequested} {
		b := open(t, localtest.Model(t, 3), Options{Constrain: mode})
		req := agentRequest(nil, false)
		req.MaxTokens = 12
		if mode == ConstrainAsRequested {
			req.Constrain = false
		}
		o := run(t, b, req, 0)
		if o.stats.GeneratedTokens > 12 {
			t.Errorf("mode %d: %d tokens generated, MaxTokens 12", mode, o.stats.GeneratedTokens)
		}
		if res := toolparse.Parse(o.content, toolparse.Options{}); len(res.Calls) != 0 {
			t.Errorf("mode %d: a random model produced a valid call unconstrained: %q", mode, o.content)
		}
	}
	// ConstrainOn overrides a request without the constraint.
	b := open(t, localtest.Model(t, 3), Options{Constrain: ConstrainOn})
	req := agentRequest(nil, false)
	req.Constrain = false
	o := run(t, b, req, 0)
	if res := toolparse.Parse(o.content, toolparse.Options{}); len(res.Calls) != 1 {
		t.Errorf("ConstrainOn: %q has no call", o.content)
	}
}

// The loop's thinking budget: CloseReasoning makes the next token
// </think>, the stream says so, and the answer follows.
func TestCloseReasoning(t *testing.T) {
	b := open(t, localtest.Model(t, 4), Options{})
	for _, after := range []int{1, 3, 8} {
		req := agentRequest(nil, true)
		req.Constrain = false
		req.MaxTokens = after + 6
		st, err := b.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		n, closedAt := 0, -1
		for {
			d, err := st.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.ReasoningClosed {
				closedAt = n
			}
			if d.Reasoning != "" && !d.ReasoningClosed {
				n++
				if closedAt >= 0 {
					t.Fatalf("reasoning after the close: %q", d.Reasoning)
				}
				if n == after {
					st.CloseReasoning()
				}
			}
		}
		stats := st.Stats()
		st.Close()
		if closedAt != after {
			t.Errorf("CloseReasoning after %d reasoning deltas: closed after %d", after, closedAt)
		}
		if stats.GeneratedTokens > req.MaxTokens {
			t.Errorf("%d tokens generated, MaxTokens %d", stats.GeneratedTokens, req.MaxTokens)
		}
	}
}

func TestCancel(t *testing.T) {
	b := open(t, localtest.Model(t, 5), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req := agentRequest(nil, true)
	req.MaxTokens = 1000
	req.Constrain = false
	st, err := b.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	// A second turn runs beside the first.
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	req2 := req
	req2.MaxTokens = 3
	st2, err := b.Chat(short, req2)
	if err != nil {
		t.Fatalf("Chat while a stream is open: %v", err)
	}
	if _, err := st2.Next(); err != nil {
		t.Fatalf("Next of a second turn while the first is open: %v", err)
	}
	st2.Close()
	cancel()
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v", err)
	}
	st.Close()
	if _, err := st.Next(); err == nil {
		t.Fatal("Next after Close succeeded")
	}
	// The backend goes on, reusing the prompt it had cached.
	req.MaxTokens = 3
	o := run(t, b, req, 0)
	if o.stats.CachedTokens == 0 {
		t.Error("the prompt cached before the cancel was not reused")
	}
}

// With a sliding window far shorter than a turn, the next step still
// reuses the cached prefix: the rings keep agentRingSlack positions beyond
// the window, so cutting the cache back past the previous turn's 260+
// generated tokens needs no recomputation, and the answer is what a fresh
// backend gives. (Cutting back further than the rings hold clears the
// cache; model/spark's tests cover that.)
func TestCacheReuseBeyondWindow(t *testing.T) {
	c := localtest.Config()
	c.Window = 8
	path := localtest.ModelWith(t, c, 6)
	b := open(t, path, Options{})
	req := agentRequest(nil, false)
	req.Constrain = false
	req.MaxTokens = 300
	first := run(t, b, req, 0)
	if first.stats.GeneratedTokens < 260 {
		t.Fatalf("the model stopped after %d tokens, too early to pass the window by far (pick another seed)", first.stats.GeneratedTokens)
	}
	req2 := agentRequest([]string{"tap index 0"}, false)
	req2.Constrain = false
	req2.MaxTokens = 8
	got := run(t, b, req2, 0)
	want := run(t, open(t, path, Options{}), req2, 0)
	if got.content != want.content {
		t.Errorf("with the cache reused %q, fresh %q", got.content, want.content)
	}
	if got.stats.CachedTokens == 0 || got.stats.CachedTokens >= got.stats.PromptTokens {
		t.Errorf("reused %d of %d prompt tokens", got.stats.CachedTokens, got.stats.PromptTokens)
	}
}

// An HF directory (safetensors, tokenizer.json, tokenizer_config.json with
// the template) loads and answers like a GGUF.
func TestOpenHFDir(t *testing.T) {
	dir := t.TempDir() + "/Spark-random-hf"
	if err := localtest.WriteHF(dir, localtest.Config(), 9); err != nil {
		t.Fatal(err)
	}
	b := open(t, dir, Options{})
	if b.Name() != "spark:Spark-random-hf" || len(b.Warnings()) != 0 {
		t.Errorf("Name %q, warnings %q", b.Name(), b.Warnings())
	}
	req := agentRequest(nil, true)
	o := run(t, b, req, 2)
	if res := toolparse.Parse(o.content, toolparse.Options{}); len(res.Calls) != 1 || len(res.Errors) != 0 {
		t.Errorf("answer %q parsed as %+v", o.content, res)
	}
	// The same text tokenizes the same as from the GGUF.
	g := open(t, localtest.Model(t, 9), Options{})
	text := "<｜start▁of▁sentence｜><|User|>Tap Wi-Fi, then 42 <tool_call>"
	if a, c := b.Tokenizer().Encode(text, true), g.Tokenizer().Encode(text, true); !slices.Equal(a, c) {
		t.Errorf("HF tokenizer %v, GGUF tokenizer %v", a, c)
	}
}
