package tui

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/loop"
)

// flood sends n token events, alternating thinking and answer in runs of
// 50, with a warning (which must arrive) after every 1000 tokens and a step
// change every 10000. It returns the text each step should end up with and
// the warnings in order.
func flood(send func(loop.Event), n int) (map[int][2]string, []string) {
	var tb texts
	var warnings []string
	for i := range n {
		step := i/10000 + 1
		if i%10000 == 0 {
			send(loop.Event{Type: loop.EvStepStarted, Step: step})
		}
		tok := fmt.Sprintf("t%d ", i)
		if i/50%2 == 0 {
			send(loop.Event{Type: loop.EvThinking, Step: step, Text: tok})
			tb.add(step, 0, tok)
		} else {
			send(loop.Event{Type: loop.EvAnswer, Step: step, Text: tok})
			tb.add(step, 1, tok)
		}
		if i%1000 == 999 {
			msg := fmt.Sprintf("warning %d", i)
			send(loop.Event{Type: loop.EvWarning, Step: step, Text: msg})
			warnings = append(warnings, msg)
		}
	}
	send(loop.Event{Type: loop.EvFinished, Result: &loop.Result{Success: true}})
	return tb.strings(), warnings
}

// texts accumulates thinking (0) and answer (1) text per step.
type texts map[int]*[2]strings.Builder

func (tb *texts) add(step, kind int, s string) {
	if *tb == nil {
		*tb = texts{}
	}
	b := (*tb)[step]
	if b == nil {
		b = &[2]strings.Builder{}
		(*tb)[step] = b
	}
	b[kind].WriteString(s)
}

func (tb texts) strings() map[int][2]string {
	out := map[int][2]string{}
	for step, b := range tb {
		out[step] = [2]string{b[0].String(), b[1].String()}
	}
	return out
}

// collected folds drained items the way the model does, per step.
type collected struct {
	tb       texts
	warnings []string
	finished int
	items    int
	tokens   int
}

func (c *collected) add(items []item) {
	c.items += len(items)
	for _, it := range items {
		switch it.ev.Type {
		case loop.EvThinking:
			c.tb.add(it.ev.Step, 0, it.ev.Text)
			c.tokens += it.tokens
		case loop.EvAnswer:
			c.tb.add(it.ev.Step, 1, it.ev.Text)
			c.tokens += it.tokens
		case loop.EvWarning:
			c.warnings = append(c.warnings, it.ev.Text)
		case loop.EvFinished:
			c.finished++
		}
	}
}

func checkCollected(t *testing.T, c collected, text map[int][2]string, warnings []string) {
	t.Helper()
	got := c.tb.strings()
	if c.tokens != 100_000 {
		t.Errorf("coalesced events count %d tokens, want 100000", c.tokens)
	}
	if c.finished != 1 {
		t.Errorf("finished arrived %d times", c.finished)
	}
	if strings.Join(c.warnings, "|") != strings.Join(warnings, "|") {
		t.Errorf("warnings: got %d, want %d in order", len(c.warnings), len(warnings))
	}
	for step, w := range text {
		if got[step] != w {
			t.Errorf("step %d: token text differs (got %d+%d bytes, want %d+%d)", step,
				len(got[step][0]), len(got[step][1]), len(w[0]), len(w[1]))
		}
	}
}

// TestSendNeverWaitsForTheDrawer floods 100k tokens while nothing drains
// the queue at all: every Send must still return, and the queue holds a
// few coalesced items instead of 100k.
func TestSendNeverWaitsForTheDrawer(t *testing.T) {
	u := New(Options{})
	const n = 100_000
	var text map[int][2]string
	var warnings []string
	returned := make(chan struct{})
	go func() {
		text, warnings = flood(u.Send, n)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(hangGuard):
		t.Fatal("Send blocked with no consumer")
	}
	// Runs of 50 tokens alternate types, so coalescing can merge at most 50
	// into one item; warnings and step changes break runs too.
	if got, limit := u.q.len(), n/50+n/1000+n/10000+1; got > limit {
		t.Errorf("queue holds %d items for %d events, want at most %d", got, n, limit)
	}
	items, _ := u.q.drain()
	var c collected
	c.add(items)
	checkCollected(t, c, text, warnings)
}

// TestSlowConsumerGetsEverything drains slowly while the flood goes on:
// whatever the interleaving, every non-droppable event arrives once and in
// order, and the coalesced token text is intact.
func TestSlowConsumerGetsEverything(t *testing.T) {
	u := New(Options{})
	var c collected
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			<-u.q.notify
			items, closed := u.q.drain()
			c.add(items)
			if closed {
				return
			}
			time.Sleep(time.Millisecond) // a slow terminal
		}
	}()
	text, warnings := flood(u.Send, 100_000)
	u.Close()
	wg.Wait()
	checkCollected(t, c, text, warnings)
	if c.items >= 100_000 {
		t.Errorf("the consumer got %d items: tokens were not coalesced", c.items)
	}
	t.Logf("100k tokens reached the slow consumer as %d items", c.items)
}

func TestQueueAfterCloseAndDrop(t *testing.T) {
	q := newQueue()
	q.push(item{ev: loop.Event{Type: loop.EvWarning}})
	q.close()
	q.push(item{ev: loop.Event{Type: loop.EvWarning}})
	items, closed := q.drain()
	if len(items) != 1 || !closed {
		t.Fatalf("after close: %d items, closed %v", len(items), closed)
	}
	q = newQueue()
	q.push(item{ev: loop.Event{Type: loop.EvWarning}})
	q.drop()
	q.push(item{ev: loop.Event{Type: loop.EvWarning}})
	if q.len() != 0 {
		t.Fatalf("after drop: %d items", q.len())
	}
}

// BenchmarkSendTokens measures what a token costs the loop.
func BenchmarkSendTokens(b *testing.B) {
	u := New(Options{})
	ev := loop.Event{Type: loop.EvThinking, Step: 1, Text: "token "}
	b.ReportAllocs()
	for i := range b.N {
		u.Send(ev)
		if i%4096 == 0 { // a drawer taking a batch now and then
			u.q.drain()
		}
	}
}

// TestQueueKeepsPhonesApart: tokens of two phones streaming at once are
// coalesced per phone, never into each other's text.
func TestQueueKeepsPhonesApart(t *testing.T) {
	q := newQueue()
	want := map[string]string{}
	for i := range 200 {
		dev := []string{"sim:wifi", "sim:alarm"}[i%3%2]
		tok := fmt.Sprintf("%s-%d ", dev, i)
		q.push(item{ev: loop.Event{Type: loop.EvThinking, Step: 1, Device: dev, Text: tok}})
		want[dev] += tok
	}
	items, _ := q.drain()
	got := map[string]string{}
	for _, it := range items {
		got[it.ev.Device] += it.ev.Text
	}
	if got["sim:wifi"] != want["sim:wifi"] || got["sim:alarm"] != want["sim:alarm"] {
		t.Errorf("phones' text mixed:\n got %q\nwant %q", got, want)
	}
	if len(items) >= 200 {
		t.Errorf("%d items: nothing was coalesced", len(items))
	}
}
