package adb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/droidgo/droidgo/device"
)

// DeviceInfo is one line of `adb devices -l`.
type DeviceInfo struct {
	Serial      string `json:"serial"`
	State       string `json:"state"`
	Product     string `json:"product"`
	Model       string `json:"model"`
	Device      string `json:"device"`
	TransportID string `json:"transport_id"`
	// USB is the usb: device path, when the server reports one.
	USB string `json:"usb,omitempty"`
}

// GoneError reports a device the server no longer knows or cannot reach.
// It wraps device.ErrNoDevice.
type GoneError struct {
	Serial string
	Msg    string
}

func (e *GoneError) Error() string {
	if e.Serial == "" {
		return "no device: " + e.Msg
	}
	return fmt.Sprintf("device %s is gone (%s): reconnect it (cable, Wi-Fi or `droidgo connect`) and check `droidgo devices`", e.Serial, e.Msg)
}

// Unwrap lets callers test for device.ErrNoDevice.
func (e *GoneError) Unwrap() error { return device.ErrNoDevice }

// Devices lists the devices the server knows (host:devices-l).
func (c *Client) Devices(ctx context.Context) ([]DeviceInfo, error) {
	s, err := c.Query(ctx, "host:devices-l")
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	return ParseDevicesL(s), nil
}

// knownKeys are the key:value fields adb appends after the state.
var knownKeys = []string{"usb:", "product:", "model:", "device:", "transport_id:"}

func isKeyField(f string) bool {
	for _, k := range knownKeys {
		if strings.HasPrefix(f, k) {
			return true
		}
	}
	return false
}

// ParseDevicesL parses the payload of host:devices-l. Lines it cannot read
// are skipped. The state may contain spaces ("no permissions (...)"): it runs
// from the second field to the first key:value field.
func ParseDevicesL(s string) []DeviceInfo {
	var out []DeviceInfo
	for _, line := range strings.Split(s, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		d := DeviceInfo{Serial: fields[0]}
		i := 1
		var st []string
		for ; i < len(fields) && !isKeyField(fields[i]); i++ {
			st = append(st, fields[i])
		}
		d.State = strings.Join(st, " ")
		for ; i < len(fields); i++ {
			k, v, _ := strings.Cut(fields[i], ":")
			switch k {
			case "usb":
				d.USB = v
			case "product":
				d.Product = v
			case "model":
				d.Model = v
			case "device":
				d.Device = v
			case "transport_id":
				d.TransportID = v
			}
		}
		out = append(out, d)
	}
	return out
}

// SerialFromEnv returns ANDROID_SERIAL, the default device.
func SerialFromEnv() string { return os.Getenv("ANDROID_SERIAL") }

// Select picks the device to drive. serial "" means ANDROID_SERIAL, and if
// that is empty too, the only attached device. A network serial (HOST:PORT)
// that the server does not know yet is connected first. The device must be
// in state "device"; other states give an error saying what to do.
func (c *Client) Select(ctx context.Context, serial string) (DeviceInfo, error) {
	if serial == "" {
		serial = SerialFromEnv()
	}
	devs, err := c.Devices(ctx)
	if err != nil {
		return DeviceInfo{}, err
	}
	if serial == "" {
		switch len(devs) {
		case 0:
			return DeviceInfo{}, fmt.Errorf("%w attached: plug in a phone with USB debugging on, or run `droidgo connect HOST:PORT` for one on the network", device.ErrNoDevice)
		case 1:
			return devs[0], usable(devs[0])
		default:
			var names []string
			for _, d := range devs {
				names = append(names, describe(d))
			}
			return DeviceInfo{}, fmt.Errorf("%d devices attached (%s): choose one with --device SERIAL or ANDROID_SERIAL", len(devs), strings.Join(names, ", "))
		}
	}
	for _, d := range devs {
		if d.Serial == serial {
			return d, usable(d)
		}
	}
	if _, _, err := net.SplitHostPort(serial); err == nil && checkHostPort(serial) == nil {
		_, cerr := c.Connect(ctx, serial)
		if cerr == nil {
			// Wait for the handshake; a phone that needs a person
			// settles as unauthorized, which usable explains below.
			_ = c.WaitState(ctx, serial, 10*time.Second)
		}
		devs, err := c.Devices(ctx)
		if err != nil {
			return DeviceInfo{}, err
		}
		for _, d := range devs {
			if d.Serial == serial {
				return d, usable(d)
			}
		}
		if cerr != nil {
			return DeviceInfo{}, fmt.Errorf("device %s is not attached and connecting to it failed: %w", serial, cerr)
		}
	}
	var names []string
	for _, d := range devs {
		names = append(names, describe(d))
	}
	attached := "no devices are attached"
	if len(names) > 0 {
		attached = "attached: " + strings.Join(names, ", ")
	}
	return DeviceInfo{}, fmt.Errorf("%w: device %q not found (%s)", device.ErrNoDevice, serial, attached)
}

func describe(d DeviceInfo) string {
	s := d.Serial
	if d.Model != "" {
		s += " " + d.Model
	}
	if d.State != "device" {
		s += " (" + d.State + ")"
	}
	return s
}

// usable explains, for a state other than "device", what the person must do.
func usable(d DeviceInfo) error {
	switch st := d.State; {
	case st == "device":
		return nil
	case st == "unauthorized":
		return fmt.Errorf("device %s is unauthorized: unlock the phone and accept the \"Allow USB debugging?\" prompt (tick \"Always allow\"), then retry", d.Serial)
	case st == "offline":
		return fmt.Errorf("device %s is offline: unplug and replug it (or `adb reconnect`), and check the phone is unlocked", d.Serial)
	case strings.HasPrefix(st, "no permissions"):
		return fmt.Errorf("no permission to open USB device %s: add a udev rule for it (Debian: sudo apt-get install android-sdk-platform-tools-common) and replug, then `adb kill-server`", d.Serial)
	case st == "authorizing", st == "connecting":
		return fmt.Errorf("device %s is still %s: wait a moment and retry", d.Serial, st)
	default:
		return fmt.Errorf("device %s is in state %q, not ready for commands: boot it normally with USB debugging on", d.Serial, st)
	}
}

// IsNoDevice reports whether err means no usable device.
func IsNoDevice(err error) bool { return errors.Is(err, device.ErrNoDevice) }
