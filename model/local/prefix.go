package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/spark"
)

// What a turn's prompt shares with others, in the order prefill looks
// for it:
//
//   - the same prompt, asked at the same time by another turn (best-of-N
//     voting asks N times at once): the first computes it and shares it as
//     a spark.Prefix, the others fork it and take its logits (a flight);
//   - an ended turn's sequence whose tokens start the prompt (the same
//     conversation with more messages, or the same fixed prefix and task):
//     taken over and cut back to what the prompt shares with it;
//   - the fixed prefix, the rendered system message with the tool
//     schemas: the same at every step and in every run with the same
//     settings, computed once (a flight as well) or loaded from the prompt
//     cache on disk (Options.PromptCache), kept in memory and forked
//     read-only by every turn.
//
// A token's logits do not depend on which of these its positions came
// from (see spark.Engine), so neither do a turn's tokens.

// prefixLen returns how many of toks belong to the fixed prefix: the
// tokens shared with the rendering of the leading system messages alone
// (with req.Prefix when the caller rendered the prompt), or 0 when there
// is none.
func (b *Backend) prefixLen(req model.ChatRequest, toks []int) int {
	if req.Prompt != "" {
		return b.commonPrefix(req.Prefix, toks)
	}
	n := 0
	for n < len(req.Messages) && req.Messages[n].Role == model.RoleSystem {
		n++
	}
	if n == 0 || n == len(req.Messages) {
		return 0
	}
	text, err := chat.Render(req.Messages[:n], req.Tools, chat.Options{Thinking: req.Think})
	if err != nil {
		return 0
	}
	return b.commonPrefix(text, toks)
}

// commonPrefix returns how many of toks the tokens of prefix start with,
// leaving at least the last of toks to compute.
func (b *Backend) commonPrefix(prefix string, toks []int) int {
	if prefix == "" {
		return 0
	}
	pre := b.tok.Encode(prefix, true)
	p := 0
	for p < len(pre) && p < len(toks)-1 && pre[p] == toks[p] {
		p++
	}
	return p
}

// fixedPrefix is a fixed prefix in memory.
type fixedPrefix struct {
	tokens []int
	p      *spark.Prefix
}

// flight is a prompt or prefix being computed by one turn that others
// asking for the same wait for.
type flight struct {
	done    chan struct{}
	waiters int // guarded by Backend.mu
	p       *spark.Prefix
	logits  []float32 // a prompt's: the logits of its last token
}

// prefilled is a turn's sequence after its prompt.
type prefilled struct {
	seq          *spark.Seq
	logits       []float32
	cached, disk int // prompt tokens not computed now, of them loaded from disk
}

// prefill makes a sequence hold the prompt toks and returns it with the
// logits of its last token.
func (b *Backend) prefill(ctx context.Context, req model.ChatRequest, toks []int) (prefilled, error) {
	key := "prompt:" + string(tokenBytes(toks))
	f, lead := b.board(key)
	if !lead {
		if p, lg, err := b.wait(ctx, f); err == nil && p != nil {
			seq, err := b.eng.Fork(p)
			if err != nil {
				return prefilled{}, err
			}
			return prefilled{seq: seq, logits: slices.Clone(lg), cached: len(toks)}, nil
		} else if ctx.Err() != nil {
			return prefilled{}, ctx.Err()
		}
		// The first one failed: compute it here.
	}
	out, err := b.compute(ctx, req, toks)
	if lead {
		b.land(key, f, func() (*spark.Prefix, []float32) {
			if err != nil {
				return nil, nil
			}
			p, err := out.seq.Share()
			if err != nil {
				return nil, nil
			}
			return p, slices.Clone(out.logits)
		})
	}
	return out, err
}

// compute prefills toks from the best starting point: an ended turn's
// sequence, the fixed prefix, or nothing.
func (b *Backend) compute(ctx context.Context, req model.ChatRequest, toks []int) (prefilled, error) {
	pre := b.prefixLen(req, toks)
	var out prefilled
	seq, held := b.takeIdle(toks, pre)
	computed := 0 // prompt tokens computed here before the suffix
	if held < pre {
		p, src, err := b.fixedPrefix(ctx, toks[:pre])
		if err != nil {
			if seq != nil {
				b.park(seq)
			}
			return out, fmt.Errorf("prefill the %d prompt tokens of the fixed prefix: %w", pre, err)
		}
		if seq == nil {
			seq, err = b.eng.Fork(p)
		} else {
			err = seq.Rebase(p)
		}
		if err != nil {
			return out, err
		}
		held = pre
		switch src {
		case fromDisk:
			out.disk = pre
		case fromHere:
			computed = pre
		}
	}
	if seq == nil {
		seq = b.eng.NewSeq()
	}
	logits, err := b.sched.Eval(ctx, seq, toks[held:], spark.LogitsLast, nil)
	if err != nil {
		seq.Close()
		return out, fmt.Errorf("prefill %d prompt tokens: %w", len(toks)-held, err)
	}
	out.seq, out.logits, out.cached = seq, logits, held-computed
	return out, nil
}

// board returns the flight for key, creating it (lead) if there is none.
func (b *Backend) board(key string) (f *flight, lead bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.flights[key]; f != nil {
		f.waiters++
		return f, false
	}
	f = &flight{done: make(chan struct{})}
	b.flights[key] = f
	return f, true
}

// wait waits for flight f's prefix (nil if its turn failed).
func (b *Backend) wait(ctx context.Context, f *flight) (*spark.Prefix, []float32, error) {
	select {
	case <-f.done:
		return f.p, f.logits, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// land ends flight f; share makes its prefix and logits if anyone waits
// (nil when the turn failed).
func (b *Backend) land(key string, f *flight, share func() (*spark.Prefix, []float32)) {
	b.mu.Lock()
	delete(b.flights, key)
	waiters := f.waiters
	b.mu.Unlock()
	if waiters > 0 {
		f.p, f.logits = share()
	}
	close(f.done)
}

// prefixSource says where a fixed prefix came from.
type prefixSource int

const (
	fromMemory prefixSource = iota // computed or loaded before, or by another turn
	fromDisk                       // loaded from the prompt cache now
	fromHere                       // computed now by this turn
)

// fixedPrefix returns the fixed prefix toks as a spark.Prefix: from memory,
// from the prompt cache on disk, or computed now (once, whoever asks).
func (b *Backend) fixedPrefix(ctx context.Context, toks []int) (p *spark.Prefix, src prefixSource, err error) {
	b.mu.Lock()
	for i, fp := range b.prefixes {
		if slices.Equal(fp.tokens, toks) {
			b.prefixes = append(append(b.prefixes[:i:i], b.prefixes[i+1:]...), fp)
			b.mu.Unlock()
			return fp.p, fromMemory, nil
		}
	}
	b.mu.Unlock()
	key := "prefix:" + string(tokenBytes(toks))
	f, lead := b.board(key)
	if !lead {
		if p, _, err := b.wait(ctx, f); err != nil || p != nil {
			return p, fromMemory, err
		}
		// The first one failed: try here.
	}
	var disk bool
	p, disk, err = b.loadOrCompute(ctx, toks)
	if lead {
		f.p = p
		b.mu.Lock()
		delete(b.flights, key)
		b.mu.Unlock()
		close(f.done)
	}
	if err != nil {
		return nil, fromMemory, err
	}
	src = fromHere
	if disk {
		src = fromDisk
	}
	b.mu.Lock()
	b.prefixes = append(b.prefixes, &fixedPrefix{tokens: slices.Clone(toks), p: p})
	if len(b.prefixes) > maxPrefixes {
		b.prefixes = slices.Delete(b.prefixes, 0, 1)
	}
	b.mu.Unlock()
	return p, src, nil
}

// loadOrCompute loads the prefix toks from the prompt cache or computes it
// (and stores it there).
func (b *Backend) loadOrCompute(ctx context.Context, toks []int) (*spark.Prefix, bool, error) {
	key := ""
	if b.cache != nil && b.identity != nil {
		key = kvcache.Key(b.identity, []byte(b.eng.Numerics()), tokenBytes(toks), []byte(b.tok.Decode(toks)))
		if data, ok := b.cache.Load(key); ok {
			st, err := spark.DecodeState(data)
			if err == nil && !slices.Equal(st.Tokens, toks) {
				err = fmt.Errorf("it holds other tokens")
			}
			var p *spark.Prefix
			if err == nil {
				p, err = b.eng.NewPrefix(st)
			}
			if err == nil {
				return p, true, nil
			}
			b.warn(fmt.Sprintf("prompt cache entry %s ignored (%v); it will be rebuilt", key[:12], err))
		}
	}
	seq := b.eng.NewSeq()
	if _, err := b.sched.Eval(ctx, seq, toks, spark.LogitsNone, nil); err != nil {
		seq.Close()
		return nil, false, err
	}
	p, err := seq.Share()
	seq.Close()
	if err != nil {
		return nil, false, err
	}
	if key != "" {
		meta := kvcache.Meta{Model: filepath.Base(b.path), Tokens: len(toks), KV: b.eng.KV().String(), Created: time.Now().UTC()}
		if err := b.cache.Store(key, meta, p.State().Encode()); err != nil {
			b.warn(err.Error())
		}
	}
	return p, false, nil
}

// takeIdle takes the ended turn's sequence that shares the most of toks
// with them, at least the pre tokens of the fixed prefix (or one if there
// is none), cut back to what it shares; (nil, 0) when none does.
func (b *Backend) takeIdle(toks []int, pre int) (*spark.Seq, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	best, bestN := -1, 0
	for i, seq := range b.idle {
		if n := seq.Common(toks); n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 || bestN < max(pre, 1) {
		return nil, 0
	}
	seq := b.idle[best]
	b.idle = slices.Delete(b.idle, best, best+1)
	return seq, seq.Truncate(bestN)
}

// park keeps an ended turn's sequence for a later turn that continues it,
// closing the oldest beyond Options.IdleSequences.
func (b *Backend) park(seq *spark.Seq) {
	b.sched.Release(seq)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		seq.Close()
		return
	}
	b.idle = append(b.idle, seq)
	var drop *spark.Seq
	if len(b.idle) > b.opts.IdleSequences {
		drop = b.idle[0]
		b.idle = slices.Delete(b.idle, 0, 1)
	}
	b.mu.Unlock()
	if drop != nil {
		drop.Close()
	}
}

func tokenBytes(toks []int) []byte {
	out := make([]byte, 0, 4*len(toks))
	for _, t := range toks {
		out = binary.LittleEndian.AppendUint32(out, uint32(t))
	}
	return out
}
