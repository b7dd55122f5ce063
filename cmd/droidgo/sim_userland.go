package main

import (
	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/simulator/adbd"
)

// newSimUserlandCmd is one program of a fake phone's userland (see
// adbd.StartUserland): `droidgo sim userland NAME ARGS...` carries out the
// Android command NAME on the phone the environment names. The fake phones
// of `sim serve` and of the tests write shims that run it.
func newSimUserlandCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:                "userland NAME [ARGS...]",
		Short:              "Run one command of a simulated phone's Android userland (for the simulator's own use)",
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := adbd.UserlandMain(args[0], args[1:], d.stdout, d.stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
