package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/report"
	"github.com/droidgo/droidgo/tui"
)

// view says how `run` and `replay` show their events.
type view struct {
	json, noTUI bool
	// ui describes the run in the TUI; show fills in Cancel, In and Out.
	ui tui.Options
	// header is printed above plain text (not above JSON or the TUI).
	header string
	// sinks receive every event before it is shown (a recording).
	sinks []func(loop.Event)
}

// A player produces the events of a run or a replay: it sends each to
// emit and returns the result (nil when there is none). ui is the TUI the
// events are shown in, or nil under a printer.
type player func(ctx context.Context, emit func(loop.Event), ui *tui.UI) (*loop.Result, error)

// show plays play with its events shown on standard output: in the TUI on
// a terminal (unless v.json or v.noTUI), else as plain text or as JSON
// lines. Quitting the TUI cancels the play, which still ends with a result
// (and a flushed recording); the result is left on the terminal once the
// TUI is gone. A failed write to stdout is reported by execute, for every
// command alike.
func (d *deps) show(ctx context.Context, v view, play player) (*loop.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if v.json || v.noTUI || !d.isTerminal(d.stdout) {
		var emit func(loop.Event)
		if v.json {
			emit = report.NewJSON(d.stdout).Event
		} else {
			if v.header != "" {
				fmt.Fprintln(termsafe.NewWriter(d.stdout), v.header)
			}
			emit = report.NewText(d.stdout).Event
		}
		return play(ctx, fanout(append(v.sinks, emit)...), nil)
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
		res, err := play(ctx, fanout(append(v.sinks, ui.Send)...), ui)
		ui.Close()
		done <- played{res, err}
	}()
	uiErr := ui.Run(ctx)
	cancel() // the user quit: stop what still plays
	p := <-done
	if p.res != nil && p.err == nil {
		printSummary(d.stdout, *p.res)
	}
	if uiErr != nil && !errors.Is(uiErr, context.Canceled) {
		return p.res, fmt.Errorf("terminal UI: %w", uiErr)
	}
	return p.res, p.err
}

// fanout delivers each event to every sink in order.
func fanout(sinks ...func(loop.Event)) func(loop.Event) {
	return func(ev loop.Event) {
		for _, s := range sinks {
			s(ev)
		}
	}
}
