package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A replay on a phone in the TUI, in a real terminal (tmux), as a run:
// --step makes each replayed call wait for y, the screen pane and the
// timeline show it, and where the phone disagrees the report stays on
// screen with the FAILED badge until q; the exit status is 1.
func TestReplayTUIStepMode(t *testing.T) {
	bin, emptyConfig, tmux := tmuxTest(t)
	cmd := fmt.Sprintf("DROIDGO_CONFIG=%s %s replay wifi --sim wifi-dialog --step; echo EXIT=$?; sleep 60", emptyConfig, bin)
	tmux("new-session", "-d", "-s", "replay", "-x", "110", "-y", "34", cmd)
	screen := func() string { return tmux("capture-pane", "-p", "-t", "replay") }
	waitFor := func(want ...string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			s := screen()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(s, w)
			}
			if ok {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the screen never showed %q:\n%s", want, s)
			}
			time.Sleep(30 * time.Millisecond)
		}
	}
	// The first replayed call waits for approval in step mode.
	s := waitFor("WAITING", "STEP", "y approve • n skip • e edit • a abort", `open_app(name="Settings")`)
	if !strings.Contains(s, "model replay:wifi") {
		t.Errorf("the header does not say what is replayed:\n%s", s)
	}
	tmux("send-keys", "-t", "replay", "y")
	// Step 2's row is covered by the dialog: the replay stops there.
	s = waitFor("FAILED", "What’s new in Settings")
	if !strings.Contains(s, "replay stopped at step 2") && !strings.Contains(s, "drawn over it") {
		t.Errorf("the stop is not on screen:\n%s", s)
	}
	tmux("send-keys", "-t", "replay", "q")
	s = waitFor("EXIT=")
	if !strings.Contains(s, "EXIT=1") || !strings.Contains(s, "replayed 1 of 5 steps; stopped at step 2") {
		t.Errorf("after the TUI:\n%s", s)
	}
}
