package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageExitCodes checks the exit-code contract for usage errors: a
// malformed connect address, unknown subcommands at any level, an unknown
// scenario in every command that takes one, and do's argument checks.
func TestUsageExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"connect", "foo"}, "is not HOST:PORT"},
		{[]string{"connect", ":5555"}, "is not HOST:PORT"},
		{[]string{"connect", "127.0.0.1:99999"}, "from 1 to 65535"},
		{[]string{"connect", "127.0.0.1:0"}, "from 1 to 65535"},
		{[]string{"connect", "127.0.0.1:abc"}, "from 1 to 65535"},
		{[]string{"connect", "[::1]:70000"}, "from 1 to 65535"},
		{[]string{"nosuch"}, "unknown command"},
		{[]string{"model", "foo"}, `unknown command "foo" for "droidgo model"`},
		{[]string{"sim", "foo"}, `unknown command "foo" for "droidgo sim"`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "droidgo completion"`},
		{[]string{"model", "inf"}, `unknown command "inf" for "droidgo model" (did you mean info?)`},
		{[]string{"help", "nosuch"}, `unknown help topic "nosuch"`},
		{[]string{"help", "model", "foo"}, `unknown help topic "model foo"`},
		{[]string{"run", "x", "--sim", "nosuch", "--model", "script:none"}, "unknown scenario"},
		{[]string{"screen", "--sim", "nosuch"}, `unknown scenario "nosuch"`},
		{[]string{"sim", "serve", "--scenario", "nosuch"}, `unknown scenario "nosuch"`},
		{[]string{"do", "type", ""}, "nothing to type"},
		{[]string{"pull", "a/b:c:d"}, "is not a quantisation"},
		{[]string{"replay", "nosuch"}, "shipped recordings: alarm, bluetooth, devopts, search, "},
	}
	for _, c := range cases {
		r := droidgo(t, context.Background(), c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.msg)
		}
	}
	// Groups without a subcommand still show their help.
	for _, args := range [][]string{{"model"}, {"sim"}, {"do", "type", "--help"}, {"help", "model", "info"}} {
		if r := droidgo(t, context.Background(), args...); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("%q: exit %d, stdout %.80q", args, r.code, r.stdout)
		}
	}
}

// TestSimServeBannerSuggestsARunnableCommand: the banner's run command
// names the scenario's task (without one, `run --device` exits 2).
func TestSimServeBannerSuggestsARunnableCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb strings.Builder
	done := make(chan int, 1)
	pr, pw := io.Pipe()
	go func() {
		done <- executeWith(h.deps(ctx, strings.NewReader(""), pw, &errb), []string{"sim", "serve", "--scenario", "wifi", "--port", "0"})
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	for range 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(line)
	}
	cancel()
	io.Copy(io.Discard, br)
	<-done
	if !strings.Contains(out.String(), "then: droidgo run 'Turn on Wi-Fi' --device 127.0.0.1:") {
		t.Errorf("banner:\n%s", out.String())
	}
}

// TestSimulatorChecksItsOwnTask: a task that is not the scenario's gets a
// warning, a failed check quotes the scenario's task, not the user's, and
// one step is "1 step".
func TestSimulatorChecksItsOwnTask(t *testing.T) {
	t.Parallel()
	r := droidgo(t, context.Background(), "run", "Set an alarm for 7:00", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui")
	if !strings.Contains(r.stdout, `warning:  the task is not scenario wifi's task ("Turn on Wi-Fi")`) {
		t.Errorf("no warning for a task that is not the scenario's:\n%s", r.stdout)
	}
	dir := t.TempDir()
	quit := filepath.Join(dir, "quit.txt")
	os.WriteFile(quit, []byte("--- turn 1\nDone already.</think><tool_call>task_complete<arg_key>summary</arg_key><arg_value>done</arg_value></tool_call>\n"), 0o644)
	r = droidgo(t, context.Background(), "run", "Please turn on the Wi-Fi", "--sim", "wifi", "--model", "script:"+quit+"?pace=0", "--no-tui")
	if r.code != 1 || !strings.Contains(r.stdout, `the simulator's check for scenario wifi ("Turn on Wi-Fi") does not hold`) || strings.Contains(r.stdout, `"Please turn on the Wi-Fi" is not done`) {
		t.Errorf("exit %d:\n%s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "1 step in") {
		t.Errorf("one step is not \"1 step\":\n%s", r.stdout)
	}
	r = droidgo(t, context.Background(), "run", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui", "--max-steps", "1")
	if !strings.Contains(r.stdout, "step budget exhausted: 1 step without task_complete") {
		t.Errorf("a budget of one step:\n%s", r.stdout)
	}
	r = droidgo(t, context.Background(), "run", "turn on wi-fi.", "--sim", "wifi", "--model", scriptFor("wifi", "0"), "--no-tui")
	if strings.Contains(r.stdout, "is not scenario") {
		t.Errorf("the scenario's own task, differently written, is warned about:\n%s", r.stdout)
	}
}
