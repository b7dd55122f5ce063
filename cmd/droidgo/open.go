package main

import (
	"context"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/model"
)

// Hooks that command files fill in from their init functions, so that the
// commands that need a device or a model (run, screen, do) do not depend on
// every backend's file. A nil hook means the feature is not built in.
var (
	// openADB opens the ADB device with the given serial ("" = the only
	// attached device, or ANDROID_SERIAL). It returns the device and a name
	// for display.
	openADB func(ctx context.Context, serial string) (device.Device, string, error)

	// openSim opens the simulator scenario with the given name.
	openSim func(ctx context.Context, scenario string) (device.Device, error)

	// modelOpeners open a model backend from a --model value. The key is the
	// scheme before the first colon ("script"); "file" handles a plain path
	// (a GGUF file or an HF directory).
	modelOpeners = map[string]func(ctx context.Context, spec string) (model.Backend, error){}
)
