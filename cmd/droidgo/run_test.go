package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/local"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/simulator"
	"github.com/droidgo/droidgo/sink"
	"github.com/droidgo/droidgo/tui"
)

// -update rewrites fixtures/recordings from fixtures/scripts. Another test
// file of this package may define the flag too; share it then.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files and fixtures/recordings")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const fixturesDir = "../../fixtures"

// scenarios are the shipped simulator scenarios, each with a correct script.
var scenarios = []string{"wifi", "alarm", "devopts", "bluetooth", "search"}

// fakeClock advances only when something sleeps, so scripted runs get the
// timings of a realistic pace without the test waiting.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

type result struct {
	code           int
	stdout, stderr string
}

// harness runs droidgo commands in a test with its fakes injected through
// deps: an environment without the developer's configuration, models and
// caches, optionally a fake clock and a wrapped simulator. Nothing global
// changes, so tests using one can run in parallel.
type harness struct {
	t *testing.T
	// env overrides the process environment.
	env map[string]string
	// clock, when set, is the commands' clock.
	clock *fakeClock
	// wrap, when set, wraps every simulated phone a command opens.
	wrap func(*simulator.Phone) device.Device
	// setup changes the deps further before a command runs.
	setup func(*deps)

	mu   sync.Mutex
	last *simulator.Phone
}

// newHarness hides the developer's configuration file and DROIDGO_*
// variables from the commands a test runs.
func newHarness(t *testing.T) *harness {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty.toml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, k := range config.Keys {
		env[k.Env] = ""
	}
	env["DROIDGO_CONFIG"] = empty
	// A model pulled on the developer's machine must not be picked up.
	env["DROIDGO_CACHE"] = t.TempDir()
	// Nor its prompt cache, and nothing is written to it.
	env["XDG_CACHE_HOME"] = t.TempDir()
	return &harness{t: t, env: env}
}

// fakeClock gives the harness a fake clock starting at a fixed time.
func (h *harness) fakeClock() *fakeClock {
	h.clock = &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	return h.clock
}

func (h *harness) getenv(k string) string {
	if v, ok := h.env[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// deps returns the dependencies of one command run on the given streams.
func (h *harness) deps(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) *deps {
	d := newDeps(ctx, stdin, stdout, stderr)
	d.getenv = h.getenv
	if h.clock != nil {
		d.now, d.sleep = h.clock.Now, h.clock.Sleep
	}
	// The tests run on a computer, whatever its PATH holds.
	d.onPhone = func(context.Context) (local.Props, bool, bool) { return local.Props{}, false, false }
	d.openSim = func(_ context.Context, name string) (device.Device, error) {
		p, err := simulator.Load(name)
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.last = p
		if h.wrap != nil {
			return h.wrap(p), nil
		}
		return p, nil
	}
	if h.setup != nil {
		h.setup(d)
	}
	return d
}

// run runs droidgo with args and empty input.
func (h *harness) run(ctx context.Context, args ...string) result {
	h.t.Helper()
	return h.runWith(ctx, strings.NewReader(""), args...)
}

// runWith runs droidgo with args reading stdin.
func (h *harness) runWith(ctx context.Context, stdin io.Reader, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := executeWith(h.deps(ctx, stdin, &out, &errb), args)
	return result{code, out.String(), errb.String()}
}

// lastPhone is the simulated phone the last command opened.
func (h *harness) lastPhone() *simulator.Phone {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// droidgo runs droidgo with args in a fresh harness.
func droidgo(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	return newHarness(t).run(ctx, args...)
}

func scriptFor(name string, pace string) string {
	return "script:" + filepath.Join(fixturesDir, "scripts", name+".txt") + "?pace=" + pace
}

// TestRunScenarios solves every scenario with its correct script, and
// makes the shipped recordings with -update. The recordings are made on a
// fake clock at the default pace, so they are deterministic: without
// -update the test checks the shipped files are what the scripts produce.
func TestRunScenarios(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			h := newHarness(t)
			h.fakeClock()
			rec := filepath.Join(t.TempDir(), sc+".jsonl")
			r := h.run(context.Background(), "run", "--sim", sc, "--model", scriptFor(sc, "40ms"), "--no-tui", "--record", rec)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !h.lastPhone().Success() {
				t.Fatal("exit 0 but the scenario's success check fails")
			}
			for _, want := range []string{"result:   SUCCESS: task_complete", "thinking: ", "call:     "} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "warning:") {
				t.Errorf("a correct script caused warnings:\n%s", r.stdout)
			}
			got, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			// The header names the script by its base name; the path the
			// test used does not matter.
			shipped := filepath.Join(fixturesDir, "recordings", sc+".jsonl")
			if updating() {
				if err := os.MkdirAll(filepath.Dir(shipped), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(shipped, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(shipped)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/droidgo -run TestRunScenarios -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not what fixtures/scripts/%s.txt produces now; regenerate it with -update", shipped, sc)
			}
		})
	}
}

func TestShippedRecordingsAreLabelled(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios {
		rec, err := recording.Open(filepath.Join(fixturesDir, "recordings", sc+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		h := rec.Header
		if !h.Scripted || !strings.HasPrefix(h.Model, "script:") || !strings.Contains(h.Note, "written by hand") {
			t.Errorf("%s: header %+v is not clearly labelled as scripted", sc, h)
		}
		res := rec.Result()
		if res == nil || !res.Success {
			t.Errorf("%s: result %+v", sc, res)
		}
		// A faithful transcript: raw screens, prompts, raw model output.
		var xml, prompts, raw bool
		for _, ev := range rec.Events {
			xml = xml || ev.Screen != nil && strings.Contains(ev.Screen.XML, "<hierarchy")
			prompts = prompts || ev.Type == loop.EvPrompt && len(ev.Messages) > 0
			raw = raw || ev.Parse != nil && strings.Contains(ev.Parse.Raw, "<tool_call>")
		}
		if !xml || !prompts || !raw {
			t.Errorf("%s: screens %v, prompts %v, raw output %v", sc, xml, prompts, raw)
		}
	}
}

// eventLines parses --json output, dropping the times.
func eventLines(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		if m["type"] == nil {
			t.Fatalf("line without a type: %s", sc.Text())
		}
		delete(m, "time")
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	return lines
}

func TestRunJSONAndReplayAreTheSame(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	rec := filepath.Join(t.TempDir(), "wifi.jsonl")
	live := h.run(context.Background(), "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--json", "--record", rec)
	if live.code != 0 {
		t.Fatalf("exit %d: %s", live.code, live.stderr)
	}
	liveLines := eventLines(t, live.stdout)
	if !strings.Contains(liveLines[0], `"type":"run_started"`) || !strings.Contains(liveLines[len(liveLines)-1], `"type":"finished"`) {
		t.Errorf("first %s, last %s", liveLines[0], liveLines[len(liveLines)-1])
	}
	if strings.Contains(live.stdout, "<hierarchy") || strings.Contains(live.stdout, `"type":"prompt"`) {
		t.Error("--json output carries raw XML or prompts")
	}
	replay := h.run(context.Background(), "replay", rec, "--json", "--speed", "0")
	if replay.code != 0 {
		t.Fatalf("replay exit %d: %s", replay.code, replay.stderr)
	}
	replayLines := eventLines(t, replay.stdout)
	if strings.Join(liveLines, "\n") != strings.Join(replayLines, "\n") {
		t.Errorf("replay differs from the live run:\nlive %d events, replay %d", len(liveLines), len(replayLines))
		for i := range min(len(liveLines), len(replayLines)) {
			if liveLines[i] != replayLines[i] {
				t.Errorf("first difference at event %d:\nlive   %s\nreplay %s", i, liveLines[i], replayLines[i])
				break
			}
		}
	}
}

func TestReplayTextAndTiming(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fakeClock()
	start := h.clock.Now()
	r := h.run(context.Background(), "replay", filepath.Join(fixturesDir, "recordings", "wifi.jsonl"), "--no-tui", "--speed", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "replay:   SCRIPTED run (model output written by hand, not generated)") {
		t.Errorf("the replay does not say it is scripted:\n%s", r.stdout)
	}
	rec, err := recording.Open(filepath.Join(fixturesDir, "recordings", "wifi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := rec.Events[len(rec.Events)-1].Time.Sub(rec.Events[0].Time)
	took := h.clock.Now().Sub(start)
	if recorded <= 0 || took < recorded/2-time.Millisecond || took > recorded/2+time.Millisecond {
		t.Errorf("replay at speed 2 took %v of a %v recording", took, recorded)
	}
	// The shipped name works without a path.
	if r := h.run(context.Background(), "replay", "wifi", "--no-tui", "--speed", "0"); r.code != 0 {
		t.Errorf("replay wifi: exit %d: %s", r.code, r.stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("no turn marker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown scenario", []string{"run", "x", "--sim", "nope", "--model", scriptFor("wifi", "0")}, 2, `unknown scenario "nope"`},
		{"unreadable script", []string{"run", "x", "--sim", "wifi", "--model", "script:" + filepath.Join(dir, "missing.txt")}, 2, "read script"},
		{"bad script", []string{"run", "x", "--sim", "wifi", "--model", "script:" + bad}, 2, "bad.txt:1: text before the first"},
		{"bad pace", []string{"run", "x", "--sim", "wifi", "--model", "script:" + bad + "?pace=fast"}, 2, `pace "fast"`},
		{"sim and device", []string{"run", "x", "--sim", "wifi", "--device", "emulator-5554", "--model", scriptFor("wifi", "0")}, 2, "--sim and --device cannot be used together"},
		{"no model", []string{"run", "x", "--sim", "wifi"}, 2, "no model: download Spark"},
		{"unknown backend", []string{"run", "x", "--sim", "wifi", "--model", "ollama:llama3"}, 2, `model backend "ollama" is not built into this droidgo`},
		{"bad max steps", []string{"run", "x", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--max-steps", "0"}, 2, "--max-steps must be at least 1"},
		{"too many args", []string{"run", "a", "b"}, 2, "accepts at most 1 arg"},
		{"budget exhausted", []string{"run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--max-steps", "2", "--no-tui"}, 1, ""},
		{"task_complete but not done", []string{"run", "--sim", "bluetooth", "--model", scriptFor("wifi", "0"), "--no-tui"}, 1, ""},
		{"missing recording", []string{"replay", filepath.Join(dir, "none.jsonl")}, 2, "no recording"},
		{"bad recording", []string{"replay", bad}, 2, "line 1: not a recording header"},
		{"bad speed", []string{"replay", "wifi", "--speed", "-1"}, 2, "--speed must be 0 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.run(context.Background(), tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.msg != "" && !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.msg)
			}
			if tt.code == 2 && strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("a usage error should be one line:\n%s", r.stderr)
			}
		})
	}
}

// faultyScripts are the shipped scripts of faulty models, with the flags
// they need and how the run must end.
var faultyScripts = []struct {
	name  string
	flags []string
	code  int
	want  []string
}{
	{"wifi-undo", nil, 0, []string{`warning:  you turned "Wi-Fi" off, undoing your own change`, "SUCCESS"}},
	{"wifi-loop", nil, 1, []string{"warning:  this is the screen you were on two steps ago", "FAILURE: stopped: looping between two screens"}},
	{"wifi-recover", []string{"--think-budget", "64"}, 0, []string{"recovered:", "thinking reached the budget of 64 tokens", "index 99 is not on the screen", "no usable tool call in the answer; asking once more", "SUCCESS"}},
}

func TestRunFaultyScripts(t *testing.T) {
	t.Parallel()
	for _, fs := range faultyScripts {
		t.Run(fs.name, func(t *testing.T) {
			h := newHarness(t)
			h.fakeClock()
			rec := filepath.Join(t.TempDir(), fs.name+".jsonl")
			args := append([]string{"run", "--sim", "wifi", "--model", scriptFor(fs.name, "40ms"), "--no-tui", "--record", rec}, fs.flags...)
			r := h.run(context.Background(), args...)
			if r.code != fs.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, fs.code, r.stdout, r.stderr)
			}
			for _, w := range fs.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
			got, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			shipped := filepath.Join(fixturesDir, "recordings", fs.name+".jsonl")
			if updating() {
				if err := os.WriteFile(shipped, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(shipped)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale; regenerate it with -update", shipped)
			}
		})
	}
}

// flaky fails dumps on demand and can cancel the run on a tap.
type flaky struct {
	*simulator.Phone
	onTap func(n int)
	taps  int
}

func (f *flaky) Tap(ctx context.Context, x, y int) error {
	f.taps++
	if f.onTap != nil {
		f.onTap(f.taps)
	}
	return f.Phone.Tap(ctx, x, y)
}

func TestRunDumpFailsTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.wrap = func(p *simulator.Phone) device.Device {
		p.FailNextDumps(2)
		return p
	}
	r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "the screen dump failed 2 time(s) before it worked") {
		t.Errorf("no retry warning:\n%s", r.stdout)
	}
}

func TestRunDumpKeepsFailing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.wrap = func(p *simulator.Phone) device.Device {
		p.FailNextDumps(1000)
		return p
	}
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi-wait", "0"), "--no-tui", "--record", rec)
	if r.code != 1 || !strings.Contains(r.stdout, "FAILURE: the screen could not be read 3 times in a row") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if rr, err := recording.Open(rec); err != nil || rr.Result() == nil {
		t.Errorf("the recording was not kept: %v", err)
	}
}

func TestRunCancelFlushesTheRecording(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t)
	h.wrap = func(p *simulator.Phone) device.Device {
		return &flaky{Phone: p, onTap: func(n int) {
			if n == 2 {
				cancel()
			}
		}}
	}
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	r := h.run(ctx, "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--record", rec)
	if r.code != 1 || !strings.Contains(r.stdout, "FAILURE: cancelled") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rr, err := recording.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	if res := rr.Result(); res == nil || res.Reason != "cancelled" {
		t.Errorf("recorded result = %+v", res)
	}
}

func TestRunStepModeOnStdin(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Approve the first action, then abort.
	r := h.runWith(context.Background(), strings.NewReader("y\na\n"), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--step")
	if r.code != 1 || !strings.Contains(r.stdout, "FAILURE: stopped by the user") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "approve "); n != 2 {
		t.Errorf("asked %d times, want 2:\n%s", n, r.stderr)
	}
	if !strings.Contains(r.stdout, `action:   open_app(name="Settings")`) {
		t.Errorf("the approved action did not run:\n%s", r.stdout)
	}
}

func TestRunTaskDefaultsToTheScenarios(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui")
	if !strings.HasPrefix(r.stdout, "task:     Turn on Wi-Fi\n") {
		t.Errorf("output starts %q", strings.SplitN(r.stdout, "\n", 2)[0])
	}
}

func TestRunFlags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--sensitive", "Internet")
	if r.code != 1 || !strings.Contains(r.stdout, `not run  ERROR: needs approval: label "Network & internet, Mobile, Wi‑Fi, hotspot" matches the sensitive word "Internet"`) {
		t.Errorf("--sensitive: exit %d\n%s", r.code, r.stdout)
	}
	r = h.run(context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--no-think")
	if r.code != 0 || strings.Contains(r.stdout, "thinking:") {
		t.Errorf("--no-think: exit %d\n%s", r.code, r.stdout)
	}
}

// TestRunWithTUI drives the TUI wiring with a fake terminal: the run goes
// on in the background, the UI draws into a buffer, and "q" after the last
// event quits it.
func TestRunWithTUI(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	ctx := context.Background()
	d := newHarness(t).deps(ctx, pr, &out, io.Discard)
	d.isTerminal = func(io.Writer) bool { return true }
	dev, err := d.openSim(ctx, "wifi")
	if err != nil {
		t.Fatal(err)
	}
	backend, err := d.openModel(ctx, scriptFor("wifi", "0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var finished bool
	quit := func(ev loop.Event) error {
		if ev.Type == loop.EvFinished {
			finished = true
			go pw.Write([]byte("q"))
		}
		return nil
	}
	res, err := d.show(ctx, view{
		ui:    tui.Options{Task: "Turn on Wi-Fi", Width: 100, Height: 30, EveryCall: true},
		sinks: sink.Set{sink.New("quit", quit, sink.Options{})},
	}, d.runLoops([]loop.Config{{
		Task: "Turn on Wi-Fi", Device: dev, DeviceName: "sim:wifi", Model: backend, Think: true, PollInterval: time.Millisecond,
	}}, false, make([]*loop.Result, 1)))
	if err != nil || res == nil || !res.Success || !finished {
		t.Fatalf("result %+v, err %v, finished %v", res, err, finished)
	}
	if !strings.Contains(out.String(), `SUCCESS: task_complete ("Wi-Fi is turned on")`) {
		t.Errorf("no summary after the UI:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "Turn on Wi-Fi") {
		t.Error("the UI drew nothing")
	}
}
