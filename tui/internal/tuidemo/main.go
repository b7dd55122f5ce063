// Command tuidemo shows the terminal UI playing the canned Wi-Fi run of
// tui/internal/demo, for the tmux check and for working on the UI without a
// phone or a model. It is a development tool, not part of droidgo.
//
//	go run ./tui/internal/tuidemo [-delay 30ms] [-exit] [-step]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/tui"
	"github.com/droidgo/droidgo/tui/internal/demo"
)

func main() {
	delay := flag.Duration("delay", 30*time.Millisecond, "pause after each event")
	exit := flag.Bool("exit", false, "leave when the run ends")
	step := flag.Bool("step", false, "ask before each action (step mode)")
	flag.Parse()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ui := tui.New(tui.Options{Replay: true, StepMode: *step, Cancel: cancel, ExitOnFinish: *exit,
		In: os.Stdin, Out: os.Stdout})
	go func() {
		defer ui.Close()
		for _, ev := range demo.Events() {
			if ctx.Err() != nil {
				ui.Send(loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "stopped by the user"}})
				return
			}
			if ev.Type == loop.EvAction && *step && ev.Call != nil && ev.Call.Name != action.TaskComplete {
				d, err := ui.Approve(ctx, loop.ApprovalRequest{Step: ev.Step, Call: *ev.Call, Why: loop.ApprovalStepMode, Reason: "step mode"})
				if err != nil || d.Verdict == loop.Abort {
					ui.Send(loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "stopped by the user"}})
					return
				}
			}
			// The canned run passes the loop's hold points, so p pauses it.
			if ev.Type == loop.EvStepStarted && ui.Hold(ctx, loop.HoldTurn) != nil {
				continue // cancelled: the next round says so
			}
			ui.Send(ev)
			if ev.Type == loop.EvToolCall && ui.Hold(ctx, loop.HoldAction) != nil {
				continue
			}
			select {
			case <-time.After(*delay):
			case <-ctx.Done():
			}
		}
	}()
	if err := ui.Run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(1)
	}
}
