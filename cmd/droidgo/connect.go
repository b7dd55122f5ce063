package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
)

func init() { register(newConnectCmd) }

func newConnectCmd(g *globals) *cobra.Command {
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
			cl, err := newADBClient()
			if err != nil {
				return usageErr(err)
			}
			hp := args[0]
			if h, p, err := net.SplitHostPort(hp); err != nil || h == "" || p == "" {
				return usageErr(fmt.Errorf("%q is not HOST:PORT", hp))
			}
			if _, err := cl.Connect(g.ctx, hp); err != nil {
				return err
			}
			if err := cl.WaitState(g.ctx, hp, timeout); err != nil {
				return err
			}
			info, err := cl.Select(g.ctx, hp)
			if err != nil {
				return err
			}
			model := ""
			if info.Model != "" {
				model = " (" + info.Model + ")"
			}
			fmt.Fprintf(termsafe.NewWriter(g.stdout), "connected to %s%s\n", hp, model)
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the device to come online")
	return c
}
