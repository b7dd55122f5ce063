package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newRootCmd builds droidgo's whole command tree: every command is
// constructed here, from the dependencies it is given.
func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "droidgo",
		Short: "Drive an Android phone with a small on-device language model",
		Long: `droidgo lets a small language model (Spark-X2.5-1.7B, run in-process) operate an
Android phone over ADB: each step it reads the screen, lets the model think and
answer with a tool call, and carries the call out with adb input commands.

A scripted simulator stands in for a phone and recordings stand in for the
model, so everything can be tried without a device or model weights.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(d.stdin)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(err) })
	modelCmd := &cobra.Command{
		Use:   "model",
		Short: "Inspect, run and benchmark model files (GGUF or HF directories)",
	}
	modelCmd.AddCommand(
		newModelBenchCmd(d),
		newModelChatCmd(d),
		newModelGenerateCmd(d),
		newModelInfoCmd(d),
		newModelLogitsCmd(d),
		newModelPromptCmd(d),
		newModelRandomCmd(d),
		newModelTokenizeCmd(d),
	)
	simCmd := &cobra.Command{
		Use:   "sim",
		Short: "Scripted simulated phones: list scenarios, serve one over ADB",
	}
	simCmd.AddCommand(newSimListCmd(d), newSimServeCmd(d), newSimUserlandCmd(d))
	root.AddCommand(
		newRunCmd(d),
		newReplayCmd(d),
		newMacroCmd(d),
		newScreenCmd(d),
		newDoCmd(d),
		newDevicesCmd(d),
		newDeployCmd(d),
		newAttachCmd(d),
		newStopCmd(d),
		newConnectCmd(d),
		newParseCmd(d),
		newEvalCmd(d),
		newServeCmd(d),
		newBenchCmd(d),
		newPullCmd(d),
		newModelsCmd(d),
		newCacheCmd(d),
		newConfigCmd(d),
		modelCmd,
		simCmd,
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
	}
	refuseUnknownHelpTopics(root)
	return root
}

// refuseUnknownHelpTopics makes `droidgo help nosuch` a usage error like
// `droidgo nosuch`; cobra prints "Unknown help topic" and exits 0.
func refuseUnknownHelpTopics(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		show := c.Run
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if target, rest, err := root.Find(args); len(args) > 0 && (err != nil || target == root || len(rest) > 0) {
				return usageErr(fmt.Errorf("unknown help topic %q (see 'droidgo --help')", strings.Join(args, " ")))
			}
			show(cmd, args)
			return nil
		}
	}
}

// refuseUnknownSubcommands makes every command group below the root (model,
// sim, completion) answer an unknown subcommand as the root does, with
// "unknown command" and exit 2; cobra would print the group's help and
// exit 0. The root itself already does this.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		hint := fmt.Sprintf("see '%s --help'", cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = fmt.Sprintf("did you mean %s?", strings.Join(s, " or "))
		}
		return usageErr(fmt.Errorf("unknown command %q for %q (%s)", args[0], cmd.CommandPath(), hint))
	}
}

// execute runs droidgo with args on the given streams and returns the
// process exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return executeWith(newDeps(ctx, stdin, stdout, stderr), args)
}

// executeWith runs droidgo with args and the dependencies d (from newDeps,
// with a test's fakes) and returns the process exit code.
func executeWith(d *deps, args []string) int {
	root := newRootCmd(d)
	root.SetArgs(args)
	err := root.ExecuteContext(d.ctx)
	if werr := d.out.failed(); werr != nil && codeFor(err) != 2 {
		// Output that was lost is a failure whatever the command thought,
		// and one message says so for every command (replacing a
		// command's own report of the same write error).
		err = fmt.Errorf("cannot write to standard output: %w", werr)
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	var ie *kernels.ISAError
	var fe *sysmem.FitError
	switch {
	case errors.As(err, &ee):
	case errors.As(err, &fe):
		// A model too big for this machine's memory is a configuration
		// to change (another model, fewer chains), like a bad setting.
		err = usageErr(fe)
	case errors.As(err, &ie):
		// DROIDGO_ISA is configuration; whichever command opened the
		// engine, the one sentence is the error's own.
		err = usageErr(ie)
	case isUsage(err):
		err = usageErr(err)
	}
	printErr(d.stderr, err)
	return codeFor(err)
}

// isUsage recognises cobra's own argument and command errors, which it does
// not type.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// checkedWriter is the commands' standard output: it keeps the first write
// error, so that no command can exit 0 with its output lost (a full disk,
// a closed pipe), whichever way it writes.
type checkedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

// failed returns the first write error, without the file name an
// *fs.PathError adds ("write /dev/stdout: "): the message names standard
// output itself.
func (c *checkedWriter) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pe *fs.PathError
	if errors.As(c.err, &pe) {
		return pe.Err
	}
	return c.err
}
