package loop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
)

// MaxVote bounds Config.Vote: each chain is a sequence the model decodes
// alongside the others.
const MaxVote = 16

// chainSeed is the seed of chain i of a vote: chain 0 keeps the turn's
// own, so a vote's first chain is the turn without a vote.
func chainSeed(seed uint64, i int) uint64 {
	return seed ^ uint64(i)*0x9e3779b97f4a7c15
}

// askVote generates Config.Vote chains of the turn at once and takes the
// call most of them agree on. The backend gets the same request from every
// chain but the seed (an engine that serves them together computes the
// shared prompt once). The first chain's tokens are shown as they stream;
// the EvVote event holds every chain.
func (r *runner) askVote(ctx context.Context, msgs []model.Message) (call *action.Call, problems []string, answer string, err error) {
	n := r.cfg.Vote
	type result struct {
		t        turn
		think    bool
		err      error
		finished int
		calls    []action.Call
		info     *ParseInfo
	}
	res := make([]result, n)
	start := r.cfg.Now()
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := r.cfg.Sampling
			s.Seed = chainSeed(s.Seed, i)
			t, think, err := r.turnOf(ctx, msgs, chain{sampling: s, show: i == 0})
			mu.Lock()
			defer mu.Unlock()
			res[i] = result{t: t, think: think, err: err}
			if err == nil {
				done++
				res[i].finished = done
			}
		}()
	}
	wg.Wait()
	elapsed := r.cfg.Now().Sub(start)
	if ctx.Err() != nil {
		return nil, nil, "", ctx.Err()
	}

	info := &VoteInfo{Winner: -1, Chains: make([]ChainInfo, n)}
	var errs []error
	for i := range res {
		c := &info.Chains[i]
		c.Seed = chainSeed(r.cfg.Sampling.Seed, i)
		if res[i].err != nil {
			c.Error = res[i].err.Error()
			errs = append(errs, res[i].err)
			continue
		}
		res[i].calls, res[i].info = r.parsed(res[i].t, res[i].think)
		c.Parse = res[i].info
		c.Finished = res[i].finished
		c.GeneratedTokens = res[i].t.stats.GeneratedTokens
		if len(res[i].calls) > 0 {
			cc := res[i].calls[0]
			c.Call = &cc
		}
	}
	if len(errs) == n {
		// No chain came through: the error of the first is the turn's
		// (a broken stream is asked again by askRetrying).
		return nil, nil, "", errs[0]
	}
	if len(errs) > 0 {
		r.warn(fmt.Sprintf("%d of %d chains failed (%v); the others voted", len(errs), n, errors.Join(errs...)))
	}

	// The majority, ties to the call whose first chain finished first.
	type tally struct {
		votes, first int // first: the chain of the call that finished first
	}
	tallies := map[string]*tally{}
	for i, c := range info.Chains {
		if c.Call == nil {
			continue
		}
		k := c.Call.Format(r.cfg.Tools, strconv.Quote)
		t := tallies[k]
		if t == nil {
			t = &tally{first: i}
			tallies[k] = t
		}
		t.votes++
		if c.Finished < info.Chains[t.first].Finished {
			t.first = i
		}
	}
	for _, t := range tallies {
		w := info.Winner
		if w < 0 || t.votes > info.Votes || (t.votes == info.Votes && info.Chains[t.first].Finished < info.Chains[w].Finished) {
			info.Winner, info.Votes = t.first, t.votes
		}
	}
	generated := 0
	for _, c := range info.Chains {
		generated += c.GeneratedTokens
	}
	first := res[0].t.stats
	for _, x := range res {
		if x.err == nil {
			first = x.t.stats
			break
		}
	}
	r.emitVoteStats(first, generated, elapsed)
	r.emit(Event{Type: EvVote, Vote: info})

	// The turn is the winner's; without a usable call anywhere, the
	// first chain that finished speaks for the turn (its answer goes back
	// in the corrective prompt).
	w := info.Winner
	if w < 0 {
		for i, c := range info.Chains {
			if c.Finished > 0 && (w < 0 || c.Finished < info.Chains[w].Finished) {
				w = i
			}
		}
		p := res[w].info
		r.emit(Event{Type: EvToolCall, Parse: p})
		return nil, p.Errors, res[w].t.content, nil
	}
	c := *info.Chains[w].Call
	r.emit(Event{Type: EvToolCall, Call: &c, Parse: res[w].info})
	return &c, nil, res[w].t.content, nil
}

// emitVoteStats reports a voted turn's cost: the prompt as the first chain
// saw it, the tokens of every chain, generated in the time the vote took
// (so the rate is the chains' together).
func (r *runner) emitVoteStats(first model.Stats, generated int, elapsed time.Duration) {
	s := model.Stats{PromptTokens: first.PromptTokens, CachedTokens: first.CachedTokens, GeneratedTokens: generated,
		Prefill: first.Prefill, Decode: max(0, elapsed-first.Prefill)}
	r.emitStats(s)
}

// Summary says how a voted turn went, e.g. `tap(index=4) by 3 of 4
// chains; also swipe(direction="up") 1`, or `no chain had a usable call (4
// chains)`.
func (v *VoteInfo) Summary() string {
	n := len(v.Chains)
	counts := map[string]int{}
	var order []string
	failed := 0
	for _, c := range v.Chains {
		switch {
		case c.Error != "":
			failed++
		case c.Call != nil:
			k := c.Call.String()
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
		}
	}
	var b strings.Builder
	if v.Winner < 0 || v.Winner >= n || v.Chains[v.Winner].Call == nil {
		fmt.Fprintf(&b, "no chain had a usable call (%d chains)", n)
	} else {
		win := v.Chains[v.Winner].Call.String()
		fmt.Fprintf(&b, "%s by %d of %d chains", win, v.Votes, n)
		var others []string
		for _, k := range order {
			if k != win {
				others = append(others, fmt.Sprintf("%s %d", k, counts[k]))
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(&b, "; also %s", strings.Join(others, ", "))
		}
	}
	none := n - failed
	for _, c := range counts {
		none -= c
	}
	if none > 0 {
		fmt.Fprintf(&b, "; %d without a call", none)
	}
	if failed > 0 {
		fmt.Fprintf(&b, "; %d failed", failed)
	}
	return b.String()
}
