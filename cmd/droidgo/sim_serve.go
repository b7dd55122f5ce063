package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/simulator"
	"github.com/droidgo/droidgo/simulator/adbd"
)

func newSimServeCmd(d *deps) *cobra.Command {
	var scenario string
	var port int
	var adbKeyboard, noV2, logCmds, unauthorized, programs bool
	c := &cobra.Command{
		Use:   "serve --scenario NAME [--port N]",
		Short: "Serve a simulated phone over ADB, for adb connect, adb shell and droidgo",
		Long: `Serve a simulator scenario as a fake Android device on 127.0.0.1: a Go
implementation of the device side of the ADB transport (an insecure adbd:
no authorisation), with shell v1 and v2, exec and sync.

Connect to it with 'adb connect 127.0.0.1:PORT' (or 'droidgo connect'), then
use 'adb shell', 'adb pull /sdcard/window_dump.xml', or
'droidgo run --device 127.0.0.1:PORT'. Its shell understands the commands
droidgo sends (uiautomator dump, input, wm size, monkey, am, pm, dumpsys,
getprop, settings, ime, and the toybox tools cat, ls, rm, echo, sha256sum, df,
mkdir, dd, mv, chmod on its files, kept in a temporary directory) and refuses any line that is more
than one simple command with literal words. Stop it with Ctrl-C.

With --programs it also runs the programs pushed to it, as a phone runs what
'droidgo deploy' put there: on this machine, with a fake Android userland as
their PATH that carries their commands out on the simulated phone, arm64
programs under qemu-aarch64-static. Deploy a linux/arm64 droidgo to it (Go's
android build needs the phone's own linker):
  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -o droidgo-linux-arm64 ./cmd/droidgo
  droidgo deploy --binary droidgo-linux-arm64 --no-model
  droidgo run --on-phone --model script:fixtures/scripts/wifi.txt`,
		Example: "  droidgo sim serve --scenario wifi --port 0",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if scenario == "" {
				return usageErr(errors.New("--scenario is required (see `droidgo sim list`)"))
			}
			if port < 0 || port > 65535 {
				return usageErr(fmt.Errorf("--port %d is not a TCP port", port))
			}
			if port >= 5555 && port <= 5585 {
				fmt.Fprintf(d.stderr, "warning: the adb server probes ports 5555-5585 for emulators and will list this phone as emulator-%d as well\n", port-1)
			}
			phone, err := simulator.Load(scenario)
			if errors.Is(err, simulator.ErrUnknownScenario) {
				return usageErr(err)
			}
			if err != nil {
				return err
			}
			opts := adbd.Options{ADBKeyboard: adbKeyboard, Product: "droidgo_" + scenario, RequireAuth: unauthorized}
			if noV2 {
				opts.Features = []string{"cmd", "stat_v2", "fixed_push_mkdir"}
			}
			srv := adbd.New(phone, opts)
			if err := srv.Listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
				return err
			}
			if programs {
				stopLand, err := runPrograms(srv)
				if err != nil {
					srv.Close()
					return err
				}
				defer stopLand()
			}
			addr := srv.Addr()
			fmt.Fprintf(d.stdout, "serving scenario %q as an ADB device on %s\n", scenario, addr)
			fmt.Fprintf(d.stdout, "connect with: adb connect %s\n", addr)
			// A phone over ADB has no task of its own: the suggestion
			// names the scenario's.
			fmt.Fprintf(d.stdout, "then: droidgo run %s --device %s   (Ctrl-C to stop)\n", shellQuote(phone.Task()), addr)
			srv.Start()
			<-d.ctx.Done()
			srv.Close()
			if logCmds {
				// The lines are what clients sent.
				out := termsafe.NewWriter(d.stdout)
				for _, c := range srv.Commands() {
					status := strconv.Itoa(c.Exit)
					if c.Rejected != "" {
						status = "refused: " + c.Rejected
					}
					fmt.Fprintf(out, "%s\t%s\t%s\n", c.Service, c.Line, status)
				}
			}
			fmt.Fprintf(d.stdout, "scenario %q success: %v\n", scenario, phone.Success())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&scenario, "scenario", "", "the scenario to serve (`NAME`)")
	f.IntVar(&port, "port", 0, "TCP port on 127.0.0.1 (0 picks a free one)")
	f.BoolVar(&adbKeyboard, "adb-keyboard", false, "pretend ADB Keyboard is installed and active (non-ASCII typing)")
	f.BoolVar(&noV2, "no-shell-v2", false, "do not offer shell_v2, so clients use shell v1")
	f.BoolVar(&unauthorized, "unauthorized", false, "behave as a phone whose owner never accepts the debugging prompt (listed as unauthorized)")
	f.BoolVar(&logCmds, "log", false, "print every shell command received when stopping")
	f.BoolVar(&programs, "programs", false, "run the programs pushed to the phone (a deployed droidgo), with a fake Android userland; arm64 ones under qemu-aarch64-static")
	return c
}

// runPrograms makes srv run the programs pushed to it, with a fake
// userland whose commands are this droidgo's `sim userland`.
func runPrograms(srv *adbd.Server) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	qemu := ""
	if runtime.GOARCH != "arm64" {
		if qemu, err = exec.LookPath("qemu-aarch64-static"); err != nil {
			return nil, errors.New("--programs runs the phone's arm64 programs under qemu-aarch64-static, which is not installed (Debian: apt-get install qemu-user-static)")
		}
	}
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "dgphone")
	if err != nil {
		return nil, err
	}
	land, err := srv.StartUserland(dir, exe, "sim", "userland")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv.RunPrograms(land, qemu)
	return func() { land.Close(); os.RemoveAll(dir) }, nil
}

// shellQuote quotes s for a POSIX shell, for commands droidgo suggests.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
