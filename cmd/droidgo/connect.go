package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
)

func newConnectCmd(d *deps) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "connect HOST:PORT",
		Short: "Connect the adb server to a phone over the network (adb connect)",
		Long: `Connect the adb server to a phone listening for ADB over TCP (wireless
debugging, 'adb tcpip', an emulator, or 'droidgo sim serve'), and wait until it
is ready. Its serial is then HOST:PORT.`,
		Example: "  droidgo connect 192.168.1.20:5555\n  droidgo connect 127.0.0.1:40123",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hp := args[0]
			if err := checkHostPort(hp); err != nil {
				return usageErr(err)
			}
			cl, err := d.adbClient()
			if err != nil {
				return usageErr(err)
			}
			if _, err := cl.Connect(d.ctx, hp); err != nil {
				return err
			}
			if err := cl.WaitState(d.ctx, hp, timeout); err != nil {
				return err
			}
			info, err := cl.Select(d.ctx, hp)
			if err != nil {
				return err
			}
			model := ""
			if info.Model != "" {
				model = " (" + info.Model + ")"
			}
			fmt.Fprintf(termsafe.NewWriter(d.stdout), "connected to %s%s\n", hp, model)
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the device to come online")
	return c
}

// checkHostPort checks a HOST:PORT address before anything is sent: a
// host, and a port from 1 to 65535 written in digits. A malformed address
// is a usage error whatever the adb server would have said.
func checkHostPort(hp string) error {
	h, p, err := net.SplitHostPort(hp)
	if err != nil || h == "" || p == "" {
		return fmt.Errorf("%q is not HOST:PORT", hp)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(p, "0123456789") != "" {
		return fmt.Errorf("%q is not HOST:PORT: the port must be a number from 1 to 65535, not %q", hp, p)
	}
	return nil
}
