package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/internal/termsafe"
)

// deviceJSON is one element of `droidgo devices --json`.
type deviceJSON struct {
	Serial      string `json:"serial"`
	State       string `json:"state"`
	Product     string `json:"product"`
	Model       string `json:"model"`
	Device      string `json:"device"`
	TransportID string `json:"transport_id"`
}

func newDevicesCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the phones the adb server knows",
		Long: `List the phones the adb server knows, as 'adb devices -l' does, without
needing the adb binary once a server runs (one is started when none is).

The server is 127.0.0.1:5037, or ADB_SERVER_SOCKET=tcp:HOST:PORT, or
ANDROID_ADB_SERVER_PORT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := d.adbClient()
			if err != nil {
				return usageErr(err)
			}
			devs, err := cl.Devices(d.ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]deviceJSON, 0, len(devs))
				for _, dev := range devs {
					out = append(out, deviceJSON{dev.Serial, dev.State, dev.Product, dev.Model, dev.Device, dev.TransportID})
				}
				enc := json.NewEncoder(d.jsonOut())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			if len(devs) == 0 {
				fmt.Fprintln(d.stdout, "no devices attached (plug in a phone with USB debugging on, or run `droidgo connect HOST:PORT`)")
				return nil
			}
			tw := tabwriter.NewWriter(termsafe.NewWriter(d.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tSTATE\tMODEL\tPRODUCT\tDEVICE\tTRANSPORT")
			for _, dev := range devs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dev.Serial, dev.State, dash(dev.Model), dash(dev.Product), dash(dev.Device), dash(dev.TransportID))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of devices")
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
