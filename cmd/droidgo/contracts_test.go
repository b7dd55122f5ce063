package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
)

// TestUsageExitCodes checks the exit-code contract for usage errors: a
// malformed connect address, unknown subcommands at any level, an unknown
// scenario in every command that takes one, and do's argument checks.
func TestUsageExitCodes(t *testing.T) {
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
		{[]string{"run", "x", "--sim", "nosuch", "--model", "script:none"}, "unknown scenario"},
		{[]string{"screen", "--sim", "nosuch"}, `unknown scenario "nosuch"`},
		{[]string{"sim", "serve", "--scenario", "nosuch"}, `unknown scenario "nosuch"`},
		{[]string{"do", "type", ""}, "nothing to type"},
		{[]string{"pull", "a/b:c:d"}, "is not a quantisation"},
	}
	for _, c := range cases {
		r := droidgo(t, context.Background(), c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.msg)
		}
	}
	// Groups without a subcommand still show their help.
	for _, args := range [][]string{{"model"}, {"sim"}, {"do", "type", "--help"}} {
		if r := droidgo(t, context.Background(), args...); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("%q: exit %d, stdout %.80q", args, r.code, r.stdout)
		}
	}
}

// TestSimServeBannerSuggestsARunnableCommand: the banner's run command
// names the scenario's task (without one, `run --device` exits 2).
func TestSimServeBannerSuggestsARunnableCommand(t *testing.T) {
	hermetic(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb strings.Builder
	done := make(chan int, 1)
	pr, pw := io.Pipe()
	go func() {
		done <- execute(ctx, []string{"sim", "serve", "--scenario", "wifi", "--port", "0"}, strings.NewReader(""), pw, &errb)
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
