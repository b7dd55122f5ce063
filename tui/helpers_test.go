package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/tui/internal/demo"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// newTestUI returns a ui with a fixed clock and size and no queue
// reader, so Update can be driven by hand.
func newTestUI(t *testing.T, opts Options, w, h int) (*ui, *fakeClock) {
	t.Helper()
	c := &fakeClock{t: demo.Start}
	m := newUI(opts, newGate(opts.StepMode), c.now)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, c
}

// send folds events into the model as the queue would deliver them.
func send(m *ui, evs ...loop.Event) {
	items := make([]item, len(evs))
	for i, ev := range evs {
		items[i] = item{ev: ev}
	}
	m.Update(batchMsg{items: items})
}

// press sends a key by its name as bubbletea spells it ("tab", "ctrl+c", "y").
func press(m *ui, names ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, n := range names {
		_, cmd = m.Update(keyPress(n))
	}
	return cmd
}

func keyPress(name string) tea.KeyPressMsg {
	special := map[string]tea.Key{
		"tab":       {Code: tea.KeyTab},
		"shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"enter":     {Code: tea.KeyEnter},
		"esc":       {Code: tea.KeyEscape},
		"up":        {Code: tea.KeyUp},
		"down":      {Code: tea.KeyDown},
		"pgup":      {Code: tea.KeyPgUp},
		"pgdown":    {Code: tea.KeyPgDown},
		"home":      {Code: tea.KeyHome},
		"end":       {Code: tea.KeyEnd},
		"backspace": {Code: tea.KeyBackspace},
		"space":     {Code: tea.KeySpace, Text: " "},
		"ctrl+c":    {Code: 'c', Mod: tea.ModCtrl},
		"ctrl+u":    {Code: 'u', Mod: tea.ModCtrl},
	}
	if k, ok := special[name]; ok {
		return tea.KeyPressMsg(k)
	}
	r := []rune(name)
	if len(r) != 1 {
		panic("unknown key " + name)
	}
	return tea.KeyPressMsg(tea.Key{Code: r[0], Text: name})
}

// typeText types text into the model one key at a time.
func typeText(m *ui, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg(tea.Key{Code: r, Text: string(r)}))
	}
}

// frame renders the model as plain text, as a terminal without colour shows it.
func frame(m *ui) string { return ansi.Strip(m.render()) }

// demoUntil returns the demo events up to and including the n-th event of
// type typ (n counts from 1).
func demoUntil(typ loop.EventType, n int) []loop.Event {
	evs := demo.Events()
	for i, ev := range evs {
		if ev.Type == typ {
			n--
			if n == 0 {
				return evs[:i+1]
			}
		}
	}
	return evs
}

// isQuit reports whether cmd, run, quits the program.
func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
