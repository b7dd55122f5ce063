package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/report"
	"github.com/droidgo/droidgo/sink"
	"github.com/droidgo/droidgo/tui"
)

// view says how `run` and `replay` show their events.
type view struct {
	json, noTUI bool
	// ui describes the run in the TUI; show fills in Cancel, In and Out.
	ui tui.Options
	// header is printed above plain text (not above JSON or the TUI).
	header string
	// sinks receive every event, each behind its own queue (a
	// recording); show drains them before it returns.
	sinks sink.Set
	// devices names the phones when the run has several: plain text
	// then prefixes each line with its phone's name.
	devices []string
}

// drainGrace is how long an interrupted command still waits for its
// consumers (the end of a recording, the last lines to a terminal).
const drainGrace = 5 * time.Second

// A player produces the events of a run or a replay: it sends each to
// emit and returns the result (nil when there is none). ui is the TUI the
// events are shown in, or nil under a printer.
type player func(ctx context.Context, emit func(loop.Event), ui *tui.UI) (*loop.Result, error)

// show plays play with its events shown on standard output: in the TUI on
// a terminal (unless v.json or v.noTUI), else as plain text or as JSON
// lines. The printer and v.sinks each take the events from a queue of
// their own (sink.Queue), so a stalled pipe or a slow disk never holds up
// the run; show waits for them before it returns, and a consumer that
// failed is an error. Quitting the TUI cancels the play, which still ends
// with a result (and a complete recording); the result is left on the
// terminal once the TUI is gone. A failed write to stdout is reported by
// execute, for every command alike.
func (d *deps) show(ctx context.Context, v view, play player) (*loop.Result, error) {
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queues := v.sinks
	if v.json || v.noTUI || !d.isTerminal(d.stdout) {
		var consume func(loop.Event) error
		if v.json {
			consume = report.NewJSON(d.stdout).Consume
		} else {
			if v.header != "" {
				fmt.Fprintln(termsafe.NewWriter(d.stdout), v.header)
			}
			consume = report.NewText(d.stdout).Consume
			if len(v.devices) > 1 {
				consume = newPhonesText(d.stdout, v.devices).Consume
			}
		}
		queues = append(queues, sink.New("printing the run", consume, sink.Options{}))
		res, err := play(ctx, queues.Event, nil)
		err = errors.Join(err, queues.Drain(outer, drainGrace))
		if res != nil && err == nil && !v.json && len(v.devices) > 1 {
			// Each phone printed its result; this is the run's.
			printSummary(d.stdout, *res)
		}
		return res, err
	}
	uo := v.ui
	uo.Cancel, uo.In, uo.Out = cancel, d.stdin, terminalOut(d.stdout)
	ui := tui.New(uo)
	type played struct {
		res *loop.Result
		err error
	}
	done := make(chan played, 1)
	go func() {
		// The TUI has a queue of its own that never blocks (tui.UI.Send).
		res, err := play(ctx, func(ev loop.Event) {
			queues.Event(ev)
			ui.Send(ev)
		}, ui)
		ui.Close()
		done <- played{res, err}
	}()
	uiErr := ui.Run(ctx)
	cancel() // the user quit: stop what still plays
	p := <-done
	p.err = errors.Join(p.err, queues.Drain(outer, drainGrace))
	if p.res != nil && p.err == nil {
		printSummary(d.stdout, *p.res)
	}
	if uiErr != nil && !errors.Is(uiErr, context.Canceled) {
		return p.res, fmt.Errorf("terminal UI: %w", uiErr)
	}
	return p.res, p.err
}
