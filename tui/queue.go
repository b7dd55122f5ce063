package tui

import (
	"strings"
	"sync"

	"github.com/droidgo/droidgo/loop"
)

// item is one entry of the queue between the loop and the UI: an event, a
// call waiting for approval, or the withdrawal of such a call.
type item struct {
	ev loop.Event
	// buf collects the text of coalesced token events; it is nil for every
	// other item. A builder keeps a flood of tokens linear in its length.
	buf *strings.Builder
	// tokens is how many token events were coalesced into this one.
	tokens int

	appr     *approval // a call waiting for the user
	withdraw *approval // an approval whose asker gave up (its ctx ended)
}

// queue hands events from the loop to the UI without ever blocking the
// sender. It is unbounded for the events that must arrive (there are a
// handful per step) and coalesces token events: a token that follows a token
// of the same type, step and phone is appended to it, so a slow drawer sees one
// event holding all the text instead of thousands of tiny ones.
type queue struct {
	mu      sync.Mutex
	items   []item
	closed  bool          // Close was called: no more events will come
	dropped bool          // the UI is gone: accept and discard everything
	notify  chan struct{} // has a value when items or closed changed
}

func newQueue() *queue {
	return &queue{notify: make(chan struct{}, 1)}
}

func (q *queue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// push adds an item. It never blocks.
func (q *queue) push(it item) {
	q.mu.Lock()
	if q.closed || q.dropped {
		q.mu.Unlock()
		return
	}
	if it.appr == nil && it.withdraw == nil && it.ev.Type.Droppable() {
		if n := len(q.items); n > 0 {
			last := &q.items[n-1]
			if last.buf != nil && last.ev.Type == it.ev.Type && last.ev.Step == it.ev.Step && last.ev.Device == it.ev.Device {
				last.buf.WriteString(it.ev.Text)
				last.tokens++
				q.mu.Unlock()
				return
			}
		}
		it.buf = &strings.Builder{}
		it.buf.WriteString(it.ev.Text)
		it.tokens = 1
		it.ev.Text = ""
	}
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.signal()
}

// close marks the end of the events; items already queued stay.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// drop discards what is queued and everything pushed later: the UI has quit.
func (q *queue) drop() {
	q.mu.Lock()
	q.dropped = true
	q.items = nil
	q.mu.Unlock()
}

// drain takes every queued item, with coalesced token text put back in
// ev.Text, and reports whether the queue is closed.
func (q *queue) drain() ([]item, bool) {
	q.mu.Lock()
	items := q.items
	q.items = nil
	closed := q.closed
	q.mu.Unlock()
	for i := range items {
		if items[i].buf != nil {
			items[i].ev.Text = items[i].buf.String()
			items[i].buf = nil
		}
	}
	return items, closed
}

// len reports how many items are waiting; tests use it to see coalescing.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
