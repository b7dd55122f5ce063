package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/local/localtest"
)

// atInvariantLevel runs the rest of the test at the highest kernel level of
// this CPU that claims batch invariance (kernels.BatchInvariant; generic
// always does): only there is a turn's every token independent of the turns
// beside it, bit for bit. Elsewhere (avx512, amx, arm64) a token's last bits
// depend on how many tokens its pass held, and a greedy or sampled token can
// follow them.
func atInvariantLevel(t *testing.T) {
	t.Helper()
	orig := kernels.ISA()
	t.Cleanup(func() { kernels.SetISA(orig) })
	ls := kernels.Levels()
	for i := len(ls) - 1; i >= 0; i-- {
		if err := kernels.SetISA(ls[i]); err != nil {
			t.Fatal(err)
		}
		if kernels.BatchInvariant() {
			return
		}
	}
}

// manyRequests are agent turns with different histories and sampling: the
// same fixed prefix, then their own tokens.
func manyRequests(n int) []model.ChatRequest {
	var reqs []model.ChatRequest
	for i := range n {
		var hist []string
		for j := range i % 3 {
			hist = append(hist, fmt.Sprintf("tap index %d", j+i))
		}
		req := agentRequest(hist, i%2 == 0)
		req.MaxTokens = 24 + i
		if i%3 == 1 {
			req.Sampling = model.Sampling{Temperature: 1, TopP: 0.95, Seed: uint64(7 + i)}
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// runAll runs the requests at once, one goroutine each (the thinking of
// even ones closed after 3 deltas, like a budget), and returns their turns.
func runAll(t *testing.T, b *Backend, reqs []model.ChatRequest) []turnOut {
	t.Helper()
	outs := make([]turnOut, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = run(t, b, req, 3*(1-i%2))
		}()
	}
	wg.Wait()
	return outs
}

// Turns running at once on one backend produce exactly what each produces
// alone (greedy and seeded sampling, constrained answers, thinking closed
// by a budget), and the fixed prefix is computed once for all of them.
func TestConcurrentTurnsMatchAlone(t *testing.T) {
	atInvariantLevel(t)
	path := localtest.Model(t, 2)
	reqs := manyRequests(6)
	b := open(t, path, Options{})
	got := runAll(t, b, reqs)
	pre := b.prefixLen(reqs[0], b.tok.Encode(renderT(t, reqs[0]), true))
	computed := b.Prefilled()
	var own int64
	for _, o := range got {
		own += int64(o.stats.PromptTokens - pre + o.stats.GeneratedTokens)
	}
	if computed > own+int64(pre) {
		t.Errorf("computed %d tokens for 6 turns; their own tokens and one prefix of %d are %d", computed, pre, own+int64(pre))
	}
	st := b.sched.Stats()
	multi := int64(0)
	for k := 1; k < len(st.Rows); k++ {
		multi += st.Rows[k]
	}
	if multi == 0 {
		t.Errorf("no pass computed two turns at once: %+v", st)
	}
	for i, req := range reqs {
		want := run(t, open(t, path, Options{}), req, 3*(1-i%2))
		if got[i].reasoning != want.reasoning || got[i].content != want.content {
			t.Errorf("turn %d: beside the others %q / %q, alone %q / %q", i, got[i].reasoning, got[i].content, want.reasoning, want.content)
		}
	}
}

// Best of N: the same request N times at once (different seeds) computes
// the prompt once; with the same seed the N turns are the same turn.
func TestSamePromptComputedOnce(t *testing.T) {
	atInvariantLevel(t)
	path := localtest.Model(t, 3)
	b := open(t, path, Options{})
	req := agentRequest([]string{"tap index 2"}, true)
	req.MaxTokens = 20
	// Warm the fixed prefix, so the count below is the prompt's own part.
	run(t, b, agentRequest(nil, false), 0)
	before := b.Prefilled()
	reqs := make([]model.ChatRequest, 4)
	for i := range reqs {
		reqs[i] = req
		reqs[i].Sampling = model.Sampling{Temperature: 1, TopP: 0.9, Seed: uint64(1 + i%2)}
	}
	outs := runAll(t, b, reqs)
	var gen int64
	for _, o := range outs {
		gen += int64(o.stats.GeneratedTokens)
	}
	prompt := int64(outs[0].stats.PromptTokens)
	if computed := b.Prefilled() - before; computed > prompt+gen {
		t.Errorf("4 identical prompts of %d tokens computed %d tokens (%d generated): the prompt more than once", prompt, computed, gen)
	}
	if outs[0].reasoning != outs[2].reasoning || outs[0].content != outs[2].content {
		t.Errorf("the same seed gave %q and %q", outs[0].content, outs[2].content)
	}
	full := 0
	for _, o := range outs {
		if o.stats.CachedTokens == o.stats.PromptTokens {
			full++
		}
	}
	if full == 0 {
		t.Errorf("no turn took the shared prompt: cached %d %d %d %d of %d", outs[0].stats.CachedTokens, outs[1].stats.CachedTokens, outs[2].stats.CachedTokens, outs[3].stats.CachedTokens, prompt)
	}
	alone := run(t, open(t, path, Options{}), reqs[1], 0)
	if alone.content != outs[1].content || alone.reasoning != outs[1].reasoning {
		t.Errorf("seed 2 alone %q, beside the others %q", alone.content, outs[1].content)
	}
}

// Cancelling a turn returns at once and frees its sequence; the others go
// on; Close ends open turns and refuses new ones.
func TestCancelFreesSequence(t *testing.T) {
	b := open(t, localtest.Model(t, 5), Options{})
	req := agentRequest(nil, true)
	req.Constrain = false
	req.MaxTokens = 2000
	ctx, cancel := context.WithCancel(context.Background())
	st, err := b.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	seq := st.(*stream).seq
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Next(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Next after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled turn did not stop")
	}
	if seq.Bytes() != 0 || seq.Len() != 0 {
		t.Errorf("the cancelled turn's sequence holds %d bytes, %d positions", seq.Bytes(), seq.Len())
	}
	b.mu.Lock()
	for _, s := range b.idle {
		if s == seq {
			t.Error("the cancelled turn's sequence was kept for reuse")
		}
	}
	b.mu.Unlock()
	st.Close()
	for range 3 {
		if _, err := other.Next(); err != nil {
			t.Fatalf("the other turn after the cancel: %v", err)
		}
	}
	b.Close()
	if _, err := other.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Next after the backend closed: %v", err)
	}
	if _, err := b.Chat(context.Background(), req); !errors.Is(err, errClosed) {
		t.Errorf("Chat after Close: %v", err)
	}
}

// A request rendered already (Prompt, with its fixed part in Prefix, as
// droidgo serve sends it) is the same turn as the messages it renders, and
// shares the fixed prefix with them.
func TestRenderedPrompt(t *testing.T) {
	path := localtest.Model(t, 4)
	b := open(t, path, Options{})
	req := agentRequest([]string{"tap index 1"}, false)
	want := run(t, b, req, 0)
	text, err := b.render(req)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := chat.Render(req.Messages[:1], req.Tools, chat.Options{Thinking: req.Think})
	if err != nil {
		t.Fatal(err)
	}
	r2 := req
	r2.Messages, r2.Prompt, r2.Prefix = nil, text, pre
	if n := b.prefixLen(r2, b.tok.Encode(text, true)); n == 0 || n != b.prefixLen(req, b.tok.Encode(text, true)) {
		t.Errorf("the fixed prefix of the rendered prompt has %d tokens, of the messages %d", n, b.prefixLen(req, b.tok.Encode(text, true)))
	}
	got := run(t, open(t, path, Options{}), r2, 0)
	if got.content != want.content || got.stats.PromptTokens != want.stats.PromptTokens {
		t.Errorf("rendered prompt: %q (%d tokens), messages: %q (%d tokens)", got.content, got.stats.PromptTokens, want.content, want.stats.PromptTokens)
	}
}
