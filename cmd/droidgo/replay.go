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

	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/tui"
)

type replayOptions struct {
	d     *deps
	file  string
	speed float64
	json  bool
	noTUI bool
}

func newReplayCmd(d *deps) *cobra.Command {
	o := &replayOptions{d: d}
	c := &cobra.Command{
		Use:   "replay FILE",
		Short: "Play back a recorded run as if it were live",
		Long: `Play back a recording made with 'droidgo run --record': the same events, with the
same pauses (scaled by --speed), shown the same way as a live run: the TUI on a
terminal, plain text with --no-tui or when stdout is not a terminal, JSON lines
with --json.

FILE may also name a recording shipped with droidgo (wifi, alarm, devopts,
bluetooth, search, ...; see fixtures/recordings). Those runs are scripted: the
model output in them was written by hand, and the header says so.

Exit status: 0 when the recorded run succeeded, 1 when it failed, 2 when the
file cannot be read.`,
		Example: `  droidgo replay fixtures/recordings/wifi.jsonl
  droidgo replay wifi --speed 2
  droidgo replay run.jsonl --json --speed 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			return runReplay(o)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.speed, "speed", 1, "playback speed: 2 is twice as fast, 0 is instant")
	f.BoolVar(&o.json, "json", false, "print one JSON event per line")
	f.BoolVar(&o.noTUI, "no-tui", false, "print plain text even on a terminal")
	return c
}

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
	if o.speed < 0 {
		return usageErr(fmt.Errorf("--speed must be 0 or more, not %v", o.speed))
	}
	rec, err := openRecording(o.file)
	if err != nil {
		return usageErr(err)
	}
	started := rec.Started()
	ropts := recording.ReplayOptions{Speed: o.speed, Now: d.now, Sleep: d.sleep}
	_, replayErr := d.show(d.ctx, view{
		json: o.json, noTUI: o.noTUI,
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
		if !o.json {
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
