package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/deploy"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/device/local"
	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/hub"
	"github.com/droidgo/droidgo/model/script"
	"github.com/droidgo/droidgo/simulator"
)

// deps are everything a command takes from outside the process: the I/O
// streams, the environment, the clock, and the openers of devices and
// models. main builds the real ones with newDeps; a test changes the
// fields it fakes before running a command, so no command reads a package
// variable and tests can run in parallel. (gh's cmdutil.Factory is the
// model.)
type deps struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer // a *checkedWriter: see out
	stderr io.Writer
	// out is stdout as newDeps wrapped it, to tell whether a write failed.
	out *checkedWriter

	// getenv reads the environment: the configuration, the caches and the
	// adb server's address all come through it.
	getenv func(string) string
	// isTerminal says whether w is a terminal (the TUI's condition).
	isTerminal func(w io.Writer) bool

	// now and sleep are the clock of runs, scripted models and replays
	// (sleep returns early with ctx.Err() when ctx ends). nil is the real
	// clock: each package that waits then uses its own.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	// adbClient returns a client of the adb server the environment names.
	adbClient func() (*adb.Client, error)
	// openADB opens the ADB device with the given serial ("" = ANDROID_SERIAL
	// or the only attached device) and returns it with a name for display.
	openADB func(ctx context.Context, serial string) (device.Device, string, error)
	// openSim opens the simulator scenario with the given name.
	openSim func(ctx context.Context, scenario string) (device.Device, error)
	// openLocal opens the phone droidgo runs on (--device local).
	openLocal func(ctx context.Context) (device.Device, error)
	// onPhone reports whether droidgo runs on an Android phone (its
	// properties, when it does) and whether as a user that may drive it
	// (the shell user adb starts programs as, or root): then the phone
	// itself is the default device.
	onPhone func(ctx context.Context) (props local.Props, isPhone, canDrive bool)
	// modelOpeners open a model backend from a --model value with the
	// command's settings (the configuration merged with its flags). The
	// key is the scheme before the first colon ("script"); "file" opens a
	// plain path (a GGUF file or an HF directory).
	modelOpeners map[string]modelOpener
	// defaultModel returns the default model's path if it was pulled.
	defaultModel func() (string, bool)
	// buildAndroid builds droidgo for android/arm64 into the file out, from
	// the checkout the working directory is in (deploy.ErrNoCheckout when
	// there is none, or no go tool).
	buildAndroid func(ctx context.Context, out string) error
	// meminfo reads the machine's memory (/proc/meminfo), which the
	// in-process engine must fit in (nil or an error: not checked).
	meminfo func() (sysmem.Info, error)
}

// modelOpener opens a model backend from the part of a --model value
// after its scheme, with the settings of the command that opens it.
type modelOpener func(ctx context.Context, spec string, cfg *config.Config) (model.Backend, error)

// jsonOut is stdout for JSON: the C1 and bidi controls that encoding/json
// leaves raw in strings (a device name, a label, model text) are written
// as escapes, since JSON output is often read on a terminal.
func (d *deps) jsonOut() io.Writer { return termsafe.NewJSONWriter(d.stdout) }

// newDeps returns the real dependencies of a command run on the given
// streams.
func newDeps(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) *deps {
	out := &checkedWriter{w: stdout}
	d := &deps{
		ctx: ctx, stdin: stdin, stdout: out, stderr: stderr, out: out,
		getenv:     os.Getenv,
		isTerminal: writerIsTerminal,
		openSim: func(_ context.Context, scenario string) (device.Device, error) {
			return simulator.Load(scenario)
		},
	}
	// The openers below read d when they are called, so a test's getenv,
	// clock or stderr reach them.
	d.adbClient = func() (*adb.Client, error) {
		addr, err := adb.ServerAddr(d.getenv)
		if err != nil {
			return nil, err
		}
		return &adb.Client{Addr: addr, AutoStart: true}, nil
	}
	d.openADB = func(ctx context.Context, serial string) (device.Device, string, error) {
		if serial == "" {
			serial = d.getenv("ANDROID_SERIAL") // what adb.Open would read itself
		}
		return openADBDevice(ctx, d.adbClient, serial, 0)
	}
	d.openLocal = func(context.Context) (device.Device, error) { return local.Open() }
	var phoneOnce sync.Once
	var phone struct {
		props        local.Props
		is, canDrive bool
	}
	d.onPhone = func(ctx context.Context) (local.Props, bool, bool) {
		phoneOnce.Do(func() {
			p, err := local.Probe(ctx)
			phone.props, phone.is = p, err == nil
			phone.canDrive = phone.is && local.CanDrive(os.Getuid())
		})
		return phone.props, phone.is, phone.canDrive
	}
	d.meminfo = sysmem.Read
	d.defaultModel = func() (string, bool) {
		return d.hubClient().Find(hub.DefaultRepo, hub.DefaultQuant)
	}
	d.buildAndroid = func(ctx context.Context, out string) error {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		mod, err := deploy.FindModule(wd)
		if err != nil {
			return err
		}
		return deploy.Build(ctx, mod, out)
	}
	d.modelOpeners = map[string]modelOpener{
		"script": func(_ context.Context, spec string, _ *config.Config) (model.Backend, error) {
			return script.Open(spec, script.Options{Sleep: d.sleep, Now: d.now})
		},
		// The in-process Spark backend opens plain paths. Threads,
		// repacking, the KV type and the prompt cache come from the
		// settings of the command (run's or eval's, with their flags);
		// the constraint and the sampling reach the backend through the
		// loop's requests.
		"file": func(_ context.Context, spec string, cfg *config.Config) (model.Backend, error) {
			return openLocalWith(cfg, spec, localOpts{getenv: d.getenv, meminfo: d.meminfo, sequences: cfg.Vote, warn: d.stderr})
		},
	}
	return d
}

// clock returns the time now.
func (d *deps) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// openADBDevice opens the device with serial, or ANDROID_SERIAL, or the
// only attached one, through the server client returns. retryDelay, when
// not zero, overrides the pause between dump attempts.
func openADBDevice(ctx context.Context, client func() (*adb.Client, error), serial string, retryDelay time.Duration) (device.Device, string, error) {
	c, err := client()
	if err != nil {
		return nil, "", usageErr(err)
	}
	dev, err := adb.Open(ctx, c, serial)
	if err != nil {
		return nil, "", err
	}
	if retryDelay > 0 {
		dev.DumpRetryDelay = retryDelay
	}
	name := dev.Serial()
	if m := dev.Info().Model; m != "" {
		name += " (" + m + ")"
	}
	return dev, name, nil
}

// openDevice opens the phone a command names: the simulator scenario sim
// when it is set, else the phone droidgo runs on for serial "local" (the
// default there, when no serial and no ANDROID_SERIAL is given and droidgo
// may drive it), else the ADB device serial. It returns the device and
// its name for display and recordings ("sim:wifi", "this phone",
// "emulator-5554 (Pixel 7)"). An unknown scenario is a usage error; a
// device that cannot be reached is not. run, screen and do all open their
// phone here.
func (d *deps) openDevice(ctx context.Context, sim, serial string) (device.Device, string, error) {
	if sim != "" {
		dev, err := d.openSim(ctx, sim)
		if errors.Is(err, simulator.ErrUnknownScenario) {
			return nil, "", usageErr(err)
		}
		if err != nil {
			return nil, "", fmt.Errorf("open simulator scenario %q: %w", sim, err)
		}
		return dev, "sim:" + sim, nil
	}
	if serial == "" && d.getenv("ANDROID_SERIAL") == "" {
		if _, _, canDrive := d.onPhone(ctx); canDrive {
			serial = local.Serial
		}
	}
	if serial == local.Serial {
		dev, err := d.openLocal(ctx)
		if err != nil {
			return nil, "", err
		}
		return dev, local.Name, nil
	}
	dev, name, err := d.openADB(ctx, serial)
	if err != nil {
		return nil, "", err
	}
	if name == "" {
		name = serial
	}
	return dev, name, nil
}

// closeDevice closes dev if it holds anything open.
func closeDevice(dev device.Device) {
	if c, ok := dev.(io.Closer); ok {
		c.Close()
	}
}
