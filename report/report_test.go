package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func shipped(t *testing.T, name string) *recording.Recording {
	t.Helper()
	f, err := fixtures.FS.Open("recordings/" + name + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := recording.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTextGolden prints shipped recordings as plain text. The recordings
// exercise every event kind: recovered calls, a bad index, the thinking
// budget, a corrective prompt, warnings and both results.
func TestTextGolden(t *testing.T) {
	for _, name := range []string{"wifi-recover", "wifi-loop", "wifi-undo"} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			p := NewText(&buf)
			for _, ev := range shipped(t, name).Events {
				p.Event(ev)
			}
			golden := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("output differs from %s (run with -update after checking it):\n%s", golden, buf.String())
			}
		})
	}
}

func TestTextElementsAndUnreadableScreen(t *testing.T) {
	var buf bytes.Buffer
	p := NewText(&buf)
	p.Elements = true
	p.Event(loop.Event{Type: loop.EvRunStarted, MaxSteps: 3})
	p.Event(loop.Event{Type: loop.EvStepStarted, Step: 1, Screen: &loop.ScreenInfo{Prompt: "Screen:\n[0] button \"OK\"\n", Elements: []loop.ElementInfo{{Index: 0, Label: "OK"}}}})
	p.Event(loop.Event{Type: loop.EvThinking, Step: 1, Text: "line one\nline two"})
	p.Event(loop.Event{Type: loop.EvStepStarted, Step: 2})
	p.Event(loop.Event{Type: loop.EvFinished, Result: &loop.Result{Reason: "cancelled", Steps: 2, Seconds: 1.25}})
	out := buf.String()
	for _, want := range []string{
		"step 1/3  (1 elements)\n            Screen:\n            [0] button \"OK\"\n",
		"  thinking: line one\n            line two\n",
		"step 2/3  (screen unreadable)",
		"result:   FAILURE: cancelled\n          2 steps in 1.2 s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestJSON(t *testing.T) {
	rec := shipped(t, "wifi")
	var buf bytes.Buffer
	p := NewJSON(&buf)
	for _, ev := range rec.Events {
		p.Event(ev)
	}
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	left := 0 // prompts and hold points
	for _, ev := range rec.Events {
		if ev.Type == loop.EvPrompt || ev.Type == loop.EvHold {
			left++
		}
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		n++
		var ev loop.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if ev.Type == loop.EvPrompt || ev.Type == loop.EvHold || ev.Screen != nil && ev.Screen.XML != "" {
			t.Errorf("line %d carries a prompt, a hold point or raw XML", n)
		}
		if ev.Device != "sim:wifi" {
			t.Errorf("line %d: device %q, want every event to name the phone", n, ev.Device)
		}
		if ev.Type == loop.EvStepStarted && (ev.Screen == nil || ev.Screen.Prompt == "") {
			t.Errorf("line %d: the screen was dropped with its XML", n)
		}
	}
	if n != len(rec.Events)-left {
		t.Errorf("%d lines for %d events (%d prompts and hold points)", n, len(rec.Events), left)
	}
	// The printer must not change the caller's events.
	for _, ev := range rec.Events {
		if ev.Type == loop.EvStepStarted && ev.Screen.XML == "" {
			t.Fatal("the printer stripped the XML of the caller's event")
		}
	}
}

// TestJSONEscapesTerminalControls: a model's bidi override or C1 control
// reaches the JSON lines as an escape, and reads back as itself.
func TestJSONEscapesTerminalControls(t *testing.T) {
	text := "pay \u202eredaol\u202c \u009b2J now"
	var buf bytes.Buffer
	p := NewJSON(&buf)
	p.Event(loop.Event{Type: loop.EvThinking, Text: text})
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	if strings.ContainsAny(buf.String(), "\u202e\u202c\u009b") {
		t.Fatalf("raw controls in %q", buf.String())
	}
	var ev loop.Event
	if err := json.Unmarshal(buf.Bytes(), &ev); err != nil || ev.Text != text {
		t.Fatalf("read back %q, %v; want %q", ev.Text, err, text)
	}
}
