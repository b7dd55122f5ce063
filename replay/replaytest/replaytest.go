// Package replaytest makes recorded runs for the tests of replays and
// macros: the shipped recordings, and runs of a scenario's always-right
// script with the agent's loop, as `droidgo eval --model
// script:fixtures/scripts/eval` makes them.
package replaytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/simulator"
)

// Clock is a clock that only moves when slept on.
type Clock struct{ T time.Time }

// NewClock starts a clock at a fixed time.
func NewClock() *Clock { return &Clock{T: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.T }

// Sleep moves the clock on by d.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.T = c.T.Add(d)
	return ctx.Err()
}

// Shipped reads the shipped recording called name (fixtures/recordings).
func Shipped(t testing.TB, name string) *recording.Recording {
	t.Helper()
	f, err := fixtures.FS.Open(path.Join("recordings", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := recording.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// ShippedNames are the names of the shipped recordings.
func ShippedNames(t testing.TB) []string {
	t.Helper()
	ents, err := fs.ReadDir(fixtures.FS, "recordings")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok {
			names = append(names, n)
		}
	}
	return names
}

// ScriptFile is the path of the always-right script of scenario name
// (fixtures/scripts/eval/NAME.txt).
func ScriptFile(name string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "fixtures", "scripts", "eval", name+".txt")
}

// ApproveAll approves every call, as droidgo eval does.
func ApproveAll(context.Context, loop.ApprovalRequest) (loop.Decision, error) {
	return loop.Decision{Verdict: loop.Approve}, nil
}

// RunScript runs scenario name's always-right script on phone with the
// agent's loop, and returns the run's recording, its result and the
// phone's end state.
func RunScript(t testing.TB, phone *simulator.Phone, name string) (*recording.Recording, loop.Result, simulator.State) {
	t.Helper()
	data, res, st := RunScriptFile(t, phone, name)
	rec, err := recording.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return rec, res, st
}

// RunScriptFile is RunScript with the recording as its file's bytes.
func RunScriptFile(t testing.TB, phone *simulator.Phone, name string) ([]byte, loop.Result, simulator.State) {
	t.Helper()
	clk := NewClock()
	b, err := script.Open(ScriptFile(name)+"?pace=0", script.Options{Now: clk.Now, Sleep: clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := recording.NewWriter(&buf, recording.Header{Task: phone.Task(), Device: "sim:" + name, Model: b.Name(), Scripted: true})
	if err != nil {
		t.Fatal(err)
	}
	res := loop.Run(context.Background(), loop.Config{
		Task: phone.Task(), Device: phone, DeviceName: "sim:" + name, Model: b,
		OnEvent: w.Event, PollInterval: 10 * time.Millisecond, Now: clk.Now, Sleep: clk.Sleep,
		Approver: ApproveAll,
		Verify: func(context.Context) error {
			if !phone.Success() {
				return errors.New("the check does not hold")
			}
			return nil
		},
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res, phone.State()
}

// Config is a replay of plan on phone, with its success check and a
// clock that moves only when slept on.
func Config(plan *replay.Plan, phone *simulator.Phone) replay.Config {
	clk := NewClock()
	return replay.Config{
		Plan: plan, Device: phone, DeviceName: "sim", Source: "replay:test",
		Verify: func(context.Context) error {
			if !phone.Success() {
				return fmt.Errorf("the check does not hold")
			}
			return nil
		},
		Read: loop.ReadOptions{PollInterval: loop.SimulatedPollInterval},
		Now:  clk.Now, Sleep: clk.Sleep,
	}
}
