package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/device/local"
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
	// Description is "this phone" for the phone droidgo runs on.
	Description string `json:"description,omitempty"`
}

func newDevicesCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the phones the adb server knows",
		Long: `List the phones the adb server knows, as 'adb devices -l' does, without
needing the adb binary once a server runs (one is started when none is).

On an Android phone the phone itself comes first, as "local" (this phone):
'--device local' drives it directly, which works as the shell user (the user
programs started with adb run as). An app such as Termux may not inject input,
so there the phone is driven through its own adbd (wireless debugging).

The server is 127.0.0.1:5037, or ADB_SERVER_SOCKET=tcp:HOST:PORT, or
ANDROID_ADB_SERVER_PORT.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []deviceJSON
			props, isPhone, canDrive := d.onPhone(d.ctx)
			if isPhone {
				// The phone itself comes first; `--device local`
				// selects it.
				state := "device"
				if !canDrive {
					state = "no permissions (an app's user cannot inject input: use the phone's own adbd over wireless debugging, see the README)"
				}
				rows = append(rows, deviceJSON{Serial: local.Serial, State: state, Product: props.Product, Model: props.Model, Device: props.Device, Description: local.Name})
			}
			cl, err := d.adbClient()
			if err != nil {
				return usageErr(err)
			}
			if isPhone {
				// A phone has no adb of its own to start; one (Termux's)
				// may be running.
				cl.AutoStart = false
			}
			devs, err := cl.Devices(d.ctx)
			if err != nil && !(isPhone && errors.Is(err, adb.ErrServerNotRunning)) {
				return err
			}
			for _, dev := range devs {
				rows = append(rows, deviceJSON{Serial: dev.Serial, State: dev.State, Product: dev.Product, Model: dev.Model, Device: dev.Device, TransportID: dev.TransportID})
			}
			if asJSON {
				if rows == nil {
					rows = []deviceJSON{}
				}
				enc := json.NewEncoder(d.jsonOut())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(d.stdout, "no devices attached (plug in a phone with USB debugging on, or run `droidgo connect HOST:PORT`)")
				return nil
			}
			tw := tabwriter.NewWriter(termsafe.NewWriter(d.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tSTATE\tMODEL\tPRODUCT\tDEVICE\tTRANSPORT")
			for _, r := range rows {
				model := dash(r.Model)
				if r.Description != "" {
					model = r.Description
					if r.Model != "" {
						model += " (" + r.Model + ")"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Serial, r.State, model, dash(r.Product), dash(r.Device), dash(r.TransportID))
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
