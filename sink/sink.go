// Package sink puts each consumer of a run's events (a printer, a
// recorder, a transcript, a network stream) behind a queue of its own, so
// that a slow or stalled consumer never holds up the loop: the loop's
// OnEvent only appends to the queues, and each consumer takes its events,
// in order, on a goroutine of its own.
//
// A queue never drops an event that must be delivered (see
// loop.EventType.Droppable) and never blocks its sender. Its memory is
// bounded: when more than Options.MaxBytes wait, the token events waiting
// are joined into fewer, longer ones, and a consumer that is still that far
// behind is given up as stalled. A consumer that fails (returns an error)
// or is given up gets nothing more, and Close reports it by name, after
// everything the consumer took before: a recording is complete up to its
// failure.
package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/loop"
)

// DefaultMaxBytes bounds what waits for one consumer: far more than a
// long run's events (a step is a screen of tens of kB and its prompt),
// little next to the model.
const DefaultMaxBytes = 64 << 20

// Options tune a Queue.
type Options struct {
	// MaxBytes bounds the events waiting for the consumer, by their
	// approximate size; 0 means DefaultMaxBytes.
	MaxBytes int
}

// Queue delivers events to one consumer in the order they came, on a
// goroutine of its own. Event never blocks. It is safe for concurrent
// use: several loops may feed one queue (each loop's events stay in their
// order).
type Queue struct {
	name    string
	consume func(loop.Event) error
	max     int

	mu      sync.Mutex
	items   []loop.Event
	size    int   // approximate bytes of items
	err     error // why the consumer gets nothing more
	lost    int   // events not delivered since err
	took    int   // events the consumer took
	closed  bool
	wake    chan struct{} // has a value when items or closed changed
	stopped chan struct{} // closed when the goroutine has ended
}

// New starts a queue in front of consume, which is called with each event
// in turn and returns an error when it failed (a write error); it is then
// called no more. name says what the consumer is in errors ("recording",
// "printer").
func New(name string, consume func(loop.Event) error, o Options) *Queue {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	q := &Queue{name: name, consume: consume, max: o.MaxBytes,
		wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.run()
	return q
}

// Event queues ev for the consumer. It never blocks.
func (q *Queue) Event(ev loop.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.err != nil {
		q.lost++
		return
	}
	n := size(ev)
	if q.size+n > q.max {
		q.squeeze()
	}
	if q.size+n > q.max {
		q.err = fmt.Errorf("stalled: more than %s of events waited for it", bytesText(q.max))
		q.lost += len(q.items) + 1
		q.items, q.size = nil, 0
		return
	}
	q.items = append(q.items, ev)
	q.size += n
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// bytesText says n bytes in the unit that fits.
func bytesText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d kB", n>>10)
}

// squeeze joins runs of waiting token events of the same type, step and
// device into one event each, keeping all their text.
func (q *Queue) squeeze() {
	out := q.items[:0]
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			out[len(out)-1].Text = text.String()
			text.Reset()
		}
	}
	for _, ev := range q.items {
		if n := len(out); n > 0 && ev.Type.Droppable() {
			last := out[n-1]
			if last.Type == ev.Type && last.Step == ev.Step && last.Device == ev.Device {
				if text.Len() == 0 {
					text.WriteString(last.Text)
				}
				text.WriteString(ev.Text)
				continue
			}
		}
		flush()
		out = append(out, ev)
	}
	flush()
	clear(q.items[len(out):])
	q.items = out
	q.size = 0
	for _, ev := range q.items {
		q.size += size(ev)
	}
}

// size is about what ev holds in memory: its texts.
func size(ev loop.Event) int {
	n := 256 + len(ev.Text) + len(ev.Detail) + len(ev.Error)
	if s := ev.Screen; s != nil {
		n += len(s.XML) + len(s.Prompt) + 64*len(s.Elements)
	}
	if p := ev.Parse; p != nil {
		n += len(p.Raw)
	}
	for _, m := range ev.Messages {
		n += len(m.Content) + len(m.Reasoning)
	}
	return n
}

// run delivers the queued events until the queue is closed and empty.
func (q *Queue) run() {
	defer close(q.stopped)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items, q.size = nil, 0
		q.mu.Unlock()
		for i, ev := range items {
			if err := q.consume(ev); err != nil {
				q.mu.Lock()
				if q.err == nil {
					q.err = err
				}
				q.took += i + 1
				q.lost += len(items) - i - 1
				q.mu.Unlock()
				q.discard()
				return
			}
		}
		q.mu.Lock()
		q.took += len(items)
		failed := q.err != nil
		q.mu.Unlock()
		if failed { // given up while this batch was delivered
			q.discard()
			return
		}
		if closed && len(items) == 0 {
			return
		}
		if len(items) == 0 {
			<-q.wake
		}
	}
}

// discard counts what comes after a failure as lost.
func (q *Queue) discard() {
	q.mu.Lock()
	q.lost += len(q.items)
	q.items, q.size = nil, 0
	q.mu.Unlock()
}

// Close says no more events will come and waits until the consumer has
// taken every event queued, or ctx ends. It returns the consumer's error,
// naming the consumer and how many events it did not get; when ctx ends
// first, an error saying what was not delivered (the consumer goes on in
// the background with what it has).
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	select {
	case <-q.stopped:
	case <-ctx.Done():
		q.mu.Lock()
		defer q.mu.Unlock()
		return fmt.Errorf("%s: %d events not delivered: %w", q.name, len(q.items)+q.lost, ctx.Err())
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return &Error{Name: q.name, Delivered: q.took, Lost: q.lost, Err: q.err}
	}
	return nil
}

// Error is a consumer that failed or was given up.
type Error struct {
	Name string
	// Delivered and Lost count the events the consumer took (the last of
	// them maybe only in part) and did not get; token events joined in the
	// queue count once.
	Delivered int
	Lost      int
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v (after %d events; %d more not delivered)", e.Name, e.Err, e.Delivered, e.Lost)
}

func (e *Error) Unwrap() error { return e.Err }

// Set is the queues of one run's consumers.
type Set []*Queue

// Event queues ev for every consumer, in order. It never blocks.
func (s Set) Event(ev loop.Event) {
	for _, q := range s {
		q.Event(ev)
	}
}

// Drain closes every queue and waits until each consumer has taken its
// events: for as long as that takes while ctx lasts, and at most grace
// more once ctx has ended (an interrupted command still finishes its
// recording, but a stalled terminal does not keep it alive). It joins the
// consumers' errors.
func (s Set) Drain(ctx context.Context, grace time.Duration) error {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(dctx, func() { t.Stop() })
	})
	defer stop()
	return s.Close(dctx)
}

// Close closes every queue (Queue.Close) and joins their errors.
func (s Set) Close(ctx context.Context) error {
	var errs []error
	for _, q := range s {
		if err := q.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
