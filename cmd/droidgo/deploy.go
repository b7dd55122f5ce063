package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/deploy"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/internal/termsafe"
)

// deployJSON is `droidgo deploy --json`'s output.
type deployJSON struct {
	Device string          `json:"device"`
	Dir    string          `json:"dir"`
	Files  []deploy.Result `json:"files"`
}

type deployOptions struct {
	serial, model, binary, dir string
	noModel, json              bool
	partSize                   int64
}

func newDeployCmd(d *deps) *cobra.Command {
	o := &deployOptions{}
	c := &cobra.Command{
		Use:   "deploy",
		Short: "Put droidgo and its model on a phone, to run there",
		Long: `Copy droidgo (built for android/arm64) and the model onto the phone, into
` + deploy.DefaultDir + ` by default, where the shell user adb starts programs as
can run them.

The binary is built from the droidgo checkout the command runs in (with
GOOS=android GOARCH=arm64 CGO_ENABLED=0 go build ./cmd/droidgo), or given with
--binary. The model is the one 'droidgo run' would use (the model setting, else
the downloaded Spark), or --model FILE.

Files are sent with adb's sync protocol in parts of 8 MiB, each checked on the
phone with its sha256sum before it is joined: a transfer cut short (a cable
pulled, Ctrl-C) resumes where it stopped when deploy runs again. Each file is
checked whole on the phone against its sha256, and skipped when the phone has
it already, equal. The free space (df) is checked before anything is sent.

Exit status: 0 when every file is on the phone and verified; 1 when a copy
failed (run deploy again to resume it) or the phone has no room; 2 on a usage
error.`,
		Example: `  droidgo deploy
  droidgo deploy --device emulator-5554 --model Spark-X2.5-1.7B-Q4_K_M.gguf
  droidgo deploy --binary droidgo-android-arm64 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDeploy(d, o) },
	}
	f := c.Flags()
	f.StringVarP(&o.serial, "device", "s", "", "the ADB device's `SERIAL` (default: the device setting, else ANDROID_SERIAL, else the only attached phone)")
	f.StringVarP(&o.model, "model", "m", "", "the model `FILE` to copy (default: the model 'droidgo run' would use)")
	f.BoolVar(&o.noModel, "no-model", false, "copy droidgo only")
	f.StringVar(&o.binary, "binary", "", "the android/arm64 droidgo `FILE` to copy (default: built from this checkout)")
	f.StringVar(&o.dir, "dir", deploy.DefaultDir, "the `DIR`ectory on the phone")
	f.BoolVar(&o.json, "json", false, "print what became of each file as JSON")
	f.Int64Var(&o.partSize, "part-size", deploy.DefaultPartSize, "the size in `BYTES` of the parts files are sent in (at most 64 MiB)")
	_ = f.MarkHidden("part-size")
	return c
}

func runDeploy(d *deps, o *deployOptions) error {
	ctx := d.ctx
	if o.noModel && o.model != "" {
		return usageErr(errors.New("--model and --no-model contradict each other"))
	}
	if err := deploy.CheckDir(o.dir); err != nil {
		return usageErr(fmt.Errorf("--dir: %w", err))
	}
	if o.partSize <= 0 || o.partSize > 64<<20 {
		return usageErr(fmt.Errorf("--part-size %d: give 1 byte to 64 MiB", o.partSize))
	}
	var files []deploy.File
	bin := o.binary
	if bin == "" {
		tmp, err := os.MkdirTemp("", "droidgo-deploy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, deploy.BinaryName)
		fmt.Fprintln(d.stderr, "droidgo: building droidgo for android/arm64...")
		if err := d.buildAndroid(ctx, bin); err != nil {
			if errors.Is(err, deploy.ErrNoCheckout) {
				return usageErr(fmt.Errorf("%v; give the phone's droidgo with --binary FILE (build it with GOOS=android GOARCH=arm64 CGO_ENABLED=0 go build ./cmd/droidgo in a droidgo checkout)", err))
			}
			return err
		}
	}
	if err := deploy.CheckBinary(bin); err != nil {
		return usageErr(err)
	}
	files = append(files, deploy.File{Name: deploy.BinaryName, Path: bin, Perm: 0o755})
	cfg, err := config.Load(d.getenv)
	if err != nil {
		return usageErr(err)
	}
	if !o.noModel {
		m, err := deployModel(d, cfg, o.model)
		if err != nil {
			return err
		}
		files = append(files, deploy.File{Name: filepath.Base(m), Path: m, Perm: 0o644})
	}
	serial := o.serial
	if serial == "" {
		serial = cfg.Device // the phone run would use
	}
	phone, name, err := deployPhone(ctx, d, serial)
	if err != nil {
		return err
	}
	defer closeDevice(phone)
	progress := d.deployProgress()
	res, err := deploy.Run(ctx, phone, files, deploy.Options{Dir: o.dir, PartSize: o.partSize, Progress: progress})
	progress(deploy.Progress{}) // ends a progress line
	if err != nil {
		var se *deploy.SpaceError
		if errors.Is(err, device.ErrNoDevice) || (!errors.As(err, &se) && ctx.Err() != nil) {
			return fmt.Errorf("%w (run droidgo deploy again: it resumes where this copy stopped)", err)
		}
		return err
	}
	if o.json {
		return json.NewEncoder(d.jsonOut()).Encode(deployJSON{Device: phone.Serial(), Dir: o.dir, Files: res})
	}
	out := termsafe.NewWriter(d.stdout)
	for _, r := range res {
		what := "copied and verified"
		if !r.Copied {
			what = "already there, equal"
		}
		fmt.Fprintf(out, "%-20s %10s  %s  sha256 %s\n", r.Name, deploy.Size(r.Bytes), what, r.SHA256[:16])
	}
	fmt.Fprintf(out, "on %s in %s\n", name, o.dir)
	return nil
}

// deployModel is the model file to copy: file, else the model setting when
// it is a file, else the downloaded Spark.
func deployModel(d *deps, cfg *config.Config, file string) (string, error) {
	if file == "" {
		file = cfg.Model
		if file == "" {
			p, ok := d.defaultModel()
			if !ok {
				return "", usageErr(errors.New("no model to copy: download Spark with 'droidgo pull', or give --model FILE.gguf (or --no-model to copy droidgo only)"))
			}
			file = p
		} else if scheme, _, ok := strings.Cut(file, ":"); ok && d.modelOpeners[scheme] != nil && scheme != "file" {
			return "", usageErr(fmt.Errorf("the model setting (%s, from %s) is not a model file; give --model FILE.gguf, or --no-model", file, cfg.Sources["model"]))
		}
	}
	st, err := os.Stat(file)
	if err != nil {
		return "", usageErr(fmt.Errorf("model: %w", err))
	}
	if st.IsDir() {
		return "", usageErr(fmt.Errorf("%s is a directory: deploy copies one model file (a GGUF)", file))
	}
	return file, nil
}

// deployPhone opens the ADB device files go to.
func deployPhone(ctx context.Context, d *deps, serial string) (*adb.Device, string, error) {
	dev, name, err := d.openADB(ctx, serial)
	if err != nil {
		return nil, "", err
	}
	phone, ok := dev.(*adb.Device)
	if !ok {
		closeDevice(dev)
		return nil, "", usageErr(fmt.Errorf("%s is not a phone behind an adb server", name))
	}
	return phone, name, nil
}

// deployProgress reports each file's copy on stderr: a line that counts
// up on a terminal, else a line when a file starts.
func (d *deps) deployProgress() func(deploy.Progress) {
	tty := d.isTerminal(d.stderr)
	var last string
	return func(p deploy.Progress) {
		if p.Name == "" {
			if tty && last != "" {
				fmt.Fprintln(d.stderr)
			}
			last = ""
			return
		}
		if !tty {
			if p.Name != last {
				msg := fmt.Sprintf("droidgo: sending %s (%s)", p.Name, deploy.Size(p.Total))
				if p.Resumed > 0 {
					msg += fmt.Sprintf(", resuming at %s", deploy.Size(p.Resumed))
				}
				fmt.Fprintln(d.stderr, termsafe.String(msg))
			}
			last = p.Name
			return
		}
		if last != "" && p.Name != last {
			fmt.Fprintln(d.stderr)
		}
		last = p.Name
		fmt.Fprintf(d.stderr, "\r\x1b[Kdroidgo: sending %s: %s of %s", termsafe.String(p.Name), deploy.Size(p.Done), deploy.Size(p.Total))
	}
}
