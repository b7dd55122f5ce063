package phonetest

import (
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/simulator/adbd"
	"github.com/droidgo/droidgo/simulator/adbd/adbtest"
)

// TestLocalDeviceQEMU runs droidgo as it runs on a phone: the linux/arm64
// build under qemu-aarch64, driving "this phone" (--device local) through
// a fake Android userland on its PATH (sh, uiautomator, input, am, cmd,
// wm, dumpsys, getprop, ...) that carries each command out on a simulated
// phone. The Wi-Fi scenario is completed with the scripted model and run
// with a tiny random model; each run's events equal those of the same run
// by this machine's own droidgo on another copy of the phone.
func TestLocalDeviceQEMU(t *testing.T) {
	qemu := needQEMU(t)
	t.Parallel()
	bin := buildDroidgo(t, "linux", "arm64")
	phoneArgv := []string{bin}
	if qemu != "" {
		phoneArgv = []string{qemu, "-cpu", "max", bin}
	}
	hostArgv := []string{hostDroidgo(t)}

	random := filepath.Join(t.TempDir(), "random-q4_k_m.gguf")
	if err := writeArm64Model(random); err != nil {
		t.Fatal(err)
	}

	t.Run("devices", func(t *testing.T) {
		// On the phone, `droidgo devices` lists the phone itself first;
		// no adb server runs there (a free port), which is not an error.
		f := newFakePhone(t, "wifi", adbd.Options{})
		env := append(f.env(t), "ANDROID_ADB_SERVER_PORT="+strconv.Itoa(adbtest.FreePort(t)))
		code, out, errs := runProgram(t, 2*time.Minute, env, append(phoneArgv, "devices")...)
		if code != 0 || !regexp.MustCompile(`(?m)^local\s+device\s+this phone \(Droidgo_Simulator\)`).MatchString(out) {
			t.Fatalf("devices on the phone: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		code, out, _ = runProgram(t, 2*time.Minute, env, append(phoneArgv, "devices", "--json")...)
		if code != 0 || !strings.Contains(out, `"serial": "local"`) || !strings.Contains(out, `"description": "this phone"`) {
			t.Fatalf("devices --json on the phone: exit %d\n%s", code, out)
		}
	})

	tests := []struct {
		name    string
		args    []string
		success bool
	}{
		{"script", []string{"--model", scriptFor("wifi", "1ms")}, true},
		{"random", []string{"--model", random, "--max-steps", "1", "--no-think"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(argv []string) ([]map[string]any, *fakePhone) {
				f := newFakePhone(t, "wifi", adbd.Options{})
				args := append([]string{"run", "Turn on Wi-Fi", "--device", "local", "--json"}, tt.args...)
				code, out, errs := runProgram(t, 15*time.Minute, f.env(t), append(argv, args...)...)
				if want := map[bool]int{true: 0, false: 1}[tt.success]; code != want {
					t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", argv[0], code, want, out, errs)
				}
				return normalEvents(t, out), f
			}
			onPhone, phone := run(phoneArgv)
			onHost, host := run(hostArgv)
			if !reflect.DeepEqual(onPhone, onHost) {
				for i := range max(len(onPhone), len(onHost)) {
					var a, b map[string]any
					if i < len(onPhone) {
						a = onPhone[i]
					}
					if i < len(onHost) {
						b = onHost[i]
					}
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("event %d differs:\non the phone: %v\non the host:  %v", i, a, b)
					}
				}
			}
			if got := phone.phone.Success(); got != tt.success {
				t.Errorf("the phone's success check after the run on it: %v, want %v", got, tt.success)
			}
			if got := host.phone.Success(); got != tt.success {
				t.Errorf("the phone's success check after the host's run: %v", got)
			}
			// Every line went through the fake sh and was one simple
			// command of literal words.
			lines := 0
			for _, c := range phone.srv.Commands() {
				if c.Service != adbd.UserlandService {
					continue
				}
				lines++
				if c.Rejected != "" {
					t.Errorf("the phone's sh refused %q: %s", c.Line, c.Rejected)
				}
			}
			if lines == 0 {
				t.Error("no command reached the phone's sh")
			}
			// Every model turn ended in a usable call (the constraint
			// holds on arm64 too), and the first prompt was long enough
			// for the matrix-matrix kernels.
			var turns, calls int
			for _, ev := range onPhone {
				switch ev["type"] {
				case "model_stats":
					turns++
					if st, _ := ev["stats"].(map[string]any); turns == 1 && st["prompt_tokens"].(float64) < 16 {
						t.Errorf("first prompt of %v tokens: too short for the matrix-matrix kernels", st["prompt_tokens"])
					}
				case "tool_call":
					if ev["call"] == nil {
						t.Errorf("step %v: no usable call: %v", ev["step"], ev["parse"])
					}
					calls++
				}
			}
			if turns == 0 || calls != turns || onPhone[len(onPhone)-1]["type"] != "finished" {
				t.Errorf("%d model turns, %d calls, last event %v", turns, calls, onPhone[len(onPhone)-1]["type"])
			}
			if ev := onPhone[0]; ev["device"] != "this phone" {
				t.Errorf("run_started device %v, want \"this phone\"", ev["device"])
			}
			t.Logf("%d events, %d shell lines; last: %s", len(onPhone), lines, strings.TrimSpace(fmtEvent(onPhone[len(onPhone)-1])))
		})
	}
}

func fmtEvent(ev map[string]any) string {
	if r, ok := ev["result"].(map[string]any); ok {
		return strings.TrimSpace(r["reason"].(string))
	}
	return ev["type"].(string)
}
