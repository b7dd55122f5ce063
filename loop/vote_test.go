package loop

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
)

// seedBackend answers each turn by the request's seed: chains of a vote
// differ only in their seeds. release, when set, holds the end of a
// seed's turn until its channel closes, to order how the chains finish.
type seedBackend struct {
	answer  func(seed uint64) (string, error)
	release map[uint64]chan struct{}

	mu    sync.Mutex
	seeds []uint64
	reqs  []model.ChatRequest
}

func (b *seedBackend) Name() string { return "fake:seeds" }

func (b *seedBackend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	b.mu.Lock()
	b.seeds = append(b.seeds, req.Sampling.Seed)
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	text, err := b.answer(req.Sampling.Seed)
	if err != nil {
		return nil, err
	}
	reasoning, answer, _ := strings.Cut(text, "</think>")
	var ds []model.Delta
	for _, w := range strings.SplitAfter(reasoning, " ") {
		ds = append(ds, model.Delta{Reasoning: w})
	}
	ds = append(ds, model.Delta{ReasoningClosed: true}, model.Delta{Content: answer})
	return &seedStream{ctx: ctx, ds: ds, hold: b.release[req.Sampling.Seed]}, nil
}

type seedStream struct {
	ctx  context.Context
	ds   []model.Delta
	n    int
	hold chan struct{}
}

func (s *seedStream) Next() (model.Delta, error) {
	if s.n == len(s.ds) {
		if s.hold != nil {
			select {
			case <-s.hold:
			case <-s.ctx.Done():
				return model.Delta{}, s.ctx.Err()
			}
		}
		return model.Delta{}, io.EOF
	}
	s.n++
	return s.ds[s.n-1], nil
}

func (s *seedStream) CloseReasoning() error { return model.ErrUnsupported }
func (s *seedStream) Close() error          { return nil }
func (s *seedStream) Stats() model.Stats    { return model.Stats{PromptTokens: 100, GeneratedTokens: s.n} }

// voteRun runs one step's decision with Vote chains on the fake phone.
func voteRun(t *testing.T, b *seedBackend, vote int) run {
	t.Helper()
	return runTurns(t, nil, nil, func(c *Config) {
		c.Model = b
		c.Vote = vote
		c.MaxSteps = 1
		c.Sampling = model.Sampling{Temperature: 1, Seed: 42}
	})
}

func seedIndex(seed uint64, vote int) int {
	for i := range vote {
		if chainSeed(42, i) == seed {
			return i
		}
	}
	return -1
}

// TestVoteMajority: four chains, three agree: their call is taken, the
// first chain's tokens are the ones shown, and every chain is in the
// vote event.
func TestVoteMajority(t *testing.T) {
	b := &seedBackend{answer: func(seed uint64) (string, error) {
		if seedIndex(seed, 4) == 0 {
			return thinkThen("chain zero thinks the Clock is it.", call("tap", "index", "1")), nil
		}
		return thinkThen("Settings has Wi-Fi.", call("tap", "index", "0")), nil
	}}
	r := voteRun(t, b, 4)
	votes := r.of(EvVote)
	if len(votes) != 1 {
		t.Fatalf("%d vote events", len(votes))
	}
	v := votes[0].Vote
	if len(v.Chains) != 4 || v.Votes != 3 || v.Winner == 0 || v.Chains[v.Winner].Call.String() != "tap(index=0)" {
		t.Errorf("vote %+v", v)
	}
	for i, c := range v.Chains {
		if c.Seed != chainSeed(42, i) || c.Parse == nil || c.Parse.Raw == "" || c.Finished == 0 || c.GeneratedTokens == 0 {
			t.Errorf("chain %d: %+v", i, c)
		}
	}
	if v.Chains[0].Seed != 42 {
		t.Errorf("the first chain's seed is %d, not the turn's", v.Chains[0].Seed)
	}
	calls := r.of(EvToolCall)
	if len(calls) != 1 || calls[0].Call.String() != "tap(index=0)" {
		t.Errorf("tool_call events %+v", calls)
	}
	var shown strings.Builder
	for _, e := range r.of(EvThinking) {
		shown.WriteString(e.Text)
	}
	if shown.String() != "chain zero thinks the Clock is it." {
		t.Errorf("shown thinking %q: the first chain's only", shown.String())
	}
	if st := r.of(EvModelStats); len(st) != 1 || st[0].Stats.GeneratedTokens != v.Chains[0].GeneratedTokens+3*v.Chains[1].GeneratedTokens {
		t.Errorf("model_stats %+v", st)
	}
	if got := r.phone.actions; len(got) != 1 || !strings.HasPrefix(got[0], "tap") {
		t.Errorf("actions %v", got)
	}
	if s := v.Summary(); s != "tap(index=0) by 3 of 4 chains; also tap(index=1) 1" {
		t.Errorf("summary %q", s)
	}
	// Every chain asked for the same turn but its seed.
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, req := range b.reqs[1:] {
		a, c := req, b.reqs[0]
		a.Sampling.Seed, c.Sampling.Seed = 0, 0
		if a.Think != c.Think || a.MaxTokens != c.MaxTokens || a.Sampling != c.Sampling || len(a.Messages) != len(c.Messages) || a.Messages[1].Content != c.Messages[1].Content {
			t.Errorf("chain requests differ beyond the seed:\n%+v\n%+v", a, c)
		}
	}
}

// TestVoteTieGoesToFirstFinished: two calls with two chains each: the
// call whose chain finished first is taken.
func TestVoteTieGoesToFirstFinished(t *testing.T) {
	for _, first := range []int{1, 2} {
		rel := map[uint64]chan struct{}{}
		for i := range 4 {
			rel[chainSeed(42, i)] = make(chan struct{})
		}
		// Finishing order: first, then the others in turn, each once the
		// one before is surely counted.
		order := []int{first}
		for i := range 4 {
			if i != first {
				order = append(order, i)
			}
		}
		go func() {
			for _, i := range order {
				close(rel[chainSeed(42, i)])
				time.Sleep(100 * time.Millisecond)
			}
		}()
		b := &seedBackend{release: rel, answer: func(seed uint64) (string, error) {
			if seedIndex(seed, 4)%2 == 0 {
				return thinkThen("even.", call("tap", "index", "0")), nil
			}
			return thinkThen("odd.", call("tap", "index", "1")), nil
		}}
		r := voteRun(t, b, 4)
		v := r.of(EvVote)[0].Vote
		want := map[int]string{1: "tap(index=1)", 2: "tap(index=0)"}[first]
		if v.Winner != first || v.Votes != 2 || v.Chains[v.Winner].Finished != 1 || r.of(EvToolCall)[0].Call.String() != want {
			t.Errorf("first to finish %d: winner %d (%+v)", first, v.Winner, v)
		}
	}
}

// TestVoteWithoutCalls: no chain has a usable call: the step gets its
// corrective turn (voted too), whose majority call then runs.
func TestVoteWithoutCalls(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	b := &seedBackend{answer: func(seed uint64) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if asked <= 3 {
			return thinkThen("hmm.", "I am not sure."), nil
		}
		return thinkThen("ok.", call("tap", "index", "0")), nil
	}}
	r := voteRun(t, b, 3)
	votes := r.of(EvVote)
	if len(votes) != 2 || votes[0].Vote.Winner != -1 || votes[1].Vote.Votes != 3 {
		t.Fatalf("votes %+v", votes)
	}
	if s := votes[0].Vote.Summary(); s != "no chain had a usable call (3 chains); 3 without a call" {
		t.Errorf("summary %q", s)
	}
	if calls := r.of(EvToolCall); len(calls) != 2 || calls[0].Call != nil || calls[1].Call == nil {
		t.Errorf("tool_call events %+v", calls)
	}
	if !strings.Contains(r.lastUserPrompt(), "no valid tool call") {
		t.Errorf("no corrective prompt: %q", r.lastUserPrompt())
	}
}

// TestVoteChainFails: a chain whose request fails does not vote; the
// others still decide, with a warning.
func TestVoteChainFails(t *testing.T) {
	b := &seedBackend{answer: func(seed uint64) (string, error) {
		if seedIndex(seed, 3) == 1 {
			return "", errors.New("out of sequences")
		}
		return thinkThen("Settings.", call("tap", "index", "0")), nil
	}}
	r := voteRun(t, b, 3)
	v := r.of(EvVote)[0].Vote
	if v.Votes != 2 || v.Chains[1].Error == "" || v.Chains[1].Finished != 0 {
		t.Errorf("vote %+v", v)
	}
	if !strings.Contains(r.warnings(), "1 of 3 chains failed") {
		t.Errorf("warnings: %s", r.warnings())
	}
	if s := v.Summary(); s != "tap(index=0) by 2 of 3 chains; 1 failed" {
		t.Errorf("summary %q", s)
	}
	_ = action.Tap
}
