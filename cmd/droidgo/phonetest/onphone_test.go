package phonetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// phoneRig is a fake phone behind Debian's adb server that runs the
// programs pushed to it (the linux/arm64 droidgo under qemu, with the fake
// userland on its PATH), with droidgo deployed on it, and the environment
// of this machine's droidgo (the "PC") pointed at that server.
type phoneRig struct {
	*fakePhone
	serial string
	pc     []string // the PC droidgo's environment
}

func newPhoneRig(t *testing.T) *phoneRig {
	t.Helper()
	qemu := needQEMU(t)
	f := newFakePhone(t, "wifi", adbd.Options{})
	if err := f.srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	f.srv.Start()
	f.srv.RunPrograms(f.land, qemu)
	server := adbtest.StartServer(t)
	serial := adbtest.Connect(t, server, f.srv)
	var pc []string
	for _, kv := range f.env(t) {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, adbd.UserlandSocketEnv+"=") {
			pc = append(pc, kv)
		}
	}
	pc = append(pc, "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir(), "ANDROID_ADB_SERVER_PORT="+strconv.Itoa(server.Port), "ADB_SERVER_SOCKET=")
	r := &phoneRig{fakePhone: f, serial: serial, pc: pc}
	code, out, errs := runProgram(t, 5*time.Minute, pc, hostDroidgo(t), "deploy", "--binary", buildDroidgo(t, "linux", "arm64"), "--no-model")
	if code != 0 {
		t.Fatalf("deploy: exit %d\n%s\n%s", code, out, errs)
	}
	return r
}

// recording reads the phone's recording of a run: its events' types and
// its result's reason ("" when it has none).
func (r *phoneRig) recording(t *testing.T, name string) (types []string, reason string) {
	t.Helper()
	data, ok := r.srv.ReadFile("/data/local/tmp/droidgo/" + name)
	if !ok {
		t.Fatalf("no recording %s on the phone", name)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type   string `json:"type"`
			Result *struct {
				Reason string `json:"reason"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("recording %s: %v in %q", name, err, sc.Text())
		}
		types = append(types, ev.Type)
		if ev.Result != nil {
			reason = ev.Result.Reason
		}
	}
	return types, reason
}

// waitFile waits until the phone's file holds want.
func (r *phoneRig) waitFile(t *testing.T, name, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		data, _ := r.srv.ReadFile("/data/local/tmp/droidgo/" + name)
		if bytes.Contains(data, []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on the phone has no %q after %v:\n%s", name, want, limit, data)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// terminal is a tmux window for the PC's droidgo (skipped without tmux,
// unless DROIDGO_REQUIRE_TMUX=1): tmux runs tmux commands, screen shows
// the window "pc", waitFor waits until it shows every string of want.
func (r *phoneRig) terminal(t *testing.T) (tmux func(args ...string) string, screen func() string, waitFor func(limit time.Duration, want ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("DROIDGO_REQUIRE_TMUX") == "1" {
			t.Fatal("tmux is not installed and DROIDGO_REQUIRE_TMUX=1")
		}
		t.Skip("SKIPPED, NOT PASSED: tmux is not installed")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux = func(args ...string) string {
		cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
		cmd.Env = append(r.pc, "TERM=xterm-256color")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	screen = func() string { return tmux("capture-pane", "-p", "-t", "pc") }
	waitFor = func(limit time.Duration, want ...string) string {
		deadline := time.Now().Add(limit)
		for {
			s := screen()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(s, w)
			}
			if ok {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the PC's terminal has no %q after %v:\n%s", want, limit, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return tmux, screen, waitFor
}

// TestRunOnPhone: droidgo runs on the phone from the PC, through Debian's
// adb server and the fake adbd, which runs the deployed linux/arm64 build
// under qemu with the fake userland: the run's TUI draws in tmux on the
// "PC" and answers q; a run started with --detach goes on without the
// connection, attach shows it to its result, stop ends one; and a
// connection that drops ends the run on the phone with its recording
// finished.
func TestRunOnPhone(t *testing.T) {
	needQEMU(t)
	t.Parallel()
	r := newPhoneRig(t)
	pc := hostDroidgo(t)
	script := func(pace string) string { return scriptFor("wifi", pace) }

	t.Run("tui", func(t *testing.T) {
		tmux, screen, waitFor := r.terminal(t)
		pcRecording := filepath.Join(t.TempDir(), "tui.jsonl")
		line := strings.Join([]string{pc, "run", "--on-phone", "'Turn on Wi-Fi'", "--model", "'" + script("300ms") + "'", "--record", pcRecording}, " ")
		tmux("new-session", "-d", "-s", "pc", "-x", "110", "-y", "34", line+"; echo EXIT=$?; sleep 600")
		// The phone's TUI, drawn on the PC's terminal: its header names
		// the phone it drives, and the model's thinking streams.
		waitFor(3*time.Minute, "Turn on Wi-Fi", "this phone", "Wi-Fi")
		// It is drawn at this window's size, which the pty on the phone
		// follows (a pty starts at 80 columns), also when it changes.
		waitWidth := func(lo, hi int) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				s, widest := screen(), 0
				for _, l := range strings.Split(s, "\n") {
					widest = max(widest, utf8.RuneCountInString(strings.TrimRight(l, " ")))
				}
				if widest >= lo && widest <= hi {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the TUI is %d columns wide, want %d-%d:\n%s", widest, lo, hi, s)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		waitWidth(100, 110)
		tmux("resize-window", "-t", "pc", "-x", "70", "-y", "34")
		waitWidth(60, 70)
		tmux("send-keys", "-t", "pc", "q")
		s := waitFor(time.Minute, "EXIT=")
		if !strings.Contains(s, "EXIT=1") {
			t.Errorf("after q the run on the phone should end as stopped (exit 1):\n%s", s)
		}
		types, reason := r.recording(t, "tui.jsonl")
		if reason != "cancelled" || types[len(types)-1] != "finished" {
			t.Errorf("the phone's recording ends with %v, reason %q; want finished, cancelled", types[len(types)-1:], reason)
		}
		// --record FILE: the phone's recording is copied to FILE.
		onPhone, _ := r.srv.ReadFile("/data/local/tmp/droidgo/tui.jsonl")
		if here, err := os.ReadFile(pcRecording); err != nil || !bytes.Equal(here, onPhone) {
			t.Errorf("--record %s: %d bytes (%v), want the phone's %d", pcRecording, len(here), err, len(onPhone))
		}
	})

	t.Run("detach attach stop", func(t *testing.T) {
		// The task reaches the phone, and its background run, as one
		// word through both shells.
		task := `Turn on Wi-Fi; don't "reboot" $(id) *`
		code, out, errs := runProgram(t, 3*time.Minute, r.pc, pc, "run", "--on-phone", "--detach", task, "--model", script("5ms"))
		if code != 0 || !strings.Contains(out, "goes on in the background on the phone") {
			t.Fatalf("run --on-phone --detach: exit %d\n%s\n%s", code, out, errs)
		}
		// attach follows the run to its result.
		code, out, errs = runProgram(t, 3*time.Minute, r.pc, pc, "attach", "--no-tui")
		if code != 0 || !strings.Contains(out, "result:   SUCCESS: task_complete") || !strings.Contains(out, "task:     "+task) {
			t.Fatalf("attach: exit %d\n%s\n%s", code, out, errs)
		}
		// A run that ended: stop says there is none; attach shows its end.
		if code, _, errs := runProgram(t, time.Minute, r.pc, pc, "stop"); code != 1 || !strings.Contains(errs, "no run is going") {
			t.Errorf("stop after the end: exit %d %s", code, errs)
		}

		// A slow run, stopped: its recording is finished.
		code, out, errs = runProgram(t, 3*time.Minute, r.pc, pc, "run", "--on-phone", "--detach", "Turn on Wi-Fi", "--model", script("1s"))
		if code != 0 {
			t.Fatalf("run --on-phone --detach: exit %d\n%s\n%s", code, out, errs)
		}
		r.waitFile(t, "run.jsonl", `"type":"step_started"`, 2*time.Minute)
		code, out, errs = runProgram(t, time.Minute, r.pc, pc, "stop")
		if code != 0 || !strings.Contains(out, "stopped the run in the background") {
			t.Fatalf("stop: exit %d\n%s\n%s", code, out, errs)
		}
		if _, reason := r.recording(t, "run.jsonl"); reason != "cancelled" {
			t.Errorf("the stopped run's result is %q, want cancelled", reason)
		}
		code, out, errs = runProgram(t, time.Minute, r.pc, pc, "attach", "--json")
		if code != 1 || !strings.Contains(out, `"reason":"cancelled"`) {
			t.Errorf("attach to the stopped run: exit %d\n%s\n%s", code, out, errs)
		}
	})

	t.Run("attach tui", func(t *testing.T) {
		code, out, errs := runProgram(t, 3*time.Minute, r.pc, pc, "run", "--on-phone", "--detach", "Turn on Wi-Fi", "--model", script("1s"))
		if code != 0 {
			t.Fatalf("run --on-phone --detach: exit %d\n%s\n%s", code, out, errs)
		}
		tmux, _, waitFor := r.terminal(t)
		tmux("new-session", "-d", "-s", "pc", "-x", "110", "-y", "34", pc+" attach; echo EXIT=$?; sleep 600")
		// The background run, live in the TUI on the PC; q leaves it
		// going.
		waitFor(2*time.Minute, "Turn on Wi-Fi", "this phone", "step 1")
		tmux("send-keys", "-t", "pc", "q")
		if s := waitFor(time.Minute, "EXIT="); !strings.Contains(s, "EXIT=0") || !strings.Contains(s, "left the run going") {
			t.Errorf("q in attach should leave the run going (exit 0):\n%s", s)
		}
		code, out, errs = runProgram(t, time.Minute, r.pc, pc, "stop")
		if code != 0 || !strings.Contains(out, "stopped the run in the background") {
			t.Errorf("stop after attach: exit %d\n%s\n%s", code, out, errs)
		}
	})

	for _, c := range r.srv.Commands() {
		if c.Rejected != "" {
			t.Errorf("the phone's shell refused %q: %s", c.Line, c.Rejected)
		}
	}

	t.Run("interrupted on the PC", func(t *testing.T) {
		// Ctrl-C on the PC (no pty: the output is a pipe) hangs up the
		// run on the phone, which finishes its recording, copied back.
		pcRecording := filepath.Join(t.TempDir(), "int.jsonl")
		cmd := exec.Command(pc, "run", "--on-phone", "Turn on Wi-Fi", "--model", script("1s"), "--no-tui", "--record", pcRecording)
		cmd.Env = r.pc
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.waitFile(t, "int.jsonl", `"type":"step_started"`, 2*time.Minute)
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("an interrupted run --on-phone exited 0\n%s\n%s", out.String(), errb.String())
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("run --on-phone did not end a minute after Ctrl-C\n%s\n%s", out.String(), errb.String())
		}
		data, err := os.ReadFile(pcRecording)
		if err != nil || !bytes.Contains(data, []byte(`"reason":"cancelled"`)) {
			t.Errorf("the recording copied from the phone after Ctrl-C (%v) has no cancelled result:\n%.2000s", err, data)
		}
	})

	t.Run("dropped connection", func(t *testing.T) {
		done := make(chan struct{})
		var code int
		var out, errs string
		go func() {
			defer close(done)
			code, out, errs = runProgram(t, 3*time.Minute, r.pc, pc, "run", "--on-phone", "Turn on Wi-Fi", "--model", script("1s"), "--no-tui", "--record", filepath.Join(t.TempDir(), "cut.jsonl"))
		}()
		r.waitFile(t, "cut.jsonl", `"type":"step_started"`, 2*time.Minute)
		r.srv.DropConnections() // the cable is pulled
		<-done
		if code == 0 || !strings.Contains(errs, "recording is /data/local/tmp/droidgo/cut.jsonl on the phone") {
			t.Errorf("run --on-phone whose connection dropped: exit %d\n%s\n%s", code, out, errs)
		}
		// The run on the phone got SIGHUP and ended, its recording finished.
		deadline := time.Now().Add(time.Minute)
		for {
			types, reason := r.recording(t, "cut.jsonl")
			if reason == "cancelled" && types[len(types)-1] == "finished" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the phone's recording after the drop ends with %v, reason %q", types[len(types)-1], reason)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
