package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxSession runs a command in a detached tmux session of a fixed size on
// a private server, and reads the screen back as text.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

// needTmux skips the test when tmux is missing, or fails it when
// DROIDGO_REQUIRE_TMUX=1 says the check must run.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("DROIDGO_REQUIRE_TMUX") == "1" {
			t.Fatal("tmux is not installed and DROIDGO_REQUIRE_TMUX=1")
		}
		t.Skip("SKIPPED, NOT PASSED: tmux is not installed (apt-get install tmux; DROIDGO_REQUIRE_TMUX=1 makes this a failure)")
	}
}

// goTool finds the go command that runs the tests.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the programs under test: %v", err)
	}
	return p
}

// buildDemo compiles the canned-run program once per test binary.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tuidemo")
	out, err := exec.Command(goTool(t), "build", "-o", bin, "./internal/tuidemo").CombinedOutput()
	if err != nil {
		t.Fatalf("build the demo: %v\n%s", err, out)
	}
	return bin
}

func startTmux(t *testing.T, name string, w, h int, command string) *tmuxSession {
	t.Helper()
	// A server of its own per session: a server whose last session was
	// just killed may still be exiting when the next session asks it.
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: name}
	s.run("new-session", "-d", "-s", name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture returns the visible screen as text; with escapes, with the SGR
// sequences that style it.
func (s *tmuxSession) capture(escapes bool) string {
	s.t.Helper()
	args := []string{"capture-pane", "-p", "-t", s.name}
	if escapes {
		args = append(args, "-e")
	}
	return strings.TrimRight(s.run(args...), "\n")
}

// waitFor polls the screen until it shows want.
func (s *tmuxSession) waitFor(want string) string {
	s.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		screen := s.capture(false)
		if strings.Contains(screen, want) {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen never showed %q; it shows:\n%s", want, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

var sgr = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourSGR returns the first SGR sequence in s that sets a foreground or
// background colour (39 and 49, back to the default, do not count).
func colourSGR(s string) string {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for _, p := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ';' || r == ':' }) {
			switch n := atoi(p); {
			case n >= 30 && n <= 38, n >= 40 && n <= 48, n >= 90 && n <= 97, n >= 100 && n <= 107:
				return m[0]
			}
		}
	}
	return ""
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestTmuxReplay runs the canned run in a real terminal (tmux, 100x30),
// reads the screen back as text, and works the keys: pane switching, quit,
// step-mode approval, edit and abort, and NO_COLOR.
func TestTmuxReplay(t *testing.T) {
	needTmux(t)
	if testing.Short() {
		t.Skip("SKIPPED, NOT PASSED: -short")
	}
	bin := buildDemo(t)

	t.Run("a run to its end", func(t *testing.T) {
		s := startTmux(t, "replay", 100, 30, bin+" -delay 2ms; echo EXIT=$?; sleep 60")
		screen := s.waitFor("✔ Done")
		lines := strings.Split(screen, "\n")
		if len(lines) != 30 {
			t.Errorf("the screen has %d lines, want 30", len(lines))
		}
		for _, want := range []string{
			"droidgo Turn on Wi-Fi", "REPLAY DONE", "step 5/20 · 25.0 tok/s",
			"┏━ Thinking · step 5", "── step 5 ", "─ answer ",
			"Screen · com.android.settings", "1 switch Wi-Fi (on)",
			"Timeline · 5 steps", "1 tap(index=3) → changed", "↻ recovered: closed an unterminated JSON",
			"✔ Done in 5 steps, 8.5 s: Wi-Fi is on", "q quit",
		} {
			if !strings.Contains(screen, want) {
				t.Errorf("the screen lacks %q", want)
			}
		}
		checkTmuxGolden(t, screen)
		if colourSGR(s.capture(true)) == "" {
			t.Error("no colour on a colour terminal")
		}
		s.keys("Tab")
		s.waitFor("┏━ Screen")
		s.keys("q")
		s.waitFor("EXIT=0")
	})

	t.Run("NO_COLOR", func(t *testing.T) {
		s := startTmux(t, "nocolor", 80, 24, "NO_COLOR=1 "+bin+" -delay 1ms; sleep 60")
		s.waitFor("✔ Done")
		if m := colourSGR(s.capture(true)); m != "" {
			t.Errorf("NO_COLOR=1 but the screen has colour: %q", m)
		}
	})

	t.Run("step mode", func(t *testing.T) {
		s := startTmux(t, "step", 80, 24, bin+" -step -delay 1ms; echo EXIT=$?; sleep 60")
		s.waitFor("⏸ Approve tap(index=3)?")
		s.waitFor("▶  3 button Settings")
		s.keys("y")
		s.waitFor("⏸ Approve tap(index=1)?")
		s.keys("e")
		s.waitFor("edit> tap(index=1)")
		s.keys("BSpace", "BSpace", "Enter")
		s.waitFor("✗ missing ) at the end")
		s.keys("Escape")
		s.waitFor("y approve • n skip • e edit • a abort")
		s.keys("a")
		screen := s.waitFor("✘ Failed")
		if !strings.Contains(screen, "stopped by the user") {
			t.Errorf("the abort is not stated:\n%s", screen)
		}
		s.keys("q")
		s.waitFor("EXIT=0")
	})
}

// checkTmuxGolden compares the final frame with testdata (rewritten with
// -update); docs/cli/tui.md shows this frame.
func checkTmuxGolden(t *testing.T, screen string) {
	t.Helper()
	path := filepath.Join("testdata", "tmux-replay-100x30.txt")
	if *update {
		if err := os.WriteFile(path, []byte(screen+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if screen+"\n" != string(want) {
		t.Errorf("tmux frame differs from %s:\n%s", path, screen)
	}
}

// TestTmuxDroidgo runs the real commands in tmux: `droidgo replay` of a
// shipped recording must draw the UI, leave on q with the recorded verdict,
// and stop a replay still playing when q comes early; `droidgo run` on the
// simulator must stop at a sensitive tap and go on once it is approved.
func TestTmuxDroidgo(t *testing.T) {
	needTmux(t)
	if testing.Short() {
		t.Skip("SKIPPED, NOT PASSED: -short")
	}
	bin := filepath.Join(t.TempDir(), "droidgo")
	build := exec.Command(goTool(t), "build", "-o", bin, "./cmd/droidgo")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build droidgo: %v\n%s", err, out)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(root, "fixtures", "recordings", "wifi.jsonl")

	t.Run("to the end", func(t *testing.T) {
		s := startTmux(t, "droidgo", 100, 30, fmt.Sprintf("%s replay %s --speed 0; echo EXIT=$?; sleep 60", bin, rec))
		screen := s.waitFor("✔ Done")
		if n := len(strings.Split(screen, "\n")); n != 30 {
			t.Errorf("the screen has %d lines, want 30", n)
		}
		for _, want := range []string{"droidgo Turn on Wi-Fi", "REPLAY DONE", "device sim:wifi", "┏━ Thinking · step",
			"─ answer ", "┌─ Screen · com.android.settings", "┌─ Timeline · ", "→ changed", "q quit"} {
			if !strings.Contains(screen, want) {
				t.Errorf("the screen lacks %q", want)
			}
		}
		if *update {
			path := filepath.Join("testdata", "tmux-droidgo-replay-100x30.txt")
			if err := os.WriteFile(path, []byte(screen+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s.keys("q")
		after := s.waitFor("EXIT=")
		if !strings.Contains(after, "EXIT=0") || !strings.Contains(after, "SUCCESS") {
			t.Errorf("after q:\n%s", after)
		}
	})

	t.Run("q stops a replay", func(t *testing.T) {
		s := startTmux(t, "droidgo-q", 80, 24, fmt.Sprintf("%s replay %s --speed 0.2; echo EXIT=$?; sleep 60", bin, rec))
		s.waitFor("RUNNING")
		s.keys("q")
		after := s.waitFor("EXIT=")
		if !strings.Contains(after, "EXIT=1") {
			t.Errorf("a replay stopped early should exit 1:\n%s", after)
		}
	})

	t.Run("run with a sensitive tap", func(t *testing.T) {
		script := filepath.Join(root, "fixtures", "scripts", "wifi.txt")
		s := startTmux(t, "droidgo-run", 80, 24, fmt.Sprintf(
			"%s run --sim wifi --model 'script:%s?pace=1ms' --sensitive Wi-Fi; echo EXIT=$?; sleep 60", bin, script))
		screen := s.waitFor("⏸ Approve tap(index=")
		for _, want := range []string{"WAITING", `sensitive: label "Wi-Fi" matches`, "▶", "switch Wi-Fi", "y approve • n skip • e edit • a abort"} {
			if !strings.Contains(screen, want) {
				t.Errorf("the approval screen lacks %q:\n%s", want, screen)
			}
		}
		if *update {
			path := filepath.Join("testdata", "tmux-droidgo-run-approval-80x24.txt")
			if err := os.WriteFile(path, []byte(screen+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s.keys("y")
		s.waitFor("✔ Done")
		s.keys("q")
		if after := s.waitFor("EXIT="); !strings.Contains(after, "EXIT=0") {
			t.Errorf("after approving and q:\n%s", after)
		}
	})

	t.Run("stdin redirected", func(t *testing.T) {
		// Keys come from the terminal even when stdin is not one.
		s := startTmux(t, "droidgo-devnull", 80, 24, fmt.Sprintf("%s replay %s --speed 0 < /dev/null; echo EXIT=$?; sleep 60", bin, rec))
		s.waitFor("✔ Done")
		s.keys("q")
		if after := s.waitFor("EXIT="); !strings.Contains(after, "EXIT=0") {
			t.Errorf("after q:\n%s", after)
		}
	})
}
