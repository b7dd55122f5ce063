// Package recording writes a run's events to a JSON-lines file and plays
// them back.
//
// A recording is a header line, {"type":"recording",...} (see Header),
// followed by one loop.Event per line, exactly as the loop emitted them:
// the screens with their raw XML, the prompts, every token, the parsed
// calls, the actions, their timings and the result. Replaying a recording
// emits the same events again, so a display cannot tell it from a live run.
package recording

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/loop"
)

// Version is the recording format version written in headers. Version 2
// added to the events what version 1 left to be guessed from their text:
// the device on every event, an action's outcome, an approval's reason
// and the loop's hold points (EvHold). Read fills those in for a version
// 1 recording (upgrade), so every consumer sees version 2 events.
const Version = 2

// HeaderType is the type of the first line of a recording.
const HeaderType = "recording"

// Header is the first line of a recording.
type Header struct {
	Type    string    `json:"type"` // always "recording"
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// Scripted is true when the model was a script (model/script): the
	// "model output" is written by hand, not generated.
	Scripted bool   `json:"scripted"`
	Task     string `json:"task,omitempty"`
	Model    string `json:"model,omitempty"`
	Device   string `json:"device,omitempty"`
	// Note is free text shown by replay, e.g. how the file was made.
	Note string `json:"note,omitempty"`
}

// Writer writes a recording. It is safe for concurrent use; Event can be
// passed as (part of) loop.Config.OnEvent.
type Writer struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	c   io.Closer
	err error
}

// NewWriter starts a recording on w with header h (Type and Version are
// filled in).
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Type, h.Version = HeaderType, Version
	rw := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	if c, ok := w.(io.Closer); ok {
		rw.c = c
	}
	rw.line(h)
	if err := rw.flush(); err != nil {
		return nil, err
	}
	return rw, nil
}

// Create creates the file path and starts a recording in it.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	w, err := NewWriter(f, h)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) line(v any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
		return
	}
	b = append(b, '\n')
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
	}
}

func (w *Writer) flush() error {
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("write recording: %w", err)
		}
	}
	return w.err
}

// Event appends ev. Everything but token events is flushed at once, so a
// run that is killed keeps its recording up to its last step.
func (w *Writer) Event(ev loop.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line(ev)
	if !ev.Type.Droppable() {
		w.flush()
	}
}

// Consume appends ev and returns the first write error: a consumer for
// sink.New.
func (w *Writer) Consume(ev loop.Event) error {
	w.Event(ev)
	return w.Err()
}

// Err reports the first write error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes the recording and closes its file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.flush()
	if w.c != nil {
		if cerr := w.c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close recording: %w", cerr)
		}
		w.c = nil
	}
	return err
}

// Recording is a recording read back.
type Recording struct {
	Header Header
	Events []loop.Event
}

// maxLine bounds one line; a screen's XML is the largest thing on a line.
const maxLine = 16 << 20

// Read reads a recording. Errors name the line.
func Read(r io.Reader) (*Recording, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	rec := &Recording{}
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if rec.Header.Type == "" {
			if err := json.Unmarshal(line, &rec.Header); err != nil {
				return nil, fmt.Errorf("line %d: not a recording header: %v", n, err)
			}
			if rec.Header.Type != HeaderType {
				return nil, fmt.Errorf("line %d: not a recording: the first line must have \"type\":%q", n, HeaderType)
			}
			if rec.Header.Version > Version {
				return nil, fmt.Errorf("line %d: recording version %d is newer than this droidgo reads (%d)", n, rec.Header.Version, Version)
			}
			continue
		}
		var ev loop.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("line %d: bad event: %v", n, err)
		}
		if ev.Type == "" {
			return nil, fmt.Errorf("line %d: event without a type", n)
		}
		rec.Events = append(rec.Events, ev)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d MiB", n+1, maxLine>>20)
		}
		return nil, err
	}
	if rec.Header.Type == "" {
		return nil, errors.New("empty file: no recording header")
	}
	if rec.Header.Version < 2 {
		rec.Events = upgrade(rec.Events, rec.Header.Device)
	}
	return rec, nil
}

// upgrade gives the events of a version 1 recording what version 2 events
// carry. Version 1 said it in words only, so this, and nothing else, reads
// the words the loop wrote then: an action's Detail and Error ("not run",
// "needs approval: ...", "skipped by the user"), an approval's Text ("step
// mode"). The hold points are where the loop of version 1 held: before
// each step_started event, and after each tool_call event (before the
// call was run, or before the corrective turn when it had none).
func upgrade(events []loop.Event, device string) []loop.Event {
	out := make([]loop.Event, 0, len(events)+len(events)/4)
	hold := func(at loop.Event, stage loop.Stage) {
		out = append(out, loop.Event{Type: loop.EvHold, Time: at.Time, Step: at.Step, Device: device, Stage: stage})
	}
	for _, ev := range events {
		if ev.Type == loop.EvRunStarted && ev.Device != "" {
			device = ev.Device
		}
		if ev.Device == "" {
			ev.Device = device
		}
		switch ev.Type {
		case loop.EvStepStarted:
			hold(ev, loop.HoldTurn)
		case loop.EvAction:
			if ev.Outcome == "" {
				ev.Outcome = legacyOutcome(ev)
			}
		case loop.EvApproval:
			if ev.Approval == "" {
				ev.Approval = loop.ApprovalSensitive
				if ev.Text == "step mode" {
					ev.Approval = loop.ApprovalStepMode
				}
			}
		}
		out = append(out, ev)
		if ev.Type == loop.EvToolCall {
			stage := loop.HoldAction
			if ev.Call == nil {
				stage = loop.HoldTurn
			}
			hold(ev, stage)
		}
	}
	return out
}

// legacyOutcome reads the outcome of a version 1 action event from its
// words.
func legacyOutcome(ev loop.Event) loop.Outcome {
	switch {
	case ev.Detail == "skipped by the user":
		return loop.OutcomeSkipped
	case ev.Detail == "not run" && strings.HasPrefix(ev.Error, "needs approval: "):
		return loop.OutcomeRefused
	case ev.Detail == "not run":
		return loop.OutcomeNotRun
	case ev.Error != "":
		return loop.OutcomeFailed
	}
	return loop.OutcomeDone
}

// Open reads the recording in path.
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	return rec, nil
}

// Started returns the run_started event, or the zero Event.
func (r *Recording) Started() loop.Event {
	for _, ev := range r.Events {
		if ev.Type == loop.EvRunStarted {
			return ev
		}
	}
	return loop.Event{}
}

// Result returns the run's result, or nil if the recording has none (the
// run was killed before it ended).
func (r *Recording) Result() *loop.Result {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if r.Events[i].Type == loop.EvFinished {
			return r.Events[i].Result
		}
	}
	return nil
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// Speed scales the recorded pauses between events: 2 plays twice as
	// fast, 0 plays instantly.
	Speed float64
	// MaxPause caps one pause (before scaling), so a recording of a run
	// left waiting on an approval does not stall; 0 means 5s.
	MaxPause time.Duration
	// Now and Sleep replace the clock in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Hold, when set, is called at the recorded run's hold points (its
	// EvHold events: where loop.Config.Hold was asked). A UI pauses the
	// replay there.
	Hold func(ctx context.Context, stage loop.Stage) error
}

// Replay emits the recording's events in order, pausing between them as
// the run did (scaled by Speed), and holds where the run passed a hold
// point. Event times are moved to the replay's clock so displays show live
// elapsed times. It returns ctx.Err() when cancelled (also while held) and
// nil after the last event.
func Replay(ctx context.Context, rec *Recording, opts ReplayOptions, emit func(loop.Event)) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = clock.Sleep
	}
	if opts.MaxPause <= 0 {
		opts.MaxPause = 5 * time.Second
	}
	start := opts.Now()
	var offset time.Duration // the replay clock, relative to start
	for i, ev := range rec.Events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i > 0 && opts.Speed > 0 {
			gap := ev.Time.Sub(rec.Events[i-1].Time)
			gap = min(max(gap, 0), opts.MaxPause)
			d := time.Duration(float64(gap) / opts.Speed)
			offset += d
			if err := opts.Sleep(ctx, d); err != nil {
				return err
			}
		}
		ev.Time = start.Add(offset)
		emit(ev)
		if ev.Type == loop.EvHold && opts.Hold != nil {
			if err := opts.Hold(ctx, ev.Stage); err != nil {
				return err
			}
		}
	}
	return nil
}
