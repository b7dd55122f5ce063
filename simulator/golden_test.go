package simulator

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden dumps in testdata/golden")

// TestGoldenDumps pins the dump of the home screen every scenario starts on
// and of the screen each correct path ends on, byte for byte, so a change to a fixture or
// to the XML writer shows in review. Regenerate with -update.
func TestGoldenDumps(t *testing.T) {
	paths := map[string][]string{
		"wifi":      {"open Settings", "tap text=Network & internet", "tap text=Internet", "tap text=Wi-Fi"},
		"bluetooth": {"open Settings", "tap text=Connected devices", "tap text=Connection preferences", "tap text=Bluetooth", "tap text=Use Bluetooth"},
		"devopts":   {"open Settings", "swipe_to text=Developer options"},
		"alarm":     {"open Clock", "tap desc=Alarm", "tap desc=Add alarm", "tap desc=7 o'clock", "tap desc=30 minutes"},
		"search":    {"open Chrome", "tap text=Search or type URL", "type droidgo", "key enter"},
	}
	dump := func(p *Phone) []byte {
		data, err := p.Dump(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for name, steps := range paths {
		t.Run(name, func(t *testing.T) {
			p := mustLoad(t, name)
			if name == "wifi" { // every scenario starts on the same home screen
				checkGolden(t, "home", dump(p))
			}
			run(t, p, steps)
			checkGolden(t, name+"-end", dump(p))
		})
	}
	// The app drawer lists the scenario's apps: five of them, and eleven.
	for _, name := range []string{"wifi", "airplane-on"} {
		t.Run("drawer-"+name, func(t *testing.T) {
			p := mustLoad(t, name)
			swipeUp(t, p)
			checkGolden(t, "drawer-"+name, dump(p))
		})
	}
}

// checkGolden compares got with testdata/golden/BASE.xml, or rewrites the
// file with -update.
func checkGolden(t *testing.T, base string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", "golden", base+".xml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the dump (run with -update if the change is intended)", file)
	}
}
