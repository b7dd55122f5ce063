package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On a terminal the progress is one line that updates itself (done/total,
// running success rate, ETA), checked in a real terminal: tmux.
func TestEvalProgressOnTerminal(t *testing.T) {
	bin, emptyConfig, tmux := tmuxTest(t)
	dir := t.TempDir()
	scripts, err := filepath.Abs(evalScripts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("DROIDGO_CONFIG=%s %s eval --suite tasks --filter '^tasks/(wifi|dnd|flashlight|airplane-on)$' --model 'script:%s?pace=20ms' > %s; echo EXIT=$?; sleep 60",
		emptyConfig, bin, scripts, filepath.Join(dir, "out.txt"))
	tmux("new-session", "-d", "-s", "eval", "-x", "120", "-y", "20", cmd)
	var screen string
	sawRunning := false
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen = strings.TrimRight(tmux("capture-pane", "-p", "-t", "eval"), "\n")
		if strings.Contains(screen, "/4 · ") && !strings.Contains(screen, "4/4 · ") {
			sawRunning = true
		}
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("eval did not finish; the screen:\n%s", screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(screen, "EXIT=0") {
		t.Fatalf("exit status:\n%s", screen)
	}
	if !sawRunning {
		t.Errorf("never saw the progress line while running")
	}
	// One line, overwritten in place: the last state and no plain lines.
	if n := strings.Count(screen, " · ETA "); n != 1 || !strings.Contains(screen, "4/4 · 100% success · ETA 0s") || strings.Contains(screen, "[1/4]") {
		t.Errorf("the terminal shows:\n%s", screen)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil || !strings.Contains(string(out), "tasks:     4/4 succeeded") {
		t.Errorf("stdout: %v %s", err, out)
	}
}
