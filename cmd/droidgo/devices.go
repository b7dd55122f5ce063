package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/internal/termsafe"
)

func init() {
	register(newDevicesCmd)
	openADB = openADBDevice
}

// newADBClient returns the adb server client the environment names. Tests
// replace it to point at a private server.
var newADBClient = adb.NewClient

// adbDumpRetryDelay, when not zero, overrides the pause between dump
// attempts (tests shorten it).
var adbDumpRetryDelay time.Duration

// openADBDevice implements the openADB hook: the device with serial, or
// ANDROID_SERIAL, or the only attached one.
func openADBDevice(ctx context.Context, serial string) (device.Device, string, error) {
	c, err := newADBClient()
	if err != nil {
		return nil, "", usageErr(err)
	}
	d, err := adb.Open(ctx, c, serial)
	if err != nil {
		return nil, "", err
	}
	if adbDumpRetryDelay > 0 {
		d.DumpRetryDelay = adbDumpRetryDelay
	}
	name := d.Serial()
	if m := d.Info().Model; m != "" {
		name += " (" + m + ")"
	}
	return d, name, nil
}

// deviceJSON is one element of `droidgo devices --json`.
type deviceJSON struct {
	Serial      string `json:"serial"`
	State       string `json:"state"`
	Product     string `json:"product"`
	Model       string `json:"model"`
	Device      string `json:"device"`
	TransportID string `json:"transport_id"`
}

func newDevicesCmd(g *globals) *cobra.Command {
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
			cl, err := newADBClient()
			if err != nil {
				return usageErr(err)
			}
			devs, err := cl.Devices(g.ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]deviceJSON, 0, len(devs))
				for _, d := range devs {
					out = append(out, deviceJSON{d.Serial, d.State, d.Product, d.Model, d.Device, d.TransportID})
				}
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			if len(devs) == 0 {
				fmt.Fprintln(g.stdout, "no devices attached (plug in a phone with USB debugging on, or run `droidgo connect HOST:PORT`)")
				return nil
			}
			tw := tabwriter.NewWriter(termsafe.NewWriter(g.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tSTATE\tMODEL\tPRODUCT\tDEVICE\tTRANSPORT")
			for _, d := range devs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Serial, d.State, dash(d.Model), dash(d.Product), dash(d.Device), dash(d.TransportID))
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
