// Package tui shows a droidgo run in the terminal: the model's thinking as it
// streams, the screen's elements, the timeline of steps and the result.
//
// The loop talks to a UI through four calls, safe from any goroutine:
// Send for every event (loop.Config.OnEvent), Hold at the loop's hold
// points (loop.Config.Hold), Approve as the loop's Approver, and Close
// after the last event. Run draws until the user quits.
//
// Send never blocks: events wait in an unbounded queue and token events
// (thinking, answer) are coalesced there, so a slow terminal sees fewer,
// longer token events while every other event arrives in order.
//
// Pausing (the p key) holds the run at its next hold point: Hold blocks
// before a turn of the model and before a decided call runs, and Approve
// blocks before approving a call by itself, until the user resumes or
// quits. Events keep flowing while paused (the turn under way finishes
// streaming); no new turn starts and no action runs.
package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/droidgo/droidgo/loop"
)

// Options configure a UI.
type Options struct {
	Task   string
	Device string
	// Devices names the phones of a run that drives several, as their
	// events name them (loop.Event.Device): the UI shows one at a time,
	// with a line of the others' state. Empty or one: one phone, Device.
	Devices  []string
	Model    string
	MaxSteps int
	// StepMode makes every action wait for approval.
	StepMode bool
	// EveryCall says the run hands every action to Approve (not only
	// sensitive ones), so step mode can be switched on at any time.
	EveryCall bool
	// Replay marks a replayed run (shown in the header).
	Replay bool
	// Cancel stops the run when the user quits.
	Cancel context.CancelFunc
	// In is where keys come from (nil: stdin). An *os.File that is not a
	// terminal (stdin redirected) is replaced by the controlling terminal,
	// or by no keys at all when there is none.
	In io.Reader
	// Out is where the UI draws (nil: stdout).
	Out io.Writer
	// ExitOnFinish quits the UI by itself once the run has finished,
	// instead of waiting for the user to press q.
	ExitOnFinish bool

	// Width and Height are the size to draw at when Out is not a terminal
	// (tests, pipes); 0 means $COLUMNS/$LINES or 80x24. A terminal's own
	// size always wins.
	Width, Height int
	// Env is the environment used to detect colour support (NO_COLOR,
	// TERM, ...); nil means the process environment.
	Env []string
}

// UI is a terminal UI for one run. Send events to it from any goroutine;
// Run draws until the user quits.
type UI struct {
	opts  Options
	q     *queue
	gate  *gate
	clock func() time.Time

	closeOnce sync.Once
	runOnce   sync.Once
	final     *ui // the model when Run returned, for tests
	observe   func(*ui)
}

// New returns a UI; call Run to show it.
func New(opts Options) *UI {
	return &UI{opts: opts, q: newQueue(), gate: newGate(opts.StepMode), clock: time.Now}
}

// Send delivers an event and returns at once, paused or not. Token events
// may be coalesced under load; other events are never dropped. After the
// UI has quit, events are discarded.
func (u *UI) Send(ev loop.Event) {
	u.q.push(item{ev: ev})
}

// Hold is the loop's hold point (loop.Config.Hold): it returns at once
// unless the user paused the run, and then when they resume or quit (a UI
// that is gone holds nothing). It returns ctx's error if ctx ends first.
func (u *UI) Hold(ctx context.Context, _ loop.Stage) error {
	return u.gate.wait(ctx)
}

// Close says no more events will come. It may be called more than once.
func (u *UI) Close() { u.closeOnce.Do(u.q.close) }

// Approve asks the user about a call and blocks until they answer; it is a
// loop.Approver. A sensitive call, or any call while step mode is on, is
// shown with its reason and waits for approve, skip, edit or abort. Any other
// call (the loop asks about every call in a run started in step mode, and
// the user may have switched step mode off with s) is approved as soon as
// the run is not paused. If the UI has quit, the answer is Abort; if ctx
// ends first, the error is ctx's.
func (u *UI) Approve(ctx context.Context, req loop.ApprovalRequest) (loop.Decision, error) {
	if req.Why != loop.ApprovalSensitive && !u.gate.inStepMode() {
		if err := u.gate.wait(ctx); err != nil {
			return loop.Decision{}, err
		}
		select {
		case <-u.gate.gone:
			return loop.Decision{Verdict: loop.Abort}, nil
		default:
		}
		return loop.Decision{Verdict: loop.Approve}, nil
	}
	a := &approval{req: req, reply: make(chan loop.Decision, 1)}
	u.q.push(item{appr: a})
	select {
	case d := <-a.reply:
		return d, nil
	case <-u.gate.gone:
		return loop.Decision{Verdict: loop.Abort}, nil
	case <-ctx.Done():
		u.q.push(item{withdraw: a})
		return loop.Decision{}, ctx.Err()
	}
}

// Run shows the UI until the user quits or, with ExitOnFinish, the run ends.
// When ctx ends, the UI waits briefly for the loop to Close, then returns
// ctx's error. Run may be called once; it never needs a terminal (In and Out
// may be any reader and writer).
func (u *UI) Run(ctx context.Context) error {
	err := errors.New("tui: Run called twice")
	u.runOnce.Do(func() { err = u.run(ctx) })
	return err
}

func (u *UI) run(ctx context.Context) error {
	defer func() {
		u.gate.stop()
		u.q.drop()
	}()
	m := newUI(u.opts, u.gate, u.clock)
	m.wait = u.waitCmd
	m.observe = u.observe
	opts := []tea.ProgramOption{}
	if in, closeIn := keyboard(u.opts.In); in != nil || u.opts.In != nil {
		defer closeIn()
		opts = append(opts, tea.WithInput(in))
	}
	if u.opts.Out != nil {
		opts = append(opts, tea.WithOutput(u.opts.Out))
	}
	if u.opts.Width > 0 && u.opts.Height > 0 {
		opts = append(opts, tea.WithWindowSize(u.opts.Width, u.opts.Height))
	}
	if u.opts.Env != nil {
		opts = append(opts, tea.WithEnvironment(u.opts.Env))
	}
	opts = append(opts, tea.WithFilter(filterInterrupt))
	p := tea.NewProgram(m, opts...)

	// The run's context is usually the one Options.Cancel cancels, so it is
	// not handed to bubbletea (which would stop drawing at once); the ui
	// is told instead and leaves once the loop has closed.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		select {
		case <-ctx.Done():
			p.Send(ctxDoneMsg{})
		case <-watchDone:
		}
	}()

	// bubbletea sets the title while it runs and clears it on exit; the
	// terminal's title stack (XTWINOPS 22/23) gives the user's own title
	// back instead. Terminals without the stack ignore both.
	out := u.opts.Out
	if out == nil {
		out = os.Stdout
	}
	io.WriteString(out, ansi.WindowOp(22, 0))
	final, err := p.Run()
	io.WriteString(out, ansi.WindowOp(23, 0))
	if fm, ok := final.(*ui); ok {
		u.final = fm
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil && (u.final == nil || !u.final.userQuit) {
		return ctx.Err()
	}
	return nil
}

// keyboard picks where keys come from. A reader that is not a file (tests,
// pipes made in Go) is used as it is. A file that is not a terminal (stdin
// redirected from /dev/null, a file or a pipe) cannot give the user's keys,
// and bubbletea cannot even poll some of them, so the controlling terminal
// is opened instead, as bubbletea does for a nil input; without one the UI
// runs without keys.
func keyboard(in io.Reader) (io.Reader, func()) {
	nothing := func() {}
	f, ok := in.(*os.File)
	if !ok || term.IsTerminal(int(f.Fd())) {
		return in, nothing
	}
	tty, out, err := tea.OpenTTY()
	if err != nil {
		return nil, nothing
	}
	return tty, func() { tty.Close(); out.Close() }
}

// filterInterrupt turns a SIGINT that reached bubbletea (when input is not a
// terminal in raw mode) into a clean stop: bubbletea would otherwise leave
// at once, before the loop has finished and flushed its recording.
func filterInterrupt(_ tea.Model, msg tea.Msg) tea.Msg {
	if _, ok := msg.(tea.InterruptMsg); ok {
		return ctxDoneMsg{why: "interrupted"}
	}
	return msg
}

// frameInterval bounds how often queued events are taken and drawn: about
// 30 frames a second is smooth for streaming text and leaves the CPU to the
// model.
const frameInterval = 33 * time.Millisecond

// waitCmd waits for queued events and delivers them as one batch. Re-issued
// after each batch, it is the UI's only reader of the queue.
func (u *UI) waitCmd(last time.Time) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-u.q.notify:
		case <-u.gate.gone:
			return nil
		}
		if d := frameInterval - time.Since(last); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-u.gate.gone:
				t.Stop()
				return nil
			}
		}
		items, closed := u.q.drain()
		return batchMsg{items: items, closed: closed, at: time.Now()}
	}
}
