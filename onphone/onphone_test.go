package onphone

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestState(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, ErrNone) {
		t.Fatalf("Read of an empty directory = %v, want ErrNone", err)
	}
	want := Run{PID: 42, Task: "Turn on Wi-Fi", Recording: "/r.jsonl", Log: "/r.log", Started: time.Unix(1, 0).UTC()}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(dir); err != nil || got != want {
		t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
	}
	os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"pid":0}`), 0o644)
	if _, err := Read(dir); err == nil || errors.Is(err, ErrNone) {
		t.Errorf("Read of a state without a pid = %v", err)
	}
	if err := Clear(dir); err != nil {
		t.Fatal(err)
	}
	if err := Clear(dir); err != nil {
		t.Errorf("Clear twice: %v", err)
	}
}

// TestFollowEnded: the lines of a run that has ended are read to the end,
// empty ones skipped, then ErrEnded; a process that is not a droidgo is
// not the run.
func TestFollowEnded(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := cmd.Process.Pid
	if Alive(dead) || Alive(os.Getpid()) {
		t.Fatalf("Alive(exited %d) = %v, Alive(this test, no droidgo) = %v", dead, Alive(dead), Alive(os.Getpid()))
	}
	f := NewFollower(strings.NewReader("a\n\n  \nb\n"), dead)
	ctx := context.Background()
	for _, want := range []string{"a\n", "b\n"} {
		if got, err := f.Next(ctx); err != nil || string(got) != want {
			t.Fatalf("Next = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := f.Next(ctx); !errors.Is(err, ErrEnded) {
		t.Errorf("Next at the end = %v, want ErrEnded", err)
	}
}
