package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/droidgo/droidgo/config"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/local"
	"github.com/droidgo/droidgo/model/local/localtest"
)

// prefillCounter wraps the in-process backend and records how many tokens
// the engine computed for each prompt (read off the engine's own counter,
// not the backend's stats, so the two can be checked against each other).
type prefillCounter struct {
	*local.Backend
	mu        sync.Mutex
	prefilled []int64
	reqs      []model.ChatRequest
}

func (p *prefillCounter) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	before := p.Prefilled()
	st, err := p.Backend.Chat(ctx, req)
	p.mu.Lock()
	p.prefilled = append(p.prefilled, p.Prefilled()-before)
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	return st, err
}

// countLocal makes the harness's --model FILE open the real in-process
// backend wrapped in a prefillCounter.
func countLocal(h *harness) *[]*prefillCounter {
	var opened []*prefillCounter
	h.setup = func(d *deps) {
		open := d.modelOpeners["file"]
		d.modelOpeners["file"] = func(ctx context.Context, spec string, cfg *config.Config) (model.Backend, error) {
			b, err := open(ctx, spec, cfg)
			if err != nil {
				return nil, err
			}
			p := &prefillCounter{Backend: b.(*local.Backend)}
			opened = append(opened, p)
			return p, nil
		}
	}
	return &opened
}

// A tiny random Spark model with Spark's special tokens drives a simulated
// run end to end through the real backend: the decisions are garbage, but
// the template, tokenizer, prefill, cache reuse across steps, streaming,
// the thinking budget, the constraint and parsing all run. Every step's
// answer is a valid call (the constraint), and every step after the first
// prefills only a fraction of its prompt.
func TestRunLocalModel(t *testing.T) {
	t.Parallel()
	path := localtest.Model(t, 7)
	for _, think := range []bool{true, false} {
		t.Run("think="+strconv.FormatBool(think), func(t *testing.T) {
			t.Parallel()
			runLocalModel(t, path, think)
		})
	}
}

func runLocalModel(t *testing.T, path string, think bool) {
	{
		h := newHarness(t)
		opened := countLocal(h)
		args := []string{"run", "--sim", "wifi", "--model", path, "--json", "--max-steps", "3", "--think-budget", "6"}
		if !think {
			args = append(args, "--no-think")
		}
		r := h.run(context.Background(), args...)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("think=%v: exit %d: %s", think, r.code, r.stderr)
		}
		if len(*opened) != 1 {
			t.Fatalf("think=%v: the file opener ran %d times", think, len(*opened))
		}
		counts := (*opened)[0].prefilled

		var stats []loop.StatsInfo
		var calls []action.Call
		thinking, answers, closedByBudget := 0, 0, 0
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var ev loop.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("bad JSON line %q: %v", line, err)
			}
			switch ev.Type {
			case loop.EvRunStarted:
				if ev.Model != "spark:spark-rich-7.gguf" {
					t.Errorf("model name %q", ev.Model)
				}
			case loop.EvModelStats:
				stats = append(stats, *ev.Stats)
			case loop.EvThinking:
				thinking++
			case loop.EvAnswer:
				answers++
			case loop.EvWarning:
				if strings.Contains(ev.Text, "thinking reached the budget") {
					closedByBudget++
				}
			case loop.EvToolCall:
				if ev.Call == nil {
					t.Errorf("think=%v step %d: no usable call: %+v", think, ev.Step, ev.Parse)
					continue
				}
				// Recoveries may remain: the constraint allows spaces
				// around string values, which the parser trims.
				if ev.Parse.Format != "native" || len(ev.Parse.Errors) != 0 {
					t.Errorf("think=%v step %d: call %s parsed as %q with errors %q", think, ev.Step, ev.Call, ev.Parse.Format, ev.Parse.Errors)
				}
				calls = append(calls, *ev.Call)
			}
		}
		if len(stats) < 2 || len(stats) != len(counts) {
			t.Fatalf("think=%v: %d model turns in the events, %d prompts prefilled; want at least 2 and equal", think, len(stats), len(counts))
		}
		tok := (*opened)[0].Tokenizer()
		var prev []int
		for i, s := range stats {
			req := (*opened)[0].reqs[i]
			if req.Think != think || !req.Constrain || len(req.ValidIndices) == 0 {
				t.Errorf("think=%v turn %d: request with think=%v constrain=%v indices %v", think, i, req.Think, req.Constrain, req.ValidIndices)
			}
			text, err := chat.Render(req.Messages, req.Tools, chat.Options{Thinking: think, AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode(text, true)
			shared := commonPrefix(prev, ids)
			prev = ids
			t.Logf("think=%v turn %d: prompt %d tokens (%d shared with the last prompt), cached %d, engine prefilled %d, generated %d",
				think, i, s.PromptTokens, shared, s.CachedTokens, counts[i], s.GeneratedTokens)
			if s.PromptTokens != len(ids) {
				t.Errorf("think=%v turn %d: %d prompt tokens, the rendered prompt has %d", think, i, s.PromptTokens, len(ids))
			}
			if counts[i] != int64(s.PromptTokens-s.CachedTokens) {
				t.Errorf("think=%v turn %d: engine prefilled %d, stats say %d-%d", think, i, counts[i], s.PromptTokens, s.CachedTokens)
			}
			// Everything the prompt shares with the last one is reused
			// (the cache also holds the last answer, so it may reuse more).
			if s.CachedTokens < shared || (i > 0 && s.CachedTokens == 0) {
				t.Errorf("think=%v turn %d: %d tokens reused, the prompts share %d", think, i, s.CachedTokens, shared)
			}
		}
		if len(calls) != len(stats) {
			t.Errorf("think=%v: %d calls for %d turns", think, len(calls), len(stats))
		}
		if answers == 0 {
			t.Errorf("think=%v: no answer was streamed", think)
		}
		if think && (thinking == 0 || closedByBudget == 0) {
			t.Errorf("thinking streamed %d times, closed by the budget %d times", thinking, closedByBudget)
		}
		if !think && thinking != 0 {
			t.Errorf("--no-think streamed %d reasoning events", thinking)
		}
	}
}

var chatStatsLine = regexp.MustCompile(`\(prompt (\d+) tokens, (\d+) cached; (\d+) generated;`)

// model chat reads lines from a pipe, streams the reasoning and the answer
// of each reply, and keeps the conversation in the cache.
func TestModelChat(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := localtest.Model(t, 8)
	var out, errb bytes.Buffer
	in := strings.NewReader("Hello there\n\nWhat is the capital of France?\n/quit\nnot read\n")
	code := executeWith(h.deps(context.Background(), in, &out, &errb), []string{"model", "chat", path, "--greedy", "--max-tokens", "12"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "thinking: "); n != 2 {
		t.Errorf("%d replies with reasoning, want 2:\n%s", n, out.String())
	}
	m := chatStatsLine.FindAllStringSubmatch(errb.String(), -1)
	if len(m) != 2 {
		t.Fatalf("%d cost lines on stderr, want 2:\n%s", len(m), errb.String())
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if num(m[0][2]) != 0 || num(m[1][2]) == 0 || num(m[1][2]) >= num(m[1][1]) {
		t.Errorf("cached tokens per turn: %s of %s, then %s of %s", m[0][2], m[0][1], m[1][2], m[1][1])
	}
	for _, x := range m {
		if g := num(x[3]); g < 1 || g > 12 {
			t.Errorf("%d tokens generated with --max-tokens 12", g)
		}
	}

	// --no-think: no reasoning; bad flags are usage errors.
	out.Reset()
	errb.Reset()
	code = executeWith(h.deps(context.Background(), strings.NewReader("Hi\n"), &out, &errb), []string{"model", "chat", path, "--no-think", "--seed", "3", "--max-tokens", "5"})
	if code != 0 || strings.Contains(out.String(), "thinking: ") || out.Len() == 0 {
		t.Errorf("--no-think: exit %d, output %q, stderr %q", code, out.String(), errb.String())
	}
	for _, args := range [][]string{{"--temp", "-1"}, {"--top-p", "0"}, {"--max-tokens", "0"}} {
		code := executeWith(h.deps(context.Background(), strings.NewReader(""), &out, &errb), append([]string{"model", "chat", path}, args...))
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := executeWith(h.deps(ctx, strings.NewReader("hi\n"), &out, &errb), []string{"model", "chat", path, "--max-tokens", "5"}); code != 130 {
		t.Errorf("interrupted chat: exit %d, want 130", code)
	}
	if code := executeWith(h.deps(context.Background(), strings.NewReader("hi\n"), &out, &errb), []string{"model", "chat", path + ".missing"}); code != 1 {
		t.Errorf("missing model: exit %d, want 1", code)
	}
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestRunVoteLocalModel: with --vote 3 every turn of a run on the in-process
// engine is three chains; the vote events hold them all (distinct seeds,
// each a usable call under the constraint), the call of each step is the
// winner's, and the plain output says how the chains voted.
func TestRunVoteLocalModel(t *testing.T) {
	t.Parallel()
	path := localtest.Model(t, 9)
	r := newHarness(t).run(context.Background(), "run", "--sim", "wifi", "--model", path, "--json", "--max-steps", "2", "--think-budget", "8", "--vote", "3", "--seed", "5")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var votes []*loop.VoteInfo
	var calls []*action.Call
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev loop.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		switch ev.Type {
		case loop.EvVote:
			votes = append(votes, ev.Vote)
		case loop.EvToolCall:
			if len(votes) != len(calls)+1 {
				t.Fatalf("a tool_call without its vote before it")
			}
			calls = append(calls, ev.Call)
		}
	}
	if len(votes) == 0 {
		t.Fatalf("no vote events:\n%s", r.stdout)
	}
	for i, v := range votes {
		seeds := map[uint64]bool{}
		for _, c := range v.Chains {
			seeds[c.Seed] = true
			if c.Call == nil || c.Parse == nil || c.Parse.Raw == "" {
				t.Errorf("vote %d: chain %+v", i, c)
			}
		}
		if len(v.Chains) != 3 || len(seeds) != 3 || v.Winner < 0 || v.Votes < 1 {
			t.Fatalf("vote %d: %+v", i, v)
		}
		if calls[i] == nil || calls[i].String() != v.Chains[v.Winner].Call.String() {
			t.Errorf("step call %v is not the winner's %v", calls[i], v.Chains[v.Winner].Call)
		}
	}
	plain := newHarness(t).run(context.Background(), "run", "--sim", "wifi", "--model", path, "--no-tui", "--max-steps", "1", "--think-budget", "8", "--vote", "2")
	if !strings.Contains(plain.stdout, "  vote:     ") || !strings.Contains(plain.stdout, " of 2 chains") {
		t.Errorf("no vote line:\n%s", plain.stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", scriptFor("wifi", "0"), "--vote", "2"}, "needs a model that samples"},
		{[]string{"--model", path, "--vote", "17"}, "vote"},
		{[]string{"--model", path, "--vote", "0"}, "vote"},
	} {
		r := newHarness(t).run(context.Background(), append([]string{"run", "--sim", "wifi", "--no-tui"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, r.code, r.stderr)
		}
	}
}
