package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// tmuxTest builds droidgo into a fresh directory and returns it with a
// tmux function on a private tmux server, killed when the test ends, and
// an empty settings file (DROIDGO_CONFIG) that keeps the developer's own
// settings out. It skips the test without tmux (fails it when
// DROIDGO_REQUIRE_TMUX=1) and under -short.
func tmuxTest(t *testing.T) (bin, emptyConfig string, tmux func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("DROIDGO_REQUIRE_TMUX") == "1" {
			t.Fatal("tmux is not installed and DROIDGO_REQUIRE_TMUX=1")
		}
		t.Skip("SKIPPED, NOT PASSED: tmux is not installed (apt-get install tmux; DROIDGO_REQUIRE_TMUX=1 makes this a failure)")
	}
	if testing.Short() {
		t.Skip("SKIPPED, NOT PASSED: -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin = filepath.Join(dir, "droidgo")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build droidgo: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "tmux.sock")
	tmux = func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", socket}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", socket, "kill-server").Run() })
	emptyConfig = filepath.Join(dir, "empty.toml")
	if err := os.WriteFile(emptyConfig, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, emptyConfig, tmux
}
