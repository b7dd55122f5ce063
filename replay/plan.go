// Package replay carries out a recorded run again on a live phone, with
// no model: before each recorded action it reads the screen, checks that it
// is recognisably the recorded one (uixml.Signature's similarity), finds
// the recorded element by its identity (uixml.Screen.Match), and acts on it
// through the agent's own executor. Where the phone disagrees it stops with
// a report, or hands the task to the agent and resumes when a recorded
// screen comes back. The steps come from a recording (FromRecording) or a
// macro; the policy of when to stop or hand over is this package's.
package replay

import (
	"errors"
	"fmt"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/recording"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// Plan is what a replay carries out: the recorded task, its steps, and how
// the recorded run ended.
type Plan struct {
	Task  string
	Steps []Step
	// End is how the recorded run ended (nil when the recording stops
	// before the run did).
	End *loop.Result
}

// Step is one recorded action to carry out again.
type Step struct {
	// Recorded is the step's number in the recorded run (0 for a macro's
	// steps, which are numbered by their place).
	Recorded int
	// Call is the call as it was carried out. Its index argument names an
	// element of the recorded screen; the replay replaces it with the
	// live element that matches Target.
	Call action.Call
	// Target is the element the call acted on, nil for a call without one.
	Target *uixml.Identity
	// Focus is the text field that had the focus, for a type_text without
	// an index (the text goes to the focused field).
	Focus *uixml.Identity
	// Screen is the screen the call was decided on, by its signature; the
	// zero Signature when it is not known.
	Screen uixml.Signature
}

// Number is the step's recorded number, or its place (1-based) in plan
// when it has none.
func (p *Plan) Number(i int) int {
	if p.Steps[i].Recorded > 0 {
		return p.Steps[i].Recorded
	}
	return i + 1
}

// Succeeded reports whether the recorded run ended with a success.
func (p *Plan) Succeeded() bool { return p.End != nil && p.End.Success }

// ErrNothingToReplay is returned by FromRecording for a recording in which
// no action was carried out.
var ErrNothingToReplay = errors.New("the recording has no action that was carried out")

// FromRecording turns a recording into a plan: every action the recorded
// run carried out (loop.OutcomeDone: not the ones refused, skipped or
// failed), with the
// element it acted on and the screen it was decided on, and the final
// task_complete. The identity of an element comes from the action event
// when the recording has it, else from the recorded screen's XML, else from
// what the event's element list says (label and bounds): an old recording
// replays on what it has.
func FromRecording(rec *recording.Recording) (*Plan, error) {
	p := &Plan{Task: rec.Header.Task, End: rec.Result()}
	if t := rec.Started().Task; t != "" {
		p.Task = t
	}
	var (
		info   *loop.ScreenInfo // the current step's screen as recorded
		parsed *uixml.Screen    // the same, parsed from its XML (nil without)
	)
	for _, ev := range rec.Events {
		switch ev.Type {
		case loop.EvStepStarted:
			info, parsed = ev.Screen, nil
			if info != nil && info.XML != "" {
				// A dump cut short still names its elements.
				if s, err := uixml.Parse([]byte(info.XML)); s != nil {
					parsed = s
				} else {
					return nil, fmt.Errorf("recorded step %d: the screen's XML: %w", ev.Step, err)
				}
			}
		case loop.EvAction:
			if ev.Call == nil || ev.Outcome != loop.OutcomeDone {
				continue // refused, skipped, failed or not run: the phone did nothing
			}
			st, err := step(ev, info, parsed)
			if err != nil {
				return nil, fmt.Errorf("recorded step %d: %w", ev.Step, err)
			}
			p.Steps = append(p.Steps, st)
		}
	}
	if len(p.Steps) == 0 {
		return nil, ErrNothingToReplay
	}
	return p, nil
}

// step makes the plan's step of a carried-out action event.
func step(ev loop.Event, info *loop.ScreenInfo, parsed *uixml.Screen) (Step, error) {
	call, _, err := toolparse.Coerce(*ev.Call, nil)
	if err == nil {
		err = action.Validate(call, action.Tools)
	}
	if err != nil {
		return Step{}, fmt.Errorf("the call %s: %w", ev.Call.String(), err)
	}
	st := Step{Recorded: ev.Step, Call: call}
	if parsed != nil {
		st.Screen = parsed.Signature()
	} else if info != nil {
		st.Screen = infoSignature(info)
	}
	idx, hasIndex := call.Arguments["index"].(int64)
	switch {
	case hasIndex && ev.Target != nil:
		// A recording made since targets were recorded says it.
		id := *ev.Target
		st.Target = &id
	case hasIndex:
		id, err := targetIdentity(int(idx), info, parsed)
		if err != nil {
			return Step{}, err
		}
		st.Target = &id
	case call.Name == action.TypeText && parsed != nil:
		// The text went to the focused field: the replay checks the
		// same field has the focus.
		for _, e := range parsed.Elements {
			if n := parsed.Nodes[e.Node]; e.Editable && n.Focused {
				id, _ := parsed.Identity(e.Index)
				st.Focus = &id
				break
			}
		}
	}
	return st, nil
}

// targetIdentity is the identity of element idx of the recorded screen.
// The XML is parsed again by this droidgo, whose element list may differ
// from the recording droidgo's: the element is the one the recorded list
// names (by label and bounds) where the two lists disagree.
func targetIdentity(idx int, info *loop.ScreenInfo, parsed *uixml.Screen) (uixml.Identity, error) {
	var recorded *loop.ElementInfo
	if info != nil {
		for k := range info.Elements {
			if info.Elements[k].Index == idx {
				recorded = &info.Elements[k]
				break
			}
		}
	}
	if parsed != nil {
		if recorded == nil {
			if id, ok := parsed.Identity(idx); ok {
				return id, nil
			}
		} else {
			for _, e := range parsed.Elements {
				n := parsed.Nodes[e.Node]
				if e.Label == recorded.Label && [4]int{n.Bounds.X1, n.Bounds.Y1, n.Bounds.X2, n.Bounds.Y2} == recorded.Bounds {
					id, _ := parsed.Identity(e.Index)
					return id, nil
				}
			}
		}
	}
	if recorded != nil {
		return uixml.Identity{Label: recorded.Label, Bounds: recorded.Bounds, Screen: [2]int{info.Width, info.Height},
			Checkable: recorded.State != "", Checked: recorded.State == "on" || recorded.State == "checked"}, nil
	}
	return uixml.Identity{}, fmt.Errorf("element %d is not on the recorded screen", idx)
}

// infoSignature is the signature of a recorded screen without its XML,
// from the element list the recording shows.
func infoSignature(info *loop.ScreenInfo) uixml.Signature {
	sig := uixml.Signature{App: info.App}
	for _, e := range info.Elements {
		if e.Label != "" && e.Kind != "field" {
			sig.Labels = append(sig.Labels, e.Label)
		}
	}
	return sig
}
