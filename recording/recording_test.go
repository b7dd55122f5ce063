package recording

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/sink"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func sampleEvents() []loop.Event {
	el := 2
	changed := true
	tap := &action.Call{Name: "tap", Arguments: map[string]any{"index": float64(2)}}
	return []loop.Event{
		{Type: loop.EvRunStarted, Time: t0, Task: "Turn on Wi-Fi", MaxSteps: 20, Device: "sim:wifi", Model: "script:wifi.txt"},
		{Type: loop.EvHold, Time: t0.Add(10 * time.Millisecond), Step: 1, Device: "sim:wifi", Stage: loop.HoldTurn},
		{Type: loop.EvStepStarted, Time: t0.Add(10 * time.Millisecond), Step: 1, Device: "sim:wifi", Screen: &loop.ScreenInfo{Width: 1080, Height: 2400, Prompt: "[0] button \"Settings\"", XML: "<hierarchy/>", Fingerprint: "f1"}},
		{Type: loop.EvThinking, Time: t0.Add(50 * time.Millisecond), Step: 1, Device: "sim:wifi", Text: "Open"},
		{Type: loop.EvThinking, Time: t0.Add(90 * time.Millisecond), Step: 1, Device: "sim:wifi", Text: " it"},
		{Type: loop.EvToolCall, Time: t0.Add(100 * time.Millisecond), Step: 1, Device: "sim:wifi", Call: tap, Parse: &loop.ParseInfo{Format: "native", Raw: "Open it</think><tool_call>..."}},
		{Type: loop.EvHold, Time: t0.Add(100 * time.Millisecond), Step: 1, Device: "sim:wifi", Stage: loop.HoldAction},
		{Type: loop.EvAction, Time: t0.Add(110 * time.Millisecond), Step: 1, Device: "sim:wifi", Call: tap, Element: &el, Outcome: loop.OutcomeDone, Detail: "tap 1 2"},
		{Type: loop.EvScreenChange, Time: t0.Add(20 * time.Second), Step: 1, Device: "sim:wifi", Changed: &changed},
		{Type: loop.EvFinished, Time: t0.Add(20*time.Second + 10*time.Millisecond), Step: 1, Device: "sim:wifi", Result: &loop.Result{Success: true, Reason: "task_complete", Steps: 1, Seconds: 20.01}},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, Header{Scripted: true, Task: "Turn on Wi-Fi", Created: t0, Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sampleEvents() {
		w.Event(ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Type: "recording", Version: Version, Created: t0, Scripted: true, Task: "Turn on Wi-Fi", Note: "n"}
	if rec.Header != want {
		t.Errorf("header = %+v, want %+v", rec.Header, want)
	}
	if !reflect.DeepEqual(rec.Events, sampleEvents()) {
		t.Errorf("events differ after a round trip:\n%+v\n%+v", rec.Events, sampleEvents())
	}
	if r := rec.Result(); r == nil || !r.Success {
		t.Errorf("result = %+v", r)
	}
	if rec.Started().Task != "Turn on Wi-Fi" {
		t.Errorf("started = %+v", rec.Started())
	}
	first, _ := os.ReadFile(path)
	if !bytes.HasPrefix(first, []byte(`{"type":"recording","version":2,`)) {
		t.Errorf("the file does not start with the header: %.60s", first)
	}
}

// A run killed mid-way keeps everything up to its last non-token event.
func TestFlushedPerEvent(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	if err != nil {
		t.Fatal(err)
	}
	evs := sampleEvents()
	for _, ev := range evs[:6] {
		w.Event(ev)
	}
	rec, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 6 {
		t.Errorf("%d events on disk before Close, want 6", len(rec.Events))
	}
	if rec.Result() != nil {
		t.Error("an unfinished recording has a result")
	}
}

func TestReadErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "empty file",
		"\n\n":                              "empty file",
		`{"type":"run_started"}`:            `line 1: not a recording: the first line must have "type":"recording"`,
		"not json":                          "line 1: not a recording header",
		`{"type":"recording","version":99}`: "version 99 is newer",
		"{\"type\":\"recording\"}\n{\"type\":\"step_started\",\"step\":\"x\"}": "line 2: bad event",
		"{\"type\":\"recording\"}\n{\"step\":1}":                               "line 2: event without a type",
	} {
		_, err := Read(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%q) err = %v, want %q", in, err, want)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

type fakeClock struct {
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func TestReplayTiming(t *testing.T) {
	rec := &Recording{Events: sampleEvents()}
	tests := []struct {
		speed float64
		total time.Duration
	}{
		// The 19.89 s pause is capped at MaxPause (5 s).
		{1, 10*time.Millisecond + 40*time.Millisecond + 40*time.Millisecond + 10*time.Millisecond + 10*time.Millisecond + 5*time.Second + 10*time.Millisecond},
		{2, (5*time.Second + 120*time.Millisecond) / 2},
		{0, 0},
	}
	for _, tt := range tests {
		c := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		start := c.now
		var got []loop.Event
		err := Replay(context.Background(), rec, ReplayOptions{Speed: tt.speed, Now: c.Now, Sleep: c.Sleep}, func(ev loop.Event) { got = append(got, ev) })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(rec.Events) {
			t.Fatalf("speed %v: %d events, want %d", tt.speed, len(got), len(rec.Events))
		}
		if d := c.now.Sub(start); d != tt.total {
			t.Errorf("speed %v: replay took %v, want %v", tt.speed, d, tt.total)
		}
		// Times move to the replay clock; everything else is the same.
		if last := got[len(got)-1].Time; last != start.Add(tt.total) {
			t.Errorf("speed %v: last event at %v, want %v", tt.speed, last, start.Add(tt.total))
		}
		for i := range got {
			a, b := got[i], rec.Events[i]
			a.Time, b.Time = time.Time{}, time.Time{}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("speed %v: event %d changed: %+v", tt.speed, i, a)
			}
		}
	}
}

func TestReplayCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := Replay(ctx, &Recording{Events: sampleEvents()}, ReplayOptions{Speed: 0}, func(loop.Event) {
		n++
		if n == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Errorf("err = %v after %d events", err, n)
	}
}

// TestReplayHolds: a replay holds at the recorded run's hold points (its
// hold events), so a UI pauses it where it would pause the live run; a
// hold that ends with the context ends the replay.
func TestReplayHolds(t *testing.T) {
	var seq []string
	err := Replay(context.Background(), &Recording{Events: sampleEvents()}, ReplayOptions{
		Hold: func(ctx context.Context, stage loop.Stage) error {
			seq = append(seq, "HOLD "+string(stage))
			return nil
		},
	}, func(ev loop.Event) { seq = append(seq, string(ev.Type)) })
	if err != nil {
		t.Fatal(err)
	}
	want := "run_started|hold|HOLD turn|step_started|thinking|thinking|tool_call|hold|HOLD action|action|screen_change|finished"
	if got := strings.Join(seq, "|"); got != want {
		t.Errorf("sequence\n got %s\nwant %s", got, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = Replay(ctx, &Recording{Events: sampleEvents()}, ReplayOptions{
		Hold: func(ctx context.Context, stage loop.Stage) error {
			cancel() // the user quits while paused
			<-ctx.Done()
			return ctx.Err()
		},
	}, func(loop.Event) { n++ })
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Errorf("err = %v after %d events, want cancelled after run_started and the first hold", err, n)
	}
}

// screenPhone is a phone that always shows one screen and does nothing.
type screenPhone struct{}

const oneScreen = `<hierarchy rotation="0"><node index="0" text="" class="android.widget.FrameLayout" package="p" bounds="[0,0][1080,2400]"><node index="0" text="Wi-Fi" class="android.widget.Button" package="p" clickable="true" bounds="[0,100][1080,300]"/></node></hierarchy>`

func (screenPhone) Dump(ctx context.Context) ([]byte, error)                       { return []byte(oneScreen), nil }
func (screenPhone) Tap(context.Context, int, int) error                            { return nil }
func (screenPhone) LongPress(context.Context, int, int) error                      { return nil }
func (screenPhone) Type(context.Context, string) error                             { return nil }
func (screenPhone) Key(context.Context, string) error                              { return nil }
func (screenPhone) OpenApp(context.Context, string) error                          { return nil }
func (screenPhone) Size(context.Context) (int, int, error)                         { return 1080, 2400, nil }
func (screenPhone) CurrentApp(context.Context) (string, error)                     { return "p", nil }
func (screenPhone) Swipe(context.Context, int, int, int, int, time.Duration) error { return nil }

// TestReplayHoldsAsTheLoopDid: a recorded run holds in its replay exactly
// where the loop held, also after a corrective turn that still had no call
// (where the loop goes on to the next step without a hold of its own, and
// guessing the holds from the tool_call events would hold twice).
func TestReplayHoldsAsTheLoopDid(t *testing.T) {
	prose := "--- turn\nHmm.</think>I am not sure.\n"
	s, err := script.Parse("holds", []byte(prose+prose+
		"--- turn\nTap it.</think><tool_call>tap<arg_key>index</arg_key><arg_value>0</arg_value></tool_call>\n"+
		"--- turn\nDone.</think><tool_call>task_complete<arg_key>summary</arg_key><arg_value>ok</arg_value></tool_call>\n"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Scripted: true})
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	res := loop.Run(context.Background(), loop.Config{
		Task: "t", Device: screenPhone{}, DeviceName: "phone", Think: true, Sensitive: []string{},
		Model:   script.New(s, script.Options{}),
		OnEvent: w.Event, PollInterval: time.Millisecond, SettleTimeout: 5 * time.Millisecond,
		Hold: func(_ context.Context, stage loop.Stage) error {
			live = append(live, string(stage))
			return nil
		},
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !res.Success {
		t.Fatalf("run: %+v", res)
	}
	rec, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	err = Replay(context.Background(), rec, ReplayOptions{Hold: func(_ context.Context, stage loop.Stage) error {
		replayed = append(replayed, string(stage))
		return nil
	}}, func(loop.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if l, r := strings.Join(live, " "), strings.Join(replayed, " "); l != r {
		t.Errorf("holds\n live   %s\n replay %s", l, r)
	}
	for _, ev := range rec.Events {
		if ev.Device != "phone" {
			t.Errorf("a %s event names the device %q", ev.Type, ev.Device)
		}
	}
}

// TestReadVersion1: a recording of version 1, whose events said in words
// what version 2 types, is read as version 2: every event names the
// device, actions have their outcome, and the hold points are where the
// loop of version 1 held.
func TestReadVersion1(t *testing.T) {
	rec, err := Open(filepath.Join("testdata", "v1-wifi-recover.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Header.Version != 1 {
		t.Fatalf("testdata/v1-wifi-recover.jsonl is version %d", rec.Header.Version)
	}
	var seq []string
	outcomes := map[loop.Outcome]int{}
	for _, ev := range rec.Events {
		if ev.Device != "sim:wifi" {
			t.Errorf("a %s event names the device %q", ev.Type, ev.Device)
		}
		switch ev.Type {
		case loop.EvHold:
			seq = append(seq, "hold "+string(ev.Stage))
		case loop.EvStepStarted, loop.EvToolCall:
			seq = append(seq, string(ev.Type))
		case loop.EvAction:
			outcomes[ev.Outcome]++
		}
	}
	// Step 5 has a corrective turn: prose, then a call.
	step := "hold turn step_started tool_call hold action "
	want := strings.Repeat(step, 4) + "hold turn step_started tool_call hold turn tool_call hold action " + step
	if got := strings.Join(seq, " ") + " "; got != want {
		t.Errorf("holds\n got %s\nwant %s", got, want)
	}
	// Step 3's bad index was not run; the rest was done.
	if outcomes[loop.OutcomeNotRun] != 1 || outcomes[loop.OutcomeDone] != 5 || len(outcomes) != 2 {
		t.Errorf("outcomes %v", outcomes)
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Scripted: true})
	for _, ev := range sampleEvents() {
		w.Event(ev)
	}
	w.Close()
	f.Add(buf.String())
	f.Add(`{"type":"recording"}` + "\n" + `{"type":"x","element":-1,"changed":null}`)
	f.Fuzz(func(t *testing.T, in string) {
		rec, err := Read(strings.NewReader(in))
		if err != nil {
			return
		}
		_ = rec.Result()
		_ = rec.Started()
		_ = Replay(context.Background(), rec, ReplayOptions{}, func(loop.Event) {})
	})
}

// failAfter takes n bytes, then fails every write, as a disk that fills
// up does.
type failAfter struct {
	bytes.Buffer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.Len()+len(p) > f.n {
		return 0, syscall.ENOSPC
	}
	return f.Buffer.Write(p)
}

// TestRecordingBehindAQueueKeepsWhatItWrote: a recording fed through a
// sink queue whose disk fills up holds every event up to the failure,
// and the queue's Close says what failed and how far it got.
func TestRecordingBehindAQueueKeepsWhatItWrote(t *testing.T) {
	evs := sampleEvents()
	var whole bytes.Buffer
	ww, _ := NewWriter(&whole, Header{})
	for _, ev := range evs[:4] {
		ww.Event(ev)
	}
	ww.Close()
	disk := &failAfter{n: whole.Len() + 10} // room for the header and 3 events, not the 4th
	w, err := NewWriter(disk, Header{})
	if err != nil {
		t.Fatal(err)
	}
	q := sink.New("recording", w.Consume, sink.Options{})
	for _, ev := range evs {
		q.Event(ev)
	}
	err = q.Close(context.Background())
	var se *sink.Error
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) || se.Lost == 0 {
		t.Fatalf("Close = %v", err)
	}
	rec, rerr := Read(bytes.NewReader(disk.Bytes()))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(rec.Events) < 3 || !reflect.DeepEqual(rec.Events, evs[:len(rec.Events)]) {
		t.Errorf("the recording holds %d events, not the first ones", len(rec.Events))
	}
}
