package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/tui"
)

type replayOptions struct {
	d     *deps
	file  string
	speed float64
	// phone is a replay on a phone (--device, --sim); its run options
	// hold --json and --no-tui for both kinds.
	phone phoneReplay
}

func newReplayCmd(d *deps) *cobra.Command {
	o := &replayOptions{d: d, phone: phoneReplay{run: &runOptions{d: d}}}
	c := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play back a recorded run as if it were live",
		Long: `Play back a recording made with 'droidgo run --record', or carry it out again
on a phone.

Without --device or --sim it draws the recording: the same events, with the
same pauses (scaled by --speed), shown the same way as a live run: the TUI on a
terminal, plain text with --no-tui or when stdout is not a terminal, JSON lines
with --json. FILE may also name a recording shipped with droidgo (wifi, alarm,
devopts, bluetooth, search, ...; see fixtures/recordings). Those runs are
scripted: the model output in them was written by hand, and the header says so.

With --device SERIAL or --sim SCENARIO it does the recorded run again on that
phone, with no model: before each recorded action it reads the screen until it
settles, checks it is recognisably the recorded screen (--min-similarity),
finds the recorded element by what it is (its name, resource-id, class,
package, place among its siblings and ancestors, and last its position:
--min-score), and carries out the action as the agent would. Sensitive actions
still wait for approval, --step makes every one wait. task_complete ends it
with the simulator's check (on a simulator) or the recorded summary. Where the
phone disagrees (a screen that is not the recorded one, an element that is
gone, covered or in the other state) it stops with a report: the recorded
element, the best candidates on the live screen with their scores and what
differs. With --model or --endpoint the model takes over there instead, with
the recorded task and what was done so far, and the replay resumes when a
recorded screen comes back.

Exit status: drawing: 0 when the recorded run succeeded, 1 when it failed, 2
when the file cannot be read. On a phone: 0 only when every recorded step was
carried out and the run ended as recorded, 1 when it stopped or failed, 2 on a
usage error. With --json the last line is
{"type":"replay_result","replayed":N,"total":M,"stopped_at":K,"why":"..."}
(stopped_at and why only when it stopped).`,
		Example: `  droidgo replay fixtures/recordings/wifi.jsonl
  droidgo replay wifi --speed 2
  droidgo replay run.jsonl --json --speed 0
  droidgo replay wifi --sim wifi-inserted
  droidgo replay bt.jsonl --device emulator-5554 --json
  droidgo replay wifi --sim wifi-dialog --model script:dismiss.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			o.phone.run.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.phone.run.set[f.Name] = true })
			return runReplay(o)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.speed, "speed", 1, "drawing speed: 2 is twice as fast, 0 is instant")
	o.phone.addFlags(f)
	return c
}

// phoneOnly are the flags that only a replay on a phone takes.
var phoneOnly = []string{"model", "endpoint", "model-name", "max-steps", "no-think", "think-budget", "temperature", "top-p", "seed", "record", "step", "sensitive", "min-similarity", "min-score", "poll"}

// openRecording reads FILE, or a shipped recording named FILE.
func openRecording(name string) (*recording.Recording, error) {
	rec, err := recording.Open(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return rec, err
	}
	// A shipped recording by its name, or by its path in the source tree
	// when droidgo runs from elsewhere.
	slashed := filepath.ToSlash(name)
	dir := path.Dir(slashed)
	shipped := dir == "." || dir == "fixtures/recordings" || strings.HasSuffix(dir, "/fixtures/recordings")
	base := strings.TrimSuffix(path.Base(slashed), ".jsonl")
	if f, ferr := fixtures.FS.Open(path.Join("recordings", base+".jsonl")); ferr == nil && shipped {
		defer f.Close()
		rec, rerr := recording.Read(f)
		if rerr != nil {
			return nil, fmt.Errorf("shipped recording %s: %w", base, rerr)
		}
		return rec, nil
	}
	return nil, fmt.Errorf("no recording %s (shipped recordings: %s): %w", name, strings.Join(shippedRecordings(), ", "), os.ErrNotExist)
}

// shippedRecordings names the recordings in fixtures/recordings.
func shippedRecordings() []string {
	entries, _ := fs.ReadDir(fixtures.FS, "recordings")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok {
			names = append(names, n)
		}
	}
	return names
}

func runReplay(o *replayOptions) error {
	d := o.d
	run := o.phone.run
	onPhone := run.sim != "" || run.set["device"]
	if !onPhone {
		for _, name := range phoneOnly {
			if run.set[name] {
				return usageErr(fmt.Errorf("--%s is for a replay on a phone: give --device SERIAL or --sim SCENARIO", name))
			}
		}
	} else if run.set["speed"] {
		return usageErr(errors.New("--speed is for drawing a recording; a replay on a phone goes at the phone's pace"))
	}
	if o.speed < 0 {
		return usageErr(fmt.Errorf("--speed must be 0 or more, not %v", o.speed))
	}
	rec, err := openRecording(o.file)
	if err != nil {
		return usageErr(err)
	}
	if onPhone {
		if err := o.phone.check(); err != nil {
			return err
		}
		plan, err := replay.FromRecording(rec)
		if err != nil {
			return usageErr(fmt.Errorf("recording %s cannot be replayed: %w", o.file, err))
		}
		return o.phone.do(plan, "replay:"+filepath.Base(o.file), replayNote("replay of "+o.file, plan, d.clock()))
	}
	started := rec.Started()
	ropts := recording.ReplayOptions{Speed: o.speed, Now: d.now, Sleep: d.sleep}
	_, replayErr := d.show(d.ctx, view{
		json: run.json, noTUI: run.noTUI,
		ui:     tui.Options{Task: started.Task, Device: started.Device, Model: started.Model, MaxSteps: started.MaxSteps, Replay: true},
		header: "replay:   " + describeRecording(rec.Header), // the recording's note: text from a file
	}, func(ctx context.Context, emit func(loop.Event), ui *tui.UI) (*loop.Result, error) {
		if ui != nil {
			ropts.Hold = ui.Hold
		}
		if err := recording.Replay(ctx, rec, ropts, emit); err != nil {
			return nil, err
		}
		return rec.Result(), nil
	})
	if replayErr != nil {
		if errors.Is(replayErr, context.Canceled) {
			return exitCode(1) // stopped before the end
		}
		return replayErr
	}
	res := rec.Result()
	if res == nil {
		if !run.json {
			fmt.Fprintln(d.stdout, "\nresult:   none (the recording ends before the run did)")
		}
		return exitCode(1)
	}
	if !res.Success {
		return exitCode(1)
	}
	return nil
}

// describeRecording says what a recording is, leading with whether the
// model output in it is real.
func describeRecording(h recording.Header) string {
	var b strings.Builder
	if h.Scripted {
		b.WriteString("SCRIPTED run (model output written by hand, not generated)")
	} else {
		b.WriteString("recorded run")
	}
	if !h.Created.IsZero() {
		fmt.Fprintf(&b, ", recorded %s", h.Created.UTC().Format("2006-01-02 15:04 MST"))
	}
	if h.Note != "" && !h.Scripted {
		fmt.Fprintf(&b, "; %s", h.Note)
	}
	return b.String()
}
