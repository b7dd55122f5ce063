// Package demo holds a canned, hand-written run (turning on Wi-Fi on a
// simulated phone) for the UI's tests and its tmux check. It is scripted,
// not real model output.
package demo

import (
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
)

// Start is the time of the first event.
var Start = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

type step struct {
	app      string
	elements []loop.ElementInfo
	thinking string
	answer   string
	call     action.Call
	recovery []string
	detail   string
	changed  bool
	warning  string
}

func el(i int, kind, label string) loop.ElementInfo {
	return loop.ElementInfo{Index: i, Kind: kind, Label: label, Bounds: [4]int{0, 200 + 150*i, 1080, 340 + 150*i}}
}

var steps = []step{
	{
		app: "com.android.launcher3",
		elements: []loop.ElementInfo{
			el(0, "button", "Phone"), el(1, "button", "Messages"), el(2, "button", "Chrome"),
			el(3, "button", "Settings"), el(4, "button", "Camera"), el(5, "edit", "Search"),
		},
		thinking: "The task is to turn on Wi-Fi. I am on the home screen. Wi-Fi lives in the Settings app, which is element 3. Tapping it should open Settings.",
		answer:   `<tool_call>{"name": "tap", "arguments": {"index": 3}}</tool_call>`,
		call:     action.Call{Name: action.Tap, Arguments: map[string]any{"index": int64(3)}},
		detail:   "input tap 540 725",
		changed:  true,
	},
	{
		app: "com.android.settings",
		elements: []loop.ElementInfo{
			el(0, "edit", "Search settings"), el(1, "button", "Network & internet"), el(2, "button", "Connected devices"),
			el(3, "button", "Apps"), el(4, "button", "Notifications"), el(5, "button", "Battery"),
			el(6, "button", "Storage"), el(7, "button", "Sound & vibration"), el(8, "button", "Display"),
			el(9, "button", "Wallpaper & style"), el(10, "button", "Accessibility"), el(11, "scroll", "Settings list"),
		},
		thinking: "Settings is open. Wi-Fi is under Network & internet, element 1. I should tap it rather than search.",
		answer:   `<tool_call>{"name": "tap", "arguments": {"index": 1}`,
		call:     action.Call{Name: action.Tap, Arguments: map[string]any{"index": int64(1)}},
		recovery: []string{"closed an unterminated JSON object"},
		detail:   "input tap 540 425",
		changed:  true,
	},
	{
		app: "com.android.settings",
		elements: []loop.ElementInfo{
			el(0, "button", "Navigate up"), el(1, "button", "Internet"), el(2, "button", "Calls & SMS"),
			el(3, "button", "SIMs"), el(4, "switch", "Airplane mode (off)"), el(5, "button", "Hotspot & tethering"),
			el(6, "button", "Data Saver"), el(7, "button", "VPN"),
		},
		thinking: "This is Network & internet. The Wi-Fi switch is inside Internet, element 1. Airplane mode is off, which is fine.",
		answer:   `tap(index=1)`,
		call:     action.Call{Name: action.Tap, Arguments: map[string]any{"index": int64(1)}},
		recovery: []string{"read a Python-style call"},
		detail:   "input tap 540 425",
		changed:  true,
	},
	{
		app: "com.android.settings",
		elements: []loop.ElementInfo{
			el(0, "button", "Navigate up"), el(1, "switch", "Wi-Fi (off)"), el(2, "button", "Network preferences"),
			el(3, "button", "Saved networks"), el(4, "button", "Non-carrier data usage"),
		},
		thinking: "The Internet page shows the Wi-Fi switch, element 1, and it is off. Tapping the switch turns Wi-Fi on.",
		answer:   `<tool_call>{"name": "tap", "arguments": {"index": 1}}</tool_call>`,
		call:     action.Call{Name: action.Tap, Arguments: map[string]any{"index": int64(1)}},
		detail:   "input tap 540 425",
		changed:  true,
	},
	{
		app: "com.android.settings",
		elements: []loop.ElementInfo{
			el(0, "button", "Navigate up"), el(1, "switch", "Wi-Fi (on)"), el(2, "button", "AndroidWifi"),
			el(3, "button", "Network preferences"), el(4, "button", "Saved networks"),
		},
		thinking: "The switch now reads on and a network is listed. The task is done.",
		answer:   `<tool_call>{"name": "task_complete", "arguments": {"summary": "Wi-Fi is on"}}</tool_call>`,
		call:     action.Call{Name: action.TaskComplete, Arguments: map[string]any{"summary": "Wi-Fi is on"}},
		detail:   "task_complete",
	},
}

// tokens splits text into word-sized pieces, the way a model streams it.
func tokens(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s[1:], ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Events is the whole canned run, in order, with one event per token.
func Events() []loop.Event {
	t := Start
	at := func(d time.Duration) time.Time { t = t.Add(d); return t }
	evs := []loop.Event{{Type: loop.EvRunStarted, Time: at(0), Task: "Turn on Wi-Fi", MaxSteps: 20,
		Device: "sim:wifi", Model: "script:wifi (scripted)"}}
	for i, s := range steps {
		n := i + 1
		evs = append(evs, loop.Event{Type: loop.EvStepStarted, Time: at(300 * time.Millisecond), Step: n,
			Screen: &loop.ScreenInfo{Width: 1080, Height: 2400, App: s.app, Elements: s.elements, Fingerprint: s.app}})
		th, an := tokens(s.thinking), tokens(s.answer)
		for _, tok := range th {
			evs = append(evs, loop.Event{Type: loop.EvThinking, Time: at(40 * time.Millisecond), Step: n, Text: tok})
		}
		for _, tok := range an {
			evs = append(evs, loop.Event{Type: loop.EvAnswer, Time: at(40 * time.Millisecond), Step: n, Text: tok})
		}
		gen := len(th) + len(an)
		evs = append(evs, loop.Event{Type: loop.EvModelStats, Time: at(0), Step: n, Stats: &loop.StatsInfo{
			PromptTokens: 900 + 40*n, GeneratedTokens: gen, DecodeMS: float64(gen) * 40, TokensPerSecond: 25}})
		call := s.call
		evs = append(evs, loop.Event{Type: loop.EvToolCall, Time: at(0), Step: n, Call: &call,
			Parse: &loop.ParseInfo{Format: "hermes", Recoveries: s.recovery, Raw: s.answer}})
		var elem *int
		if idx, ok := call.Arguments["index"].(int64); ok {
			e := int(idx)
			elem = &e
		}
		evs = append(evs, loop.Event{Type: loop.EvAction, Time: at(100 * time.Millisecond), Step: n, Call: &call,
			Outcome: loop.OutcomeDone, Detail: s.detail, Element: elem})
		if call.Name != action.TaskComplete {
			changed := s.changed
			evs = append(evs, loop.Event{Type: loop.EvScreenChange, Time: at(400 * time.Millisecond), Step: n, Changed: &changed})
		}
		if s.warning != "" {
			evs = append(evs, loop.Event{Type: loop.EvWarning, Time: at(0), Step: n, Text: s.warning})
		}
	}
	evs = append(evs, loop.Event{Type: loop.EvFinished, Time: at(0), Step: len(steps), Result: &loop.Result{
		Success: true, Reason: "task_complete", Summary: "Wi-Fi is on", Steps: len(steps), Seconds: t.Sub(Start).Seconds()}})
	return evs
}
