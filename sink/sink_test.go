package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
)

// blocker is a consumer that blocks on its first event until released,
// then keeps every event.
type blocker struct {
	mu      sync.Mutex
	got     []loop.Event
	started chan struct{} // closed when the first event arrived
	release chan struct{}
	once    sync.Once
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) consume(ev loop.Event) error {
	b.once.Do(func() {
		close(b.started)
		<-b.release
	})
	b.mu.Lock()
	b.got = append(b.got, ev)
	b.mu.Unlock()
	return nil
}

func (b *blocker) events() []loop.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]loop.Event(nil), b.got...)
}

func steps(n int) []loop.Event {
	var evs []loop.Event
	for i := 1; i <= n; i++ {
		evs = append(evs,
			loop.Event{Type: loop.EvStepStarted, Step: i, Screen: &loop.ScreenInfo{XML: strings.Repeat("x", 10000)}},
			loop.Event{Type: loop.EvThinking, Step: i, Text: "a"},
			loop.Event{Type: loop.EvThinking, Step: i, Text: "b"},
			loop.Event{Type: loop.EvAction, Step: i, Detail: fmt.Sprint("tap ", i)})
	}
	return evs
}

func text(evs []loop.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s:%d:%s:%s|", ev.Type, ev.Step, ev.Text, ev.Detail)
	}
	return b.String()
}

// TestStalledConsumerDoesNotHoldTheSender: while the consumer is blocked,
// every Event call returns and the sender finishes; once released, the
// consumer gets every event in order, and Close reports nothing.
func TestStalledConsumerDoesNotHoldTheSender(t *testing.T) {
	b := newBlocker()
	q := New("test", b.consume, Options{})
	evs := steps(500)
	sent := make(chan struct{})
	go func() {
		for _, ev := range evs {
			q.Event(ev)
		}
		close(sent)
	}()
	<-b.started
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the sender is held by a stalled consumer")
	}
	if n := len(b.events()); n != 0 {
		t.Fatalf("the consumer took %d events while blocked", n)
	}
	close(b.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := text(b.events()), text(evs); got != want {
		t.Errorf("delivered\n%.300s\nwant\n%.300s", got, want)
	}
}

// TestTheLoopRunsAheadOfAStalledConsumer: a loop whose events go to a
// consumer that blocks finishes its run, with the timings of a run without
// one, while the consumer is still blocked.
func TestTheLoopRunsAheadOfAStalledConsumer(t *testing.T) {
	run := func(onEvent func(loop.Event)) loop.Result {
		return loop.Run(context.Background(), loop.Config{
			Task: "t", Device: phone{}, DeviceName: "p", Model: talker{}, MaxSteps: 5,
			Now: fixedClock().Now, Sleep: func(context.Context, time.Duration) error { return nil },
			PollInterval: time.Millisecond, OnEvent: onEvent,
		})
	}
	var direct []loop.Event
	want := run(func(ev loop.Event) { direct = append(direct, ev) })

	b := newBlocker()
	q := New("slow", b.consume, Options{})
	// The consumer is blocked before the run starts and until it ends.
	q.Event(loop.Event{Type: loop.EvWarning, Text: "before"})
	<-b.started
	got := run(q.Event)
	if n := len(b.events()); n != 0 {
		t.Fatalf("the consumer was not blocked (%d events)", n)
	}
	if got != want {
		t.Errorf("result %+v behind a stalled consumer, %+v without", got, want)
	}
	close(b.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := b.events()[1:]
	if len(evs) != len(direct) {
		t.Fatalf("%d events delivered, %d emitted", len(evs), len(direct))
	}
	for i := range evs {
		if evs[i].Type != direct[i].Type || !evs[i].Time.Equal(direct[i].Time) {
			t.Errorf("event %d: %s at %v, want %s at %v", i, evs[i].Type, evs[i].Time, direct[i].Type, direct[i].Time)
		}
	}
}

// TestFailedConsumer: a consumer that fails gets nothing more; Close says
// which, after how many events, and how many it missed.
func TestFailedConsumer(t *testing.T) {
	var got []loop.Event
	full := errors.New("no space left on device")
	q := New("recording", func(ev loop.Event) error {
		got = append(got, ev)
		if len(got) == 3 {
			return full
		}
		return nil
	}, Options{})
	evs := steps(5)
	for _, ev := range evs {
		q.Event(ev)
	}
	err := q.Close(context.Background())
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, full) || se.Name != "recording" || se.Delivered != 3 || se.Lost != len(evs)-3 {
		t.Fatalf("Close = %v (%+v)", err, se)
	}
	if !strings.Contains(err.Error(), "recording: no space left on device (after 3 events; 17 more not delivered)") {
		t.Errorf("message %q", err)
	}
	if len(got) != 3 {
		t.Errorf("the failed consumer was called %d times", len(got))
	}
}

// TestBoundedMemory: behind a stalled consumer, token events are joined
// (their text kept whole) to stay within MaxBytes; a consumer still that
// far behind is given up, and Close says so.
func TestBoundedMemory(t *testing.T) {
	b := newBlocker()
	q := New("printer", b.consume, Options{MaxBytes: 64 << 10})
	q.Event(loop.Event{Type: loop.EvStepStarted, Step: 1})
	<-b.started
	var want strings.Builder
	for i := range 5000 {
		s := fmt.Sprint(i, " ")
		want.WriteString(s)
		q.Event(loop.Event{Type: loop.EvThinking, Step: 1, Text: s})
	}
	q.Event(loop.Event{Type: loop.EvAction, Step: 1, Detail: "tap"})
	q.mu.Lock()
	waiting, bytes := len(q.items), q.size
	q.mu.Unlock()
	if bytes > 64<<10 || waiting > 100 {
		t.Errorf("%d events, %d bytes wait", waiting, bytes)
	}
	close(b.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var thought strings.Builder
	evs := b.events()
	for _, ev := range evs {
		if ev.Type == loop.EvThinking {
			thought.WriteString(ev.Text)
		}
	}
	if thought.String() != want.String() || evs[len(evs)-1].Detail != "tap" {
		t.Errorf("the text or the order was lost: %d events, last %+v", len(evs), evs[len(evs)-1])
	}

	// Events that must be delivered cannot be joined: past the bound the
	// consumer is given up.
	b = newBlocker()
	q = New("printer", b.consume, Options{MaxBytes: 64 << 10})
	evs = steps(20)
	q.Event(evs[0])
	<-b.started
	for _, ev := range evs[1:] {
		q.Event(ev)
	}
	close(b.release)
	err := q.Close(context.Background())
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "printer: stalled: more than 64 kB of events waited for it") ||
		se.Delivered == 0 || se.Lost == 0 || se.Delivered+se.Lost > len(evs) {
		t.Errorf("Close = %v", err)
	}
}

// TestCloseGivesUp: Close returns when its context ends, saying what was
// not delivered.
func TestCloseGivesUp(t *testing.T) {
	b := newBlocker()
	defer close(b.release)
	q := New("printer", b.consume, Options{})
	for _, ev := range steps(3) {
		q.Event(ev)
	}
	<-b.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.Close(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "printer: ") {
		t.Errorf("Close = %v", err)
	}
}

// TestManySenders: several loops may share a queue; each one's events
// stay in order.
func TestManySenders(t *testing.T) {
	var mu sync.Mutex
	last := map[string]int{}
	bad := 0
	q := New("shared", func(ev loop.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if ev.Step != last[ev.Device]+1 {
			bad++
		}
		last[ev.Device] = ev.Step
		return nil
	}, Options{})
	var wg sync.WaitGroup
	for _, dev := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 1000; i++ {
				q.Event(loop.Event{Type: loop.EvWarning, Device: dev, Step: i})
			}
		}()
	}
	wg.Wait()
	s := Set{q}
	s.Event(loop.Event{Type: loop.EvFinished, Device: "d", Step: 1})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad != 0 || last["a"] != 1000 || last["b"] != 1000 || last["c"] != 1000 || last["d"] != 1 {
		t.Errorf("%d out of order, last %v", bad, last)
	}
}

// phone shows one screen and does nothing.
type phone struct{}

const screen = `<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="p" bounds="[0,0][1080,2400]"><node class="android.widget.Button" text="OK" clickable="true" bounds="[0,100][1080,300]"/></node></hierarchy>`

func (phone) Dump(context.Context) ([]byte, error)                           { return []byte(screen), nil }
func (phone) Tap(context.Context, int, int) error                            { return nil }
func (phone) LongPress(context.Context, int, int) error                      { return nil }
func (phone) Type(context.Context, string) error                             { return nil }
func (phone) Key(context.Context, string) error                              { return nil }
func (phone) OpenApp(context.Context, string) error                          { return nil }
func (phone) Size(context.Context) (int, int, error)                         { return 1080, 2400, nil }
func (phone) CurrentApp(context.Context) (string, error)                     { return "p", nil }
func (phone) Swipe(context.Context, int, int, int, int, time.Duration) error { return nil }

// talker thinks a little and taps OK, every turn.
type talker struct{}

func (talker) Name() string { return "talker" }
func (talker) Chat(context.Context, model.ChatRequest) (model.Stream, error) {
	return &talk{deltas: []model.Delta{{Reasoning: "tap"}, {Reasoning: " it"}, {ReasoningClosed: true},
		{Content: "<tool_call>tap<arg_key>index</arg_key><arg_value>0</arg_value></tool_call>"}}}, nil
}

type talk struct{ deltas []model.Delta }

func (s *talk) Next() (model.Delta, error) {
	if len(s.deltas) == 0 {
		return model.Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}
func (s *talk) CloseReasoning() error { return nil }
func (s *talk) Close() error          { return nil }
func (s *talk) Stats() model.Stats    { return model.Stats{GeneratedTokens: 3} }

// tickClock moves on by a millisecond each time it is read, so two runs
// have the same times exactly when the loop read the clock at the same
// points.
type tickClock struct {
	mu sync.Mutex
	t  time.Time
}

func fixedClock() *tickClock { return &tickClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}
