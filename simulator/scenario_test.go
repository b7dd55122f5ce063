package simulator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// run plays steps on p. A step is "tap SEL", "swipe_to SEL" (swipe up until
// SEL is on screen), "type TEXT", "key NAME", "open APP", "see SEL" (SEL
// must be on screen) or "screen ID".
func run(t *testing.T, p *Phone, steps []string) {
	t.Helper()
	ctx := context.Background()
	for i, st := range steps {
		op, arg, _ := strings.Cut(st, " ")
		switch op {
		case "tap":
			tap(t, p, arg)
		case "swipe_to":
			n := 0
			for ; !visible(t, p, arg); n++ {
				if n == 10 {
					t.Fatalf("step %d %q: still not visible after %d swipes", i, st, n)
				}
				swipeUp(t, p)
			}
		case "swipe_down":
			var x, y int
			fmt.Sscanf(arg, "%d %d", &x, &y)
			if err := p.Swipe(ctx, x, y, x, y+1000, 200*time.Millisecond); err != nil {
				t.Fatalf("step %d %q: %v", i, st, err)
			}
		case "type":
			if err := p.Type(ctx, arg); err != nil {
				t.Fatalf("step %d %q: %v", i, st, err)
			}
		case "key":
			if err := p.Key(ctx, arg); err != nil {
				t.Fatalf("step %d %q: %v", i, st, err)
			}
		case "open":
			if err := p.OpenApp(ctx, arg); err != nil {
				t.Fatalf("step %d %q: %v", i, st, err)
			}
		case "see":
			if !visible(t, p, arg) {
				t.Fatalf("step %d: %s is not on screen %s", i, arg, p.Screen())
			}
		case "screen":
			if got := p.Screen(); got != arg {
				t.Fatalf("step %d: on screen %s, want %s", i, got, arg)
			}
		default:
			t.Fatalf("bad step %q", st)
		}
	}
}

func TestScenariosSolved(t *testing.T) {
	tests := []struct {
		scenario string
		steps    []string
	}{
		{"wifi", []string{
			"tap text=Settings", "screen settings:home",
			"tap text=Network & internet", "see text=Off",
			"tap text=Internet", "screen settings:internet",
			"tap text=Wi-Fi", "see text=AndroidWifi",
		}},
		{"wifi", []string{ // the switch itself, reached by open_app
			"open Settings", "tap text=Network & internet", "tap text=Internet",
			"tap id=android:id/switch_widget",
		}},
		{"bluetooth", []string{
			"tap text=Settings", "tap text=Connected devices",
			"tap text=Connection preferences", "tap text=Bluetooth", "screen settings:bluetooth",
			"see text=Device name", "tap text=Use Bluetooth", "see text=When Bluetooth is turned on, your device can communicate with other nearby Bluetooth devices.",
		}},
		{"devopts", []string{
			"tap text=Settings", "swipe_to text=Developer options", "tap text=Developer options",
			"see text=Use developer options",
		}},
		{"devopts", []string{ // the Pixel way, through System
			"open Settings", "swipe_to text=System", "tap text=System", "swipe_to text=Developer options",
			"tap text=Developer options", "screen settings:developer",
		}},
		{"devopts", []string{ // by searching Settings
			"open Settings", "tap text=Search settings", "screen settingssearch:search", "type dev",
			"see text=Developer options", "tap text=Developer options", "screen settings:developer",
		}},
		{"wifi", []string{ // by searching Settings
			"open Settings", "tap text=Search settings", "type wifi", "tap text=Wi-Fi", "tap text=Wi-Fi",
		}},
		{"bluetooth", []string{ // the quick settings, pulled down from the status bar
			"open Chrome", "swipe_down 540 50", "screen system:qs", "see text=Bluetooth, On", "tap desc=Bluetooth.",
			"see text=Bluetooth, Off", "tap desc=Back", "screen chrome:ntp",
		}},
		{"wifi", []string{ // the quick settings from the home screen, then the Internet page
			"swipe_down 540 1000", "tap desc=Internet,Off", "screen settings:internet", "tap text=Wi-Fi",
		}},
		{"alarm", []string{ // on the dial
			"tap text=Clock", "tap desc=Alarm", "screen clock:alarms", "tap desc=Add alarm",
			"screen clock:timepicker", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=AM", "tap text=OK",
			"screen clock:alarms", "see text=7:30 AM",
		}},
		{"alarm", []string{ // by typing, from PM back to AM
			"open clock", "tap desc=Alarm", "tap desc=Add alarm", "tap text=PM",
			"tap desc=Switch to text input mode for the time input.", "type 07",
			"tap id=com.google.android.deskclock:id/material_minute_text_input", "type 30",
			"tap text=AM", "tap text=OK", "see text=7:30 AM",
		}},
		{"search", []string{
			"tap text=Chrome", "tap text=Search or type URL", "screen chrome:omnibox",
			"type droidgo", "see text=droidgo", "key enter", "screen chrome:results",
			"see text=google.com/search?q=droidgo",
		}},
		{"search", []string{ // the suggestion instead of enter
			"open com.android.chrome", "tap id=com.android.chrome:id/search_box_text", "type droid",
			"type go", "tap id=com.android.chrome:id/omnibox_suggestion",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			p := mustLoad(t, tc.scenario)
			if p.Success() {
				t.Fatal("success holds before anything was done")
			}
			if got := p.Screen(); got != "launcher:home" {
				t.Fatalf("starts on %s, want launcher:home", got)
			}
			run(t, p, tc.steps)
			if !p.Success() {
				t.Fatalf("success does not hold after the correct path; on %s", p.Screen())
			}
		})
	}
}

// Wrong paths must not count as success.
func TestScenariosNotSolvedByWrongPath(t *testing.T) {
	tests := []struct {
		scenario string
		steps    []string
	}{
		{"wifi", []string{"open Settings", "tap text=Network & internet", "tap text=Airplane mode"}},
		{"wifi", []string{"open Settings", "tap text=Network & internet", "tap text=Internet", "tap text=Wi-Fi", "tap text=Wi-Fi"}},
		{"alarm", []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=PM", "tap text=OK", "see text=7:30 PM"}},
		{"alarm", []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=Cancel", "screen clock:alarms"}},
		{"alarm", []string{ // the new alarm switched off again
			"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes", "tap text=OK",
			"swipe_to text=7:30 AM", "tap id=com.google.android.deskclock:id/onoff#2",
		}},
		{"alarm", []string{ // typed 13 is not an hour: OK does nothing
			"open Clock", "tap desc=Alarm", "tap desc=Add alarm",
			"tap desc=Switch to text input mode for the time input.", "type 13",
			"tap id=com.google.android.deskclock:id/material_minute_text_input", "type 30", "tap text=OK",
			"screen clock:timepicker",
		}},
		{"devopts", []string{"open Settings", "swipe_to text=System", "tap text=System", "screen settings:system"}},
		{"alarm", []string{"open Clock", "tap desc=Timer", "screen clock:timer", "tap desc=Stopwatch", "tap desc=Alarm", "screen clock:alarms", "key back", "screen launcher:home"}},
		{"devopts", []string{"open Settings", "tap text=Search settings", "type display", "see text=display", "key enter", "screen settingssearch:search"}},
		{"search", []string{"open Chrome", "tap text=Search or type URL", "type droidgo", "screen chrome:omnibox"}},
		{"search", []string{"open Chrome", "tap text=Search or type URL", "type droid", "key enter", "screen chrome:results"}},
		{"bluetooth", []string{"open Settings", "tap text=Connected devices", "tap text=Connection preferences", "tap text=NFC"}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			p := mustLoad(t, tc.scenario)
			run(t, p, tc.steps)
			if p.Success() {
				t.Fatalf("success holds after a wrong path %v", tc.steps)
			}
		})
	}
}

func TestAlarmListShowsNewAlarm(t *testing.T) {
	p := mustLoad(t, "alarm")
	run(t, p, []string{"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=11 o'clock", "tap desc=5 minutes", "tap text=PM", "tap text=OK"})
	list := p.List("alarms")
	if len(list) != 3 {
		t.Fatalf("alarms = %v, want the two shipped and one new", list)
	}
	want := map[string]string{"time": "11:05", "ampm": "PM", "days": "Tomorrow", "enabled": "true"}
	for k, v := range want {
		if list[2][k] != v {
			t.Errorf("new alarm %s = %q, want %q", k, list[2][k], v)
		}
	}
	run(t, p, []string{"swipe_to text=11:05 PM"})
	// The new alarm's switch is on and the shipped ones are off.
	var states []string
	for _, n := range findAll(dumpTree(t, p), "resource-id", "com.google.android.deskclock:id/onoff") {
		states = append(states, n.attr("checked"))
	}
	if strings.Join(states, ",") != "false,false,true" {
		t.Errorf("alarm switches = %v, want false,false,true", states)
	}
}
