package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
)

var scriptsDir = "script:" + filepath.Join(fixturesDir, "scripts")

// TestRunTwoPhonesPlain: two simulated phones in one run, their scripts
// picked from a directory by scenario; every line of the plain output
// names its phone, each phone's lines are its own run in order, each gets
// its recording, and the run succeeds when both do.
func TestRunTwoPhonesPlain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	r := h.run(context.Background(), "run", "--sim", "wifi", "--sim", "alarm", "--model", scriptsDir+"?pace=1ms", "--no-tui", "--record", dir+"/")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "SUCCESS: 2 of 2 phones succeeded: sim:wifi success (task_complete); sim:alarm success (task_complete)") {
		t.Errorf("last line %q", last)
	}
	per := map[string][]string{}
	prefix := regexp.MustCompile(`^\[(sim:wifi |sim:alarm)\]( (.*))?$`)
	for _, l := range lines[:len(lines)-1] {
		m := prefix.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("a line without its phone: %q", l)
		}
		per[strings.TrimSpace(m[1])] = append(per[strings.TrimSpace(m[1])], m[3])
	}
	// Each phone's lines are the run it would print alone.
	for sc, steps := range map[string]int{"wifi": 5, "alarm": 7} {
		alone := newHarness(t).run(context.Background(), "run", "--sim", sc, "--model", scriptFor(sc, "1ms"), "--no-tui")
		if alone.code != 0 {
			t.Fatalf("%s alone: exit %d", sc, alone.code)
		}
		got := strings.Join(per["sim:"+sc], "\n")
		if norm(got) != norm(strings.TrimRight(alone.stdout, "\n")) {
			t.Errorf("sim:%s's lines differ from its run alone:\n%s\n--- alone:\n%s", sc, got, alone.stdout)
		}
		events, err := recording.Open(filepath.Join(dir, "sim-"+sc+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range events.Events {
			if ev.Device != "sim:"+sc {
				t.Fatalf("sim:%s's recording has an event of %q", sc, ev.Device)
			}
			if ev.Type == loop.EvStepStarted {
				n++
			}
		}
		if n != steps || events.Header.Device != "sim:"+sc {
			t.Errorf("sim:%s's recording: %d steps, header %+v", sc, n, events.Header)
		}
	}
}

// norm drops what changes from run to run: timings and rates.
func norm(s string) string {
	s = regexp.MustCompile(`[0-9.]+ tok/s`).ReplaceAllString(s, "X tok/s")
	return regexp.MustCompile(`in [0-9.]+ s`).ReplaceAllString(s, "in X s")
}

// TestRunPhonesOneFails: the run succeeds only when every phone does; the
// JSON events all name their phone as run_started does.
func TestRunPhonesOneFails(t *testing.T) {
	t.Parallel()
	// The Wi-Fi script cannot set an alarm.
	r := newHarness(t).run(context.Background(), "run", "--sim", "wifi", "--sim", "alarm", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	started := map[string]bool{}
	results := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		dev, _ := ev["device"].(string)
		switch {
		case ev["type"] == "run_started":
			started[dev] = true
		case !started[dev]:
			t.Fatalf("an event of %q before its run_started: %s", dev, sc.Text())
		}
		if ev["type"] == "finished" {
			res := ev["result"].(map[string]any)
			results[dev] = res["success"] == true
		}
	}
	want := map[string]bool{"sim:wifi": true, "sim:alarm": false, "sim:wifi#2": true}
	if fmt.Sprint(results) != fmt.Sprint(want) {
		t.Errorf("results %v, want %v", results, want)
	}
}

func TestRunPhonesUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "wifi", "--sim", "alarm", "--record", filepath.Join(dir, "one.jsonl")}, "is one file for 2 phones"},
		{[]string{"--sim", "wifi", "--sim", "nope"}, `unknown scenario "nope"`},
		{[]string{"--sim", "wifi", "--device", "a"}, "--sim and --device cannot be used together"},
		{[]string{"--device", "all", "--device", "x"}, "give it alone"},
		{[]string{"--device", "x", "--device", "x"}, "given twice"},
	} {
		r := newHarness(t).run(context.Background(), append([]string{"run", "--model", scriptFor("wifi", "0"), "--no-tui"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, r.code, r.stderr)
		}
	}
	// A pattern names each phone's file.
	pat := filepath.Join(dir, "run-{device}.jsonl")
	r := newHarness(t).run(context.Background(), "run", "--sim", "wifi", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--record", pat)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"run-sim-wifi.jsonl", "run-sim-wifi-2.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestRunTwoPhonesTUI drives the TUI of a run on two simulated phones in
// tmux, in step mode: both phones' calls wait for approval, the line of
// phones shows both, the switcher shows the other phone, and the run ends
// with both done.
func TestRunTwoPhonesTUI(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("DROIDGO_REQUIRE_TMUX") == "1" {
			t.Fatal("tmux is not installed and DROIDGO_REQUIRE_TMUX=1")
		}
		t.Skip("SKIPPED, NOT PASSED: tmux is not installed (apt-get install tmux; DROIDGO_REQUIRE_TMUX=1 makes this a failure)")
	}
	if testing.Short() {
		t.Skip("SKIPPED, NOT PASSED: -short")
	}
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "droidgo")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build droidgo: %v\n%s", err, out)
	}
	scripts, err := filepath.Abs(filepath.Join(fixturesDir, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", socket, "kill-server").Run() })
	cmd := fmt.Sprintf("DROIDGO_CONFIG=%s %s run --sim wifi --sim alarm --model 'script:%s?pace=5ms' --step; echo EXIT=$?; sleep 60",
		filepath.Join(dir, "empty.toml"), bin, scripts)
	tmux("new-session", "-d", "-s", "run", "-x", "120", "-y", "30", cmd)
	screen := func() string { return strings.TrimRight(tmux("capture-pane", "-p", "-t", "run"), "\n") }
	waitFor := func(want string) string {
		deadline := time.Now().Add(60 * time.Second)
		for {
			s := screen()
			if strings.Contains(s, want) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%s", want, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := waitFor("⏸ Approve")
	if !strings.Contains(s, "phones  ") || !strings.Contains(s, "sim:wifi") || !strings.Contains(s, "sim:alarm") {
		t.Fatalf("no line of phones:\n%s", s)
	}
	// The switcher shows the other phone: its task in the title, the
	// marker on it in the line of phones.
	marked := regexp.MustCompile(`▸(\d) sim:`)
	m := marked.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no phone marked as shown:\n%s", s)
	}
	want := map[string]string{"1": "▸2 sim:alarm", "2": "▸1 sim:wifi"}[m[1]]
	tmux("send-keys", "-t", "run", "]")
	s = waitFor(want)
	if title := map[string]string{"1": "Set an alarm", "2": "Turn on Wi-Fi"}[m[1]]; !strings.Contains(strings.SplitN(s, "\n", 2)[0], title) {
		t.Errorf("] did not switch the phone shown:\n%s", s)
	}
	// Approve every call of both phones until the run ends.
	approved := 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		s = screen()
		if strings.Contains(s, "EXIT=") {
			break
		}
		if strings.Contains(s, "⏸ Approve") {
			tmux("send-keys", "-t", "run", "y")
			approved++
			time.Sleep(30 * time.Millisecond)
		}
		if strings.Contains(s, "phones  ") && strings.Count(s, "✔ done") == 2 {
			tmux("send-keys", "-t", "run", "q")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end; the screen:\n%s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(s, "EXIT=0") || !strings.Contains(s, "SUCCESS: 2 of 2 phones succeeded") {
		t.Errorf("the end of the run:\n%s", s)
	}
	// task_complete ends a run without waiting: 4 + 6 actions waited
	// (a prompt still on screen may have been answered twice; a y with
	// nothing waiting does nothing).
	if approved < 10 {
		t.Errorf("approved %d calls; the two runs have 10 actions", approved)
	}
}
