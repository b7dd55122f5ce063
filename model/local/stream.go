package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/sample"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/tokenizer"
)

func newSampler(cfg model.Sampling) *sample.Sampler { return sample.New(cfg) }

// stream generates one assistant turn on its own sequence. Tokens are
// produced on demand by Next, on the caller's goroutine: a delta is
// returned as soon as its token is chosen (sampling, the constraint and
// detokenizing run here, beside the other turns' forward passes), and the
// token is fed to the scheduler at the start of the next call, to be
// computed with the other turns' tokens. Cancellation (ctx or Close)
// returns at once and frees the sequence.
type stream struct {
	b      *Backend
	ctx    context.Context
	cancel context.CancelFunc
	seq    *spark.Seq
	// released: the sequence went back to the backend (kept for a later
	// turn, or closed).
	released bool

	sampler *sample.Sampler
	dec     *tokenizer.Decoder
	cons    *constraint // nil: unconstrained

	closeReq atomic.Bool

	mu        sync.Mutex // held by Next and Close
	inThink   bool
	maxTokens int
	generated int
	logits    []float32 // the logits the next token is chosen from
	feed      int       // a chosen token not yet evaluated, or -1
	// force holds answer tokens the constraint dictates, to be emitted
	// next; batch those emitted but not yet evaluated: they go through
	// the engine with feed in one forward pass.
	force, batch, in []int
	done             bool // the turn ended; only a flush may remain
	flushed          bool
	closed           bool
	err              error

	statsMu sync.Mutex
	stats   model.Stats
}

var errStreamClosed = errors.New("the stream is closed")

// Next returns the next piece of the turn: reasoning text, answer text, or
// the delta that closes the reasoning; io.EOF after the end of the turn
// (EOS, MaxTokens, or a constrained call that is complete).
func (s *stream) Next() (model.Delta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.closed:
			return model.Delta{}, errStreamClosed
		case s.err != nil:
			return model.Delta{}, s.err
		case s.done:
			if !s.flushed {
				s.flushed = true
				if d, ok := s.text(s.dec.Flush()); ok {
					return d, nil
				}
			}
			return model.Delta{}, io.EOF
		}
		if err := s.ctx.Err(); err != nil {
			return model.Delta{}, s.fail(err)
		}
		t0 := time.Now()
		if len(s.force) > 0 {
			d, ok := s.takeForced()
			s.addDecode(time.Since(t0), 0, false)
			if ok {
				return d, nil
			}
			continue
		}
		var fwd time.Duration
		if s.feed >= 0 {
			s.in = append(append(s.in[:0], s.feed), s.batch...)
			s.batch = s.batch[:0]
			logits, err := s.b.sched.Eval(s.ctx, s.seq, s.in, spark.LogitsLast, s.logits)
			fwd = time.Since(t0)
			if err != nil {
				if s.ctx.Err() != nil {
					err = s.ctx.Err()
				}
				return model.Delta{}, s.fail(fmt.Errorf("decode: %w", err))
			}
			s.logits, s.feed = logits, -1
		}
		think := s.inThink
		id, err := s.choose()
		if err != nil {
			s.addDecode(time.Since(t0), fwd, think)
			return model.Delta{}, s.fail(err)
		}
		d, ok := s.take(id)
		s.addDecode(time.Since(t0), fwd, think)
		if ok {
			return d, nil
		}
	}
}

// choose picks the next token, or -1 to end the turn.
func (s *stream) choose() (int, error) {
	b := s.b
	over := s.generated >= s.maxTokens
	if s.inThink {
		switch {
		case s.closeReq.Load():
			return b.thinkClose, nil
		case over && s.cons != nil && b.thinkClose >= 0:
			// The answer is still owed; close the reasoning and let
			// closing mode produce a short call.
			return b.thinkClose, nil
		case over:
			return -1, nil
		}
		id, err := s.sampler.Pick(s.logits, nil)
		if err != nil {
			return 0, err
		}
		if id == b.eos && s.cons != nil && b.thinkClose >= 0 {
			// Under the constraint a turn without a call is not an
			// option: the reasoning is over, so close it instead.
			id = b.thinkClose
		}
		return id, nil
	}
	if s.cons != nil {
		if s.generated >= s.maxTokens+closingGrace {
			return -1, nil
		}
		id, err := s.cons.pick(s.sampler, s.logits, over)
		if errors.Is(err, errDeadEnd) {
			// Cannot happen with a byte-level vocabulary (every byte is a
			// token); should it, end the turn and let the loop's
			// corrective step deal with the incomplete answer rather than
			// failing the run.
			return -1, nil
		}
		return id, err
	}
	if over {
		return -1, nil
	}
	return s.sampler.Pick(s.logits, nil)
}

// take accounts for token id and returns the delta it makes, if any.
func (s *stream) take(id int) (model.Delta, bool) {
	b := s.b
	if id < 0 {
		s.finish()
		return model.Delta{}, false
	}
	s.generated++
	s.statsMu.Lock()
	s.stats.GeneratedTokens = s.generated
	if s.inThink {
		s.stats.ThinkTokens++
	}
	s.statsMu.Unlock()
	if id == b.eos {
		s.finish()
		return model.Delta{}, false
	}
	s.feed = id
	if s.inThink && id == b.thinkClose {
		rest := s.dec.Flush()
		s.inThink = false
		if s.last() {
			s.feed = -1
			s.finish()
		}
		return model.Delta{Reasoning: rest, ReasoningClosed: true}, true
	}
	if !s.inThink && s.cons != nil {
		s.cons.add(id)
	}
	d, ok := s.text(s.dec.Add(id))
	if s.last() {
		// Evaluating the token would only compute logits nobody reads
		// (a decode step on a real model); it is not fed, like EOS.
		s.feed = -1
		s.finish()
	} else if !s.inThink && s.cons != nil && !s.b.opts.Unbatched {
		s.force = s.forcedTokens()
	}
	return d, ok
}

// forcedTokens returns the tokens of the text the constraint dictates
// after the answer so far, or nil. The text is tokenized as the prompt
// would be (special tags become their tokens), and used only if the
// tokens spell it exactly and fit the turn's budget.
func (s *stream) forcedTokens() []int {
	text := s.cons.forced()
	for len(text) > 0 && !utf8.Valid(text) {
		text = text[:len(text)-1] // never split a character
	}
	if len(text) == 0 {
		return nil
	}
	toks := s.b.tok.Encode(string(text), true)
	if len(toks) == 0 || s.generated+len(toks) > s.maxTokens+closingGrace {
		return nil
	}
	var spelled []byte
	for _, id := range toks {
		if id == s.b.eos || id < 0 || id >= len(s.b.first) {
			return nil
		}
		spelled = append(spelled, s.b.tok.Piece(id)...)
	}
	if string(spelled) != string(text) {
		return nil
	}
	return toks
}

// takeForced emits the forced tokens as one delta. They are evaluated
// together with the token before them at the next step, in one forward
// pass, unless the call is then complete and nothing needs their logits.
func (s *stream) takeForced() (model.Delta, bool) {
	toks := s.force
	s.force = nil
	var text strings.Builder
	for _, id := range toks {
		s.cons.add(id)
		text.WriteString(s.dec.Add(id))
	}
	s.generated += len(toks)
	s.statsMu.Lock()
	s.stats.GeneratedTokens = s.generated
	s.stats.ForcedTokens += len(toks)
	s.statsMu.Unlock()
	s.batch = append(s.batch[:0], toks...)
	if s.last() {
		s.feed = -1
		s.batch = s.batch[:0]
		s.finish()
	} else {
		s.force = s.forcedTokens()
	}
	return s.text(text.String())
}

// last reports whether the turn cannot go on after the token just taken:
// the token budget is spent (with no constrained call to finish), or the
// constrained call is complete and only EOS may follow.
func (s *stream) last() bool {
	if s.cons == nil {
		return s.generated >= s.maxTokens
	}
	if s.inThink {
		return false
	}
	return s.cons.complete || s.generated >= s.maxTokens+closingGrace
}

// text wraps decoded text as reasoning or answer.
func (s *stream) text(t string) (model.Delta, bool) {
	if t == "" {
		return model.Delta{}, false
	}
	if s.inThink {
		return model.Delta{Reasoning: t}, true
	}
	return model.Delta{Content: t}, true
}

func (s *stream) finish() {
	s.done = true
	s.release(true)
}

func (s *stream) fail(err error) error {
	s.err = err
	s.release(false)
	return err
}

// release gives the sequence back once: kept for a later turn that
// continues this one (its tokens so far are consistent), or closed, which
// frees it (after an error or a cancellation).
func (s *stream) release(keep bool) {
	if s.released {
		return
	}
	s.released = true
	b := s.b
	b.mu.Lock()
	delete(b.streams, s)
	b.mu.Unlock()
	if keep {
		b.park(s.seq)
	} else {
		b.sched.Release(s.seq)
		s.seq.Close()
	}
}

// addDecode accounts d of decoding, fwd of it in the forward pass, to the
// reasoning or the answer.
func (s *stream) addDecode(d, fwd time.Duration, think bool) {
	s.statsMu.Lock()
	s.stats.Decode += d
	s.stats.Forward += fwd
	if think {
		s.stats.Think += d
	} else {
		s.stats.Answer += d
	}
	s.statsMu.Unlock()
}

// CloseReasoning makes the next token </think>, so the turn continues with
// the answer. It does nothing once the reasoning is closed.
func (s *stream) CloseReasoning() error {
	if s.b.thinkClose < 0 {
		return model.ErrUnsupported
	}
	s.closeReq.Store(true)
	return nil
}

// Close stops the turn. The tokens generated so far stay in the
// sequence, which a later prompt that continues them may take over.
func (s *stream) Close() error {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.release(s.err == nil)
	}
	return nil
}

// Stats reports the turn's prompt, cache and timing figures so far.
func (s *stream) Stats() model.Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	return s.stats
}
