package main

// End-to-end tests of replays on a phone: the real adb server (a private
// one) with a fake adbd per simulated phone behind it, driven through
// execute() as a person would from a shell.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/replay/replaytest"
	"github.com/droidgo/droidgo/simulator"
	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// adbPhones serves simulated phones to one private adb server: starting
// a server is the slow part, and one serves every phone of a test.
type adbPhones struct {
	t   *testing.T
	srv *adbtest.Server
	mu  sync.Mutex // adb connect one at a time
}

func newADBPhones(t *testing.T) *adbPhones {
	adbtest.ADB(t)
	return &adbPhones{t: t, srv: adbtest.StartServer(t)}
}

// serve puts phone behind a fake adbd connected to the server and returns
// its serial. Every phone has ADB Keyboard, which types text `input text`
// cannot (non-ASCII).
func (a *adbPhones) serve(t *testing.T, phone *simulator.Phone) string {
	t.Helper()
	fake := adbtest.StartDevice(t, phone, adbd.Options{ADBKeyboard: true})
	a.mu.Lock()
	defer a.mu.Unlock()
	return adbtest.Connect(t, a.srv, fake)
}

// droidgo runs droidgo with the real dependencies against the server,
// reading stdin.
func (a *adbPhones) droidgo(t *testing.T, stdin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	d := newDeps(ctx, strings.NewReader(stdin), &out, &errb)
	home := t.TempDir()
	vars := map[string]string{
		"ANDROID_ADB_SERVER_PORT": strconv.Itoa(a.srv.Port), "ADB_SERVER_SOCKET": "", "ANDROID_SERIAL": "",
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
		"DROIDGO_CACHE": t.TempDir(), "XDG_CACHE_HOME": t.TempDir(),
	}
	for k, v := range env {
		vars[k] = v
	}
	d.getenv = func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code := executeWith(d, args)
	return code, out.String(), errb.String()
}

// replayResultOf reads the last line of replay --json output.
func replayResultOf(t *testing.T, out string) replayResult {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var r replayResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.Type != "replay_result" {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	return r
}

// TestReplayOverADB replays, on phones behind the real adb server, every
// shipped recording and every successful run of the always-right eval
// scripts, each to the end state of the recorded run; and the same runs on
// the perturbed phones, each to the end or to a stop with its report as
// the phone demands.
func TestReplayOverADB(t *testing.T) {
	a := newADBPhones(t)
	type job struct {
		name, scenario string
		file           string
		want           *simulator.State // the end state, when it is known
		stops          bool
	}
	var jobs []job
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The shipped recordings: the end state is the recorded run's, which
	// a replay on a fresh simulated phone reaches (the replay package's
	// tests compare it with the scripted run).
	for _, name := range replaytest.ShippedNames(t) {
		rec := replaytest.Shipped(t, name)
		scenario := strings.TrimPrefix(rec.Header.Device, "sim:")
		plan, err := replay.FromRecording(rec)
		if err != nil {
			t.Fatal(err)
		}
		phone, err := simulator.Load(scenario)
		if err != nil {
			t.Fatal(err)
		}
		cfg := replaytest.Config(plan, phone)
		cfg.Approver = replaytest.ApproveAll
		if res := replay.Run(context.Background(), cfg); !res.AsRecorded {
			t.Fatalf("%s on the simulator: %+v", name, res)
		}
		st := phone.State()
		jobs = append(jobs, job{name: "shipped/" + name, scenario: scenario, file: name, want: &st})
	}
	// The eval runs of the always-right scripts, with their end states.
	infos, err := simulator.List()
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{}
	for _, in := range infos {
		phone, err := simulator.Load(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		data, res, st := replaytest.RunScriptFile(t, phone, in.Name)
		if !res.Success {
			continue
		}
		runs[in.Name] = write(in.Name, data)
		jobs = append(jobs, job{name: "eval/" + in.Name, scenario: in.Name, file: runs[in.Name], want: &st})
	}
	if len(runs) < 50 {
		t.Fatalf("only %d successful eval runs", len(runs))
	}
	// The perturbed phones, with the runs of the scenarios they vary.
	perturbed, err := simulator.ListPerturbed()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range perturbed {
		phone, err := simulator.Load(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		m := phone.Meta()
		jobs = append(jobs, job{name: "perturbed/" + in.Name, scenario: in.Name, file: runs[m.VariantOf], stops: m.Replay == simulator.ReplayStop})
	}

	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			t.Parallel()
			phone, err := simulator.Load(j.scenario)
			if err != nil {
				t.Fatal(err)
			}
			serial := a.serve(t, phone)
			// Step mode approves every call, the sensitive ones (a Send,
			// a Delete) too, as eval does.
			code, out, errs := a.droidgo(t, strings.Repeat("y\n", 40), nil, "replay", j.file, "--device", serial, "--json", "--step", "--poll", "20ms")
			res := replayResultOf(t, out)
			if j.stops {
				if code != 1 || res.StoppedAt == 0 || res.Why == "" {
					t.Fatalf("exit %d, %+v; want a stop\n%s", code, res, errs)
				}
				return
			}
			if code != 0 || res.Replayed != res.Total || res.StoppedAt != 0 {
				t.Fatalf("exit %d, %+v\n%s\n%s", code, res, tail(out, 3000), errs)
			}
			if !phone.Success() && j.want == nil {
				t.Error("the phone's check does not hold")
			}
			if j.want != nil {
				if st := phone.State(); !reflect.DeepEqual(st, *j.want) {
					t.Errorf("end state\n%+v\nwant\n%+v", st, *j.want)
				}
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestReplayTakeoverOverADB: on a phone with a one-time dialog the
// recording did not have, a scripted model dismisses it and the replay
// resumes and ends as recorded; without the model, it stops.
func TestReplayTakeoverOverADB(t *testing.T) {
	a := newADBPhones(t)
	rec := filepath.Join(t.TempDir(), "takeover.jsonl")
	for _, tc := range []struct {
		name  string
		model bool
		code  int
	}{{"without a model", false, 1}, {"with a model", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			phone, err := simulator.Load("wifi-dialog")
			if err != nil {
				t.Fatal(err)
			}
			serial := a.serve(t, phone)
			args := []string{"replay", "wifi", "--device", serial, "--json", "--poll", "20ms"}
			if tc.model {
				args = append(args, "--model", scriptModel(t, "replay-dialog"), "--record", rec)
			}
			code, out, errs := a.droidgo(t, "", nil, args...)
			res := replayResultOf(t, out)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %+v\n%s", code, tc.code, res, errs)
			}
			if tc.model != phone.Success() {
				t.Errorf("Wi-Fi on: %v", phone.Success())
			}
		})
	}
	// The recording of the replay holds the model's step between the
	// replayed ones, with the model's own output.
	got, err := recording.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	var models, replays int
	for _, ev := range got.Events {
		if ev.Type == "tool_call" && ev.Parse != nil {
			if ev.Parse.Format == "replay" {
				replays++
			} else {
				models++
			}
		}
	}
	if models != 1 || replays != 5 || !got.Result().Success {
		t.Errorf("recording: %d model calls, %d replayed, result %+v", models, replays, got.Result())
	}
}

// TestMacroOverADB saves a run as a macro with a parameter and runs it on
// a phone behind the real adb server with two values, the second one
// non-ASCII, each arriving exactly as typed.
func TestMacroOverADB(t *testing.T) {
	a := newADBPhones(t)
	phone, err := simulator.Load("message-send")
	if err != nil {
		t.Fatal(err)
	}
	data, res, _ := replaytest.RunScriptFile(t, phone, "message-send")
	if !res.Success {
		t.Fatal(res.Reason)
	}
	run := filepath.Join(t.TempDir(), "send.jsonl")
	if err := os.WriteFile(run, data, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_DATA_HOME": t.TempDir()}
	if code, _, errs := a.droidgo(t, "", env, "macro", "save", run, "send", "--param", "message=On my way"); code != 0 {
		t.Fatalf("save: exit %d: %s", code, errs)
	}
	for _, msg := range []string{"Running 10 minutes late", "Grüße aus Köln 👋 — 你好! \"quoted\" $HOME `x`"} {
		phone, err := simulator.Load("message-send")
		if err != nil {
			t.Fatal(err)
		}
		serial := a.serve(t, phone)
		code, out, errs := a.droidgo(t, "y\ny\ny\ny\ny\n", env, "macro", "run", "send", "--device", serial, "--set", "message="+msg, "--step", "--json", "--poll", "20ms")
		if code != 0 {
			t.Fatalf("run with %q: exit %d\n%s\n%s", msg, code, tail(out, 2000), errs)
		}
		if typed := phone.Typed(); len(typed) != 1 || typed[0] != msg {
			t.Errorf("typed %q, want exactly %q", typed, msg)
		}
		if sent := phone.List("sent"); len(sent) != 1 || sent[0]["text"] != msg {
			t.Errorf("sent %v", sent)
		}
	}
	phone2, err := simulator.Load("message-send")
	if err != nil {
		t.Fatal(err)
	}
	serial := a.serve(t, phone2)
	if code, _, errs := a.droidgo(t, "", env, "macro", "run", "send", "--device", serial); code != 2 || !strings.Contains(errs, "--set message=") {
		t.Errorf("a run without the parameter: exit %d: %s", code, errs)
	}
	if n := len(phone2.Actions()); n != 0 || phone2.Dumps() != 0 {
		t.Errorf("the refused run touched the phone: %d actions, %d dumps", n, phone2.Dumps())
	}
}

// A perturbed phone of another density says so to adb, as a phone does.
func TestPerturbedDensityOverADB(t *testing.T) {
	a := newADBPhones(t)
	phone, err := simulator.Load("wifi-small")
	if err != nil {
		t.Fatal(err)
	}
	serial := a.serve(t, phone)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for cmd, want := range map[string]string{"size": "Physical size: 720x1600", "density": "Physical density: 280"} {
		out, err := a.srv.Run(ctx, "-s", serial, "shell", "wm", cmd)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("wm %s: %q %v, want %q", cmd, out, err, want)
		}
	}
}
