package spark

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler drives the sequences of one Engine for many goroutines at once
// (continuous batching): each goroutine calls Eval for its own sequence
// and blocks, while one goroutine of the scheduler runs forward passes
// (Engine.Step) over the new tokens of every sequence waiting: the decode
// tokens of all generating sequences plus, for prompts being prefilled, at
// most one chunk (Engine.Batch tokens) per pass, so a newcomer's long
// prompt delays the others' next token by one chunk at most. Sequences
// join and leave between passes.
//
// After a pass the scheduler waits a moment (a tenth of the pass, between
// 0.5 and 10 ms) for the goroutines it just served to choose their next
// tokens, so that their decode steps go into the same pass; Release says
// that a sequence will not come back soon.
//
// A token's logits do not depend on which other sequences shared its
// passes (see Engine).
type Scheduler struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	queue  []*job
	expect map[*Seq]struct{} // served by the last pass, not back yet
	until  time.Time         // how long to wait for them
	closed bool
	// beforePass, when set (by tests), runs on the loop's goroutine
	// before each pass, with s.mu not held.
	beforePass func()

	works  []Work
	inPass []*job
	stats  SchedulerStats
}

// SchedulerStats counts the scheduler's forward passes.
type SchedulerStats struct {
	Passes int64 // forward passes run
	Tokens int64 // tokens computed in them
	// Rows counts passes by how many sequences they computed: Rows[i] is
	// the number of passes with i+1 sequences (the last entry also counts
	// larger passes).
	Rows [64]int64
}

// job is one Eval call: tokens of one sequence, computed over one or more
// passes.
type job struct {
	ctx  context.Context
	seq  *Seq
	toks []int
	next int // tokens computed so far
	mode LogitsMode
	out  []float32 // the logits, owned by the job until done
	err  error
	done chan struct{}
	dead atomic.Bool // the caller stopped waiting
}

// decodeMax is the most tokens of a job that always go into the next pass
// whole (a decode token, or a batch of dictated answer tokens); longer
// ones are prompts and share the pass's prefill chunk.
const decodeMax = 32

// ErrSchedulerClosed is returned by Eval after Close.
var ErrSchedulerClosed = errors.New("the scheduler is closed")

// NewScheduler starts a scheduler for e. From then on the engine must only
// be used through it (and Seq methods); Close stops it.
func NewScheduler(e *Engine) (*Scheduler, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{e: e, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}), expect: map[*Seq]struct{}{}}
	if !e.sched.CompareAndSwap(nil, s) {
		cancel()
		return nil, errors.New("the engine already has a scheduler")
	}
	go s.loop()
	return s, nil
}

// Engine returns the scheduler's engine.
func (s *Scheduler) Engine() *Engine { return s.e }

// Stats returns the counts of the passes run so far.
func (s *Scheduler) Stats() SchedulerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close stops the scheduler: pending and later Evals fail with
// ErrSchedulerClosed, and a pass in progress stops at its next layer.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.signal()
	<-s.done
	s.e.sched.CompareAndSwap(s, nil)
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Eval appends tokens to seq, computed in the scheduler's passes, and
// returns logits as Engine.Eval does (into dst when it has the capacity).
// It returns as soon as ctx ends: the sequence then keeps whatever passes
// completed (a pass that is running completes), and its next use waits for
// that pass. A sequence must have at most one Eval outstanding.
func (s *Scheduler) Eval(ctx context.Context, seq *Seq, tokens []int, mode LogitsMode, dst []float32) ([]float32, error) {
	e := s.e.engine
	if seq == nil || seq.e != e {
		return nil, errors.New("eval: the sequence belongs to another engine")
	}
	if mode == LogitsLast && len(tokens) == 0 {
		return nil, errors.New("eval: no tokens to compute logits for")
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	seq.mu.Lock()
	closed, have := seq.closed, len(seq.tokens)
	seq.mu.Unlock()
	if closed {
		return nil, ErrSeqClosed
	}
	if err := e.validate(seq, have, tokens); err != nil {
		return nil, err
	}
	V := e.c.Vocab
	j := &job{ctx: ctx, seq: seq, toks: tokens, mode: mode, done: make(chan struct{})}
	switch mode {
	case LogitsAll:
		j.out = make([]float32, len(tokens)*V)
	case LogitsLast:
		j.out = seq.logitBuf(V)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSchedulerClosed
	}
	s.queue = append(s.queue, j)
	delete(s.expect, seq)
	s.mu.Unlock()
	s.signal()
	select {
	case <-j.done:
	case <-ctx.Done():
		j.dead.Store(true)
		s.signal()
		return nil, ctx.Err()
	}
	if j.err != nil {
		return nil, j.err
	}
	switch mode {
	case LogitsAll:
		return j.out, nil
	case LogitsLast:
		out := grow(dst, V)
		copy(out, j.out)
		return out, nil
	}
	return nil, nil
}

// Release tells the scheduler that seq will not be evaluated again soon
// (its turn ended), so the next pass does not wait for it.
func (s *Scheduler) Release(seq *Seq) { s.left(seq) }

// left forgets seq as a sequence a pass should wait for.
func (s *Scheduler) left(seq *Seq) {
	s.mu.Lock()
	_, ok := s.expect[seq]
	delete(s.expect, seq)
	s.mu.Unlock()
	if ok {
		s.signal()
	}
}

func (s *Scheduler) loop() {
	defer close(s.done)
	var timer *time.Timer
	for {
		s.mu.Lock()
		if s.closed {
			for _, j := range s.queue {
				j.err = ErrSchedulerClosed
				close(j.done)
			}
			s.queue = nil
			s.mu.Unlock()
			return
		}
		s.dropDead()
		ready := len(s.queue) > 0
		wait := time.Duration(0)
		if len(s.expect) > 0 {
			wait = time.Until(s.until)
		}
		before := s.beforePass
		s.mu.Unlock()
		switch {
		case !ready:
			<-s.wake
			continue
		case wait > 0:
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-s.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		if before != nil {
			before()
		}
		s.pass()
	}
}

// dropDead removes the jobs whose callers stopped waiting. s.mu is held.
func (s *Scheduler) dropDead() {
	q := s.queue[:0]
	for _, j := range s.queue {
		if j.dead.Load() {
			continue
		}
		q = append(q, j)
	}
	clear(s.queue[len(q):])
	s.queue = q
}

// pass runs one forward pass over the waiting jobs.
func (s *Scheduler) pass() {
	e := s.e.engine
	V := e.c.Vocab
	s.mu.Lock()
	works, in := s.works[:0], s.inPass[:0]
	budget := e.opts.Batch // prompt tokens of the pass
	for _, j := range s.queue {
		rem := len(j.toks) - j.next
		n := min(rem, e.opts.Batch)
		if rem > decodeMax {
			n = min(n, budget)
			if n == 0 {
				continue
			}
			budget -= n
		}
		w := Work{Seq: j.seq, Tokens: j.toks[j.next : j.next+n], Logits: LogitsNone}
		switch {
		case j.mode == LogitsAll:
			w.Logits, w.Out = LogitsAll, j.out[j.next*V:(j.next+n)*V]
		case j.mode == LogitsLast && j.next+n == len(j.toks):
			w.Logits, w.Out = LogitsLast, j.out
		}
		works, in = append(works, w), append(in, j)
	}
	s.mu.Unlock()
	if len(works) == 0 {
		return
	}
	start := time.Now()
	err := s.e.Step(s.ctx, works)
	took := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Passes++
	s.stats.Rows[min(len(works), len(s.stats.Rows))-1]++
	for i, j := range in {
		werr := err
		if werr == nil {
			werr = works[i].Err
		}
		if werr == nil {
			n := len(works[i].Tokens)
			s.stats.Tokens += int64(n)
			j.next += n
			if j.next < len(j.toks) {
				continue
			}
			s.expect[j.seq] = struct{}{}
		} else if s.ctx.Err() != nil {
			werr = ErrSchedulerClosed
		}
		j.err = werr
		s.finish(j)
	}
	s.until = time.Now().Add(min(max(took/10, 500*time.Microsecond), 10*time.Millisecond))
	clear(works)
	clear(in)
	s.works, s.inPass = works[:0], in[:0]
}

// finish removes j from the queue and wakes its caller. s.mu is held.
func (s *Scheduler) finish(j *job) {
	if i := slices.Index(s.queue, j); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
	if j.dead.Load() {
		delete(s.expect, j.seq)
	}
	close(j.done)
}

// logitBuf returns the sequence's buffer for one row of logits, which the
// scheduler writes while the caller may already have gone (a cancelled
// Eval), so it is the sequence's, not the caller's.
func (s *Seq) logitBuf(v int) []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logits = grow(s.logits, v)
	return s.logits
}
