package loop

import (
	"fmt"
	"sort"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/uixml"
)

// Kinds of lack of progress. Each gets one warning; the second occurrence
// of the same kind stops the run.
const (
	stuckRepeat = "repeat" // the same call on the same screen again
	stuckToggle = "toggle" // a switch the agent set was set back
	stuckCycle  = "cycle"  // A -> B -> A
)

// progress watches the run for work going nowhere.
type progress struct {
	fps      []string       // fingerprints of the screens the actions went through
	done     map[string]int // screen fingerprint + call -> step it was done
	firstSet map[string]bool
	strikes  map[string]int
	// lastToggles are the switches the last action flipped.
	lastToggles []toggle
	dumpFails   int
}

type toggle struct {
	label string
	on    bool
}

func newProgress() *progress {
	return &progress{done: map[string]int{}, firstSet: map[string]bool{}, strikes: map[string]int{}}
}

func (p *progress) dumpFailure() int {
	p.dumpFails++
	p.fps = nil // the chain of screens is broken
	return p.dumpFails
}

func (p *progress) dumpOK() { p.dumpFails = 0 }

// check looks at one executed action that led from before to after. It
// returns a warning for the model, and a reason when the run must stop.
func (p *progress) check(step int, before, after *uixml.Screen, call action.Call, t Target) (warning, stopReason string) {
	p.lastToggles = nil
	if before == nil || after == nil {
		p.fps = nil
		return "", ""
	}
	bfp, afp := before.Fingerprint(), after.Fingerprint()
	if len(p.fps) == 0 || p.fps[len(p.fps)-1] != bfp {
		p.fps = []string{bfp}
	}
	p.fps = append(p.fps, afp)

	type finding struct{ kind, warn, stop string }
	var found []finding

	// Switches first: flipping a switch back also looks like a cycle and a
	// repeat, but it is the undo that matters, and flipping it back to
	// what the agent first chose is a correction, not a loop.
	p.lastToggles = toggled(before, after)
	for _, tg := range p.lastToggles {
		first, seen := p.firstSet[tg.label]
		if !seen {
			p.firstSet[tg.label] = tg.on
			continue
		}
		if tg.on != first {
			found = append(found, finding{stuckToggle,
				fmt.Sprintf("you turned %q %s, undoing your own change (you had turned it %s). Do not undo it; if the task was done, restore it and call task_complete.", tg.label, onOff(tg.on), onOff(first)),
				fmt.Sprintf("stopped: the agent undid its own change again (%q turned %s)", tg.label, onOff(tg.on))})
		}
	}
	if len(p.lastToggles) == 0 {
		n := len(p.fps)
		if n >= 3 && p.fps[n-1] == p.fps[n-3] && p.fps[n-1] != p.fps[n-2] {
			found = append(found, finding{stuckCycle,
				"this is the screen you were on two steps ago: you are going back and forth between two screens. Try something different, or call task_complete if the task is done.",
				"stopped: looping between two screens"})
		}
		key := bfp + "\x00" + call.String()
		if prev, ok := p.done[key]; ok {
			found = append(found, finding{stuckRepeat,
				fmt.Sprintf("you already did %s on this same screen at step %d. Repeating it will not help; try something different.", call.String(), prev),
				fmt.Sprintf("stopped: %s repeated on the same screen", call.String())})
		}
	}
	p.done[bfp+"\x00"+call.String()] = step

	for _, f := range found {
		p.strikes[f.kind]++
	}
	for _, f := range found {
		if p.strikes[f.kind] >= 2 {
			return f.warn, f.stop
		}
	}
	if len(found) > 0 {
		return found[0].warn, ""
	}
	return "", ""
}

// toggled lists the switches (checkable nodes) whose state differs between
// two screens, named by the element that holds them.
func toggled(before, after *uixml.Screen) []toggle {
	b, a := switchStates(before), switchStates(after)
	var out []toggle
	for label, on := range a {
		if was, ok := b[label]; ok && was != on {
			out = append(out, toggle{label, on})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].label < out[j].label })
	return out
}

// switchStates maps the label of each switch or checkbox element to its
// state. uixml merges a switch into its row and strips state words from
// labels, so a label names the same setting before and after a flip.
func switchStates(s *uixml.Screen) map[string]bool {
	m := map[string]bool{}
	dup := map[string]bool{}
	for _, e := range s.Elements {
		if !e.Checkable || e.Label == "" {
			continue
		}
		label := e.Label
		if e.Row >= 0 {
			// A separately tappable switch is named after its row.
			if row, _, ok := s.ElementByIndex(e.Row); ok && row.Label != "" {
				label = row.Label
			}
		}
		if _, seen := m[label]; seen {
			dup[label] = true
		}
		m[label] = e.Checked
	}
	// Two switches under one label cannot be told apart; leave them out
	// rather than guess.
	for label := range dup {
		delete(m, label)
	}
	return m
}
