package main

// droidgo on the phone itself, started from a computer: run --on-phone
// runs the droidgo that deploy put on the phone through adb's shell with
// a pty (so its TUI draws on this terminal and keys reach it), --detach
// starts it in the background there, attach shows a background run, stop
// ends it. On the phone (--device local) the same commands start, show
// and stop the background run themselves; the computer's commands run
// them there.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/deploy"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/device/local"
	"github.com/droidgo/droidgo/device/shell"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/onphone"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/tui"
)

// phoneBinary is the droidgo deploy put on the phone.
const phoneBinary = deploy.DefaultDir + "/" + deploy.BinaryName

// runOnPhone runs `run` with the same flags on the phone, as droidgo
// there with --device local, through adb's shell: with a pty when this
// terminal is one. Its recording stays on the phone (and, with --record
// FILE, is copied here afterwards), so a run the connection cut short
// keeps it.
func runOnPhone(o *runOptions, flags *pflag.FlagSet) error {
	d, ctx := o.d, o.d.ctx
	switch {
	case len(o.sims) > 0:
		return usageErr(errors.New("--on-phone runs droidgo on a phone, not with --sim (serve a scenario as a phone with 'droidgo sim serve' and deploy to it)"))
	case len(o.devices) > 1 || singleDevice(o.devices) == "all" || singleDevice(o.devices) == local.Serial:
		return usageErr(errors.New("--on-phone runs on one phone: give --device SERIAL of a phone behind the adb server"))
	case o.detach && o.step:
		return usageErr(errors.New("--step waits for approvals no one can give to a run in the background"))
	}
	cfg, err := o.settings()
	if err != nil {
		return err
	}
	phone, name, err := deployPhone(ctx, d, cmp.Or(singleDevice(o.devices), cfg.Device))
	if err != nil {
		return err
	}
	defer closeDevice(phone)
	if err := onPhoneCheck(ctx, phone, name); err != nil {
		return err
	}
	args := []string{phoneBinary, "run"}
	if o.task != "" {
		args = append(args, o.task)
	}
	args = append(args, passFlags(flags, "on-phone", "device", "model", "endpoint", "model-name", "record", "detached")...)
	margs, err := phoneModel(ctx, d, cfg, phone)
	if err != nil {
		return err
	}
	args = append(args, margs...)
	rec := deploy.DefaultDir + "/" + onphone.RecordingFile
	if o.record != "" {
		rec = deploy.DefaultDir + "/" + filepath.Base(o.record)
	}
	args = append(args, "--record", rec, "--device", local.Serial)
	if o.detach {
		return d.phoneCommand(ctx, phone, false, args...)
	}
	err = d.phoneCommand(ctx, phone, true, args...)
	if errors.Is(err, device.ErrNoDevice) {
		return fmt.Errorf("%w: the run on the phone was hung up and ended; its recording is %s on the phone", err, rec)
	}
	if o.record != "" {
		if perr := pullRecording(ctx, phone, rec, o.record); perr != nil {
			return errors.Join(err, perr)
		}
	}
	return err
}

// pullRecording copies the phone's recording rec to the file dst. After
// a Ctrl-C here, which hung up the run on the phone, it waits (10 s at
// most) for the run to finish its recording.
func pullRecording(ctx context.Context, phone *adb.Device, rec, dst string) error {
	interrupted := ctx.Err() != nil
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _, err := phone.Client().Pull(pctx, phone.Serial(), rec, phone.StatV2())
		if err != nil {
			return fmt.Errorf("copy the recording %s from the phone: %w", rec, err)
		}
		if !interrupted || finished(data) || time.Now().After(deadline) {
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return fmt.Errorf("copy the recording %s from the phone: %w", rec, err)
			}
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finished reports whether a recording ends with its result.
func finished(rec []byte) bool {
	rec = bytes.TrimSpace(rec)
	last := rec[bytes.LastIndexByte(rec, '\n')+1:]
	var ev loop.Event
	return json.Unmarshal(last, &ev) == nil && ev.Type == loop.EvFinished
}

// onPhoneCheck says what to do when deploy has not put droidgo on the
// phone.
func onPhoneCheck(ctx context.Context, phone *adb.Device, name string) error {
	if _, err := phone.Stat(ctx, phoneBinary); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("droidgo is not on %s (no %s): put it there with 'droidgo deploy'", name, phoneBinary)
	} else if err != nil {
		return err
	}
	return nil
}

// phoneModel returns the --model or --endpoint arguments of the run on the
// phone: the model run would use here, as deploy put it on the phone (a
// script is copied there now), or the endpoint.
func phoneModel(ctx context.Context, d *deps, cfg *config.Config, phone *adb.Device) ([]string, error) {
	src, err := modelSourceOf(cfg)
	if err != nil {
		return nil, err
	}
	if src == fromEndpoint {
		args := []string{"--endpoint", cfg.Endpoint}
		if cfg.ModelName != "" {
			args = append(args, "--model-name", cfg.ModelName)
		}
		return args, nil
	}
	if rest, ok := strings.CutPrefix(cfg.Model, "script:"); ok && src == fromModel {
		file, query, _ := strings.Cut(rest, "?")
		f, err := os.Open(file)
		if err != nil {
			return nil, usageErr(fmt.Errorf("model script: %w", err))
		}
		defer f.Close()
		dst := deploy.DefaultDir + "/" + filepath.Base(file)
		if err := phone.Push(ctx, dst, 0o644, f); err != nil {
			return nil, fmt.Errorf("copy the model script to the phone: %w", err)
		}
		spec := "script:" + dst
		if query != "" {
			spec += "?" + query
		}
		return []string{"--model", spec}, nil
	}
	file, err := deployModel(d, cfg, "")
	if err != nil {
		return nil, err
	}
	dst := deploy.DefaultDir + "/" + filepath.Base(file)
	if _, err := phone.Stat(ctx, dst); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the model %s is not on the phone (no %s): put it there with 'droidgo deploy --model %s'", filepath.Base(file), dst, file)
	} else if err != nil {
		return nil, err
	}
	return []string{"--model", dst}, nil
}

// passFlags returns the flags given to a command, but skip, as arguments
// that give them again.
func passFlags(flags *pflag.FlagSet, skip ...string) []string {
	var out []string
	flags.Visit(func(f *pflag.Flag) {
		for _, s := range skip {
			if f.Name == s {
				return
			}
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			vals := sv.GetSlice()
			if len(vals) == 0 {
				out = append(out, "--"+f.Name+"=")
			}
			for _, v := range vals {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}

// phoneCommand runs argv on the phone with its output here, and its input
// from here when interactive and this is a terminal (with a pty then, this
// terminal in raw mode and its size following this one's), and turns its
// exit status into droidgo's.
func (d *deps) phoneCommand(ctx context.Context, phone *adb.Device, interactive bool, argv ...string) error {
	line, err := shell.ShellLine(argv...)
	if err != nil {
		return usageErr(err)
	}
	if !phone.ShellV2() {
		return fmt.Errorf("%s has no shell protocol v2 (Android 7 or later has it), which running droidgo there needs", phone.Serial())
	}
	opts := adb.SessionOptions{Stdout: d.stdout, Stderr: d.stderr, Term: d.getenv("TERM")}
	in, isFile := d.stdin.(*os.File)
	out, _ := terminalOut(d.stdout).(*os.File)
	if interactive && isFile && out != nil && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd())) {
		state, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer term.Restore(int(in.Fd()), state)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		resize := make(chan struct{}, 1)
		go func() {
			for range winch {
				select {
				case resize <- struct{}{}:
				default:
				}
			}
		}()
		opts.PTY, opts.Stdin, opts.Resize = true, in, resize
		opts.Size = func() (int, int, bool) {
			cols, rows, err := term.GetSize(int(out.Fd()))
			return rows, cols, err == nil
		}
		if opts.Term == "" {
			opts.Term = "xterm-256color"
		}
	}
	code, err := phone.Client().Session(ctx, phone.Serial(), line, opts)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// onThisPhone reports whether a command names the phone droidgo runs on
// (--device local, or nothing where that is the default).
func (d *deps) onThisPhone(ctx context.Context, serial string) bool {
	if serial == local.Serial {
		return true
	}
	if serial == "" && d.getenv("ANDROID_SERIAL") == "" {
		_, _, canDrive := d.onPhone(ctx)
		return canDrive
	}
	return false
}

// runDir is the directory of the running droidgo: deploy's, on a phone.
func runDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return filepath.Dir(exe), nil
}

// startDetached starts, on the phone droidgo runs on, the same run in the
// background: a new session (no terminal to hang up), its output to
// run.log, its recording to run.jsonl (or --record), its state in
// run.json, all beside droidgo. It returns once the run is going.
func startDetached(o *runOptions, flags *pflag.FlagSet) error {
	d, ctx := o.d, o.d.ctx
	if !d.onThisPhone(ctx, singleDevice(o.devices)) || len(o.sims) > 0 {
		return usageErr(errors.New("--detach keeps a run going on the phone droidgo runs on: give it with --on-phone from a computer, or with --device local on the phone"))
	}
	if o.step {
		return usageErr(errors.New("--step waits for approvals no one can give to a run in the background"))
	}
	dir, err := runDir()
	if err != nil {
		return err
	}
	if st, err := onphone.Read(dir); err == nil && onphone.Alive(st.PID) {
		return fmt.Errorf("a run is already going in the background (pid %d, %q): 'droidgo attach' shows it, 'droidgo stop' ends it", st.PID, st.Task)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{exe, "run"}
	if o.task != "" {
		args = append(args, o.task)
	}
	args = append(args, passFlags(flags, "detach", "detached")...)
	if o.record == "" {
		args = append(args, "--record", filepath.Join(dir, onphone.RecordingFile))
	}
	line, err := shell.ShellLine(append(args, "--detached")...)
	if err != nil {
		return usageErr(err)
	}
	if err := onphone.Clear(dir); err != nil {
		return err
	}
	logPath := filepath.Join(dir, onphone.LogFile)
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	sh, err := exec.LookPath("sh")
	if err != nil {
		return fmt.Errorf("start the background run: %w", err)
	}
	cmd := exec.Command(sh, "-c", line)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the background run: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(2 * time.Minute)
	for {
		if st, err := onphone.Read(dir); err == nil {
			fmt.Fprintf(d.stdout, "droidgo: the run goes on in the background on the phone (pid %d): 'droidgo attach' shows it, 'droidgo stop' ends it; it prints to %s and records to %s\n", st.PID, logPath, st.Recording)
			return nil
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(logPath)
			return fmt.Errorf("the background run ended as it started (%v): %s", err, strings.TrimSpace(termsafe.String(string(msg))))
		case <-limit:
			return fmt.Errorf("the background run did not start within 2 minutes; see %s", logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// registerDetached writes the state of the background run this process
// is: which process, its recording, its log.
func registerDetached(o *runOptions) error {
	dir, err := runDir()
	if err != nil {
		return err
	}
	rec := o.record
	if rec != "" {
		if abs, err := filepath.Abs(rec); err == nil {
			rec = abs
		}
	}
	return onphone.Write(dir, onphone.Run{PID: os.Getpid(), Task: o.task, Recording: rec, Log: filepath.Join(dir, onphone.LogFile), Started: o.d.clock().UTC()})
}

func newAttachCmd(d *deps) *cobra.Command {
	var serial string
	var asJSON, noTUI bool
	c := &cobra.Command{
		Use:   "attach",
		Short: "Show the run going on in the background on the phone",
		Long: `Show the run that 'droidgo run --on-phone --detach' started on the phone, live
(in the TUI on a terminal), or its result when it has ended. Leaving (q or
Ctrl-C) leaves the run going; 'droidgo stop' ends it.

On the phone itself (--device local) it follows the run's recording; from a
computer it runs there through adb, as run --on-phone does.

Exit status: 0 when the run succeeded or was left going; 1 when it failed,
was stopped, or there is none.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !d.onThisPhone(d.ctx, serial) {
				return d.onPhoneCmd(serial, true, append([]string{"attach"}, passFlags(cmd.Flags(), "device")...)...)
			}
			return attachHere(d, asJSON, noTUI)
		},
	}
	c.Flags().StringVarP(&serial, "device", "s", "", "the phone's `SERIAL` (local: this phone)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line")
	c.Flags().BoolVar(&noTUI, "no-tui", false, "print plain text even on a terminal")
	return c
}

func newStopCmd(d *deps) *cobra.Command {
	var serial string
	c := &cobra.Command{
		Use:   "stop",
		Short: "End the run going on in the background on the phone",
		Long: `End the run that 'droidgo run --on-phone --detach' started on the phone, as
Ctrl-C would: it finishes its recording. Exit status: 0 when a run was
stopped; 1 when none was going.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !d.onThisPhone(d.ctx, serial) {
				return d.onPhoneCmd(serial, false, "stop")
			}
			return stopHere(d)
		},
	}
	c.Flags().StringVarP(&serial, "device", "s", "", "the phone's `SERIAL` (local: this phone)")
	return c
}

// onPhoneCmd runs a droidgo command on the phone (--device local there).
func (d *deps) onPhoneCmd(serial string, interactive bool, args ...string) error {
	phone, name, err := deployPhone(d.ctx, d, serial)
	if err != nil {
		return err
	}
	defer closeDevice(phone)
	if err := onPhoneCheck(d.ctx, phone, name); err != nil {
		return err
	}
	argv := append([]string{phoneBinary}, args...)
	return d.phoneCommand(d.ctx, phone, interactive, append(argv, "--device", local.Serial)...)
}

// attachHere shows the background run of this phone by following its
// recording until its result.
func attachHere(d *deps, asJSON, noTUI bool) error {
	dir, err := runDir()
	if err != nil {
		return err
	}
	st, err := onphone.Read(dir)
	if err != nil {
		return err
	}
	ctx := d.ctx
	f, err := onphone.Open(ctx, st)
	if err != nil {
		return err
	}
	defer f.Close()
	r := onphone.NewFollower(f, st.PID)
	var h recording.Header
	line, err := r.Next(ctx)
	if err == nil {
		err = json.Unmarshal(line, &h)
	}
	if err != nil || h.Type != recording.HeaderType {
		return fmt.Errorf("%s is not a recording being written: %v", st.Recording, err)
	}
	play := func(ctx context.Context, emit func(loop.Event), _ *tui.UI) (*loop.Result, error) {
		for {
			line, err := r.Next(ctx)
			if err != nil {
				return nil, err
			}
			var ev loop.Event
			if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
				return nil, fmt.Errorf("%s: a line that is no event: %.80q", st.Recording, line)
			}
			emit(ev)
			if ev.Type == loop.EvFinished && ev.Result != nil {
				return ev.Result, nil
			}
		}
	}
	uo := tui.Options{Task: h.Task, Device: h.Device, Model: h.Model, EveryCall: true}
	res, err := d.show(ctx, view{json: asJSON, noTUI: noTUI, ui: uo, header: fmt.Sprintf("droidgo: the background run on this phone (pid %d), from %s", st.PID, st.Recording)}, play)
	switch {
	case res == nil && onphone.Alive(st.PID) && (err == nil || errors.Is(err, context.Canceled)):
		// Leaving attach (q, Ctrl-C) leaves the run going.
		fmt.Fprintln(d.stderr, "droidgo: left the run going in the background: 'droidgo attach' shows it again, 'droidgo stop' ends it")
		return nil
	case err != nil:
		return err
	case res == nil || !res.Success:
		return exitCode(1)
	}
	return nil
}

// stopHere ends the background run of this phone with SIGTERM (a cancel:
// its recording is finished) and waits for it to end.
func stopHere(d *deps) error {
	dir, err := runDir()
	if err != nil {
		return err
	}
	st, err := onphone.Read(dir)
	if err != nil {
		return err
	}
	if !onphone.Alive(st.PID) {
		return fmt.Errorf("no run is going in the background (the last one, pid %d, has ended; 'droidgo attach' shows it)", st.PID)
	}
	if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop the run (pid %d): %w", st.PID, err)
	}
	limit := time.Now().Add(30 * time.Second)
	for onphone.Alive(st.PID) {
		if time.Now().After(limit) {
			return fmt.Errorf("the run (pid %d) is still going 30 s after it was asked to stop", st.PID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(d.stdout, "droidgo: stopped the run in the background (pid %d); its recording is %s\n", st.PID, path.Clean(st.Recording))
	return nil
}
