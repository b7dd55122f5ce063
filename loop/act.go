package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/internal/word"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// AppLister is implemented by devices that can list their launchable apps;
// the loop then checks open_app's name before running it.
type AppLister interface {
	// Apps returns the labels and packages of the launchable apps.
	Apps(ctx context.Context) ([]string, error)
}

// strArg returns a string argument of a checked call ("" when absent).
func strArg(c action.Call, name string) string {
	s, _ := c.Arguments[name].(string)
	return s
}

// validate checks call before anything runs. The schema (tool, required
// arguments, types, allowed values, bounds) is action.Validate's, for a
// call coerced by toolparse.Coerce as every call reaching the loop is;
// the loop adds only what needs the screen or the device: the element
// exists, the app is installed, and there is something to type or open.
func (r *runner) validate(ctx context.Context, call action.Call) (Target, error) {
	if err := action.Validate(call, r.cfg.Tools); err != nil {
		return NoTarget, err
	}
	t, err := TargetOf(r.screen, call)
	if err != nil {
		return t, err
	}
	switch call.Name {
	case action.TypeText:
		if strArg(call, "text") == "" {
			return t, errors.New("text is empty")
		}
	case action.OpenApp:
		name := strings.TrimSpace(strArg(call, "name"))
		if name == "" {
			return t, errors.New("app name is empty")
		}
		if l, ok := r.cfg.Device.(AppLister); ok {
			if apps, err := l.Apps(ctx); err == nil && !containsFold(apps, name) {
				return t, fmt.Errorf("no app %q on this phone", name)
			}
		}
	}
	return t, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// sensitive says why call needs approval under the policy, or "".
func (r *runner) sensitive(call action.Call, t Target) string {
	return Sensitive(call, r.screen, t, r.cfg.Sensitive)
}

// Sensitive says why call, acting on t of screen scr (nil when it could
// not be read), needs the user's approval under the sensitive-action
// policy, or "": a tap or long press on an element whose label holds one
// of words (whole words, ignoring case), or typing into a password field.
// The loop and a replay on a phone ask here.
func Sensitive(call action.Call, scr *uixml.Screen, t Target, words []string) string {
	switch call.Name {
	case action.TypeText:
		if t.Index >= 0 && t.Node.Password {
			return fmt.Sprintf("typing into the password field %q", t.Element.Label)
		}
		if t.Index < 0 && scr != nil {
			for _, n := range scr.Nodes {
				if n.Focused && n.Password {
					return "typing into a password field"
				}
			}
		}
	case action.Tap, action.LongPress:
		if t.Index >= 0 {
			if w := matchWord(words, t.Element.Label); w != "" {
				return fmt.Sprintf("label %q matches the sensitive word %q", t.Element.Label, w)
			}
		}
	}
	return ""
}

// matchWord returns the first word of words found in label as a whole
// word, ignoring case.
func matchWord(words []string, label string) string {
	for _, w := range words {
		if word.In(label, w) {
			return w
		}
	}
	return ""
}

// approve applies step mode and the sensitive-action policy. A nil call
// with a nil error means the call was not run and the step is over.
func (r *runner) approve(ctx context.Context, call action.Call, t Target) (*action.Call, Target, error) {
	reason := r.sensitive(call, t)
	var why ApprovalReason
	switch {
	case reason != "":
		why = ApprovalSensitive
	case r.cfg.StepMode:
		why, reason = ApprovalStepMode, "step mode"
	}
	if why == "" && !(r.cfg.ConsultAlways && r.cfg.Approver != nil) {
		return &call, t, nil
	}
	if why == ApprovalSensitive && r.cfg.Approver == nil {
		r.emit(Event{Type: EvAction, Call: &call, Element: t.elementPtr(), Outcome: OutcomeRefused, Detail: "not run", Error: "needs approval: " + reason})
		r.record(stepOutcome{call: &call, target: t, result: "refused: needs approval",
			note: fmt.Sprintf("was not run: it needs the user's approval (%s) and nobody can give it. Do something else or call task_complete.", reason)})
		return nil, t, r.failedStep("")
	}
	if r.cfg.Approver == nil { // step mode without anyone to ask
		return &call, t, nil
	}
	if why != "" {
		r.emit(Event{Type: EvApproval, Call: &call, Element: t.elementPtr(), Approval: why, Text: reason})
	}
	d, err := r.cfg.Approver(ctx, ApprovalRequest{Device: r.cfg.DeviceName, Step: r.step, Call: call, Label: t.Element.Label, Why: why, Reason: reason})
	if err != nil {
		if ctx.Err() != nil {
			return nil, t, ctx.Err()
		}
		return nil, t, fmt.Errorf("approval: %w", err)
	}
	switch d.Verdict {
	case Approve:
		return &call, t, nil
	case Skip:
		r.emit(Event{Type: EvAction, Call: &call, Element: t.elementPtr(), Outcome: OutcomeSkipped, Detail: "skipped by the user"})
		r.record(stepOutcome{call: &call, target: t, result: "skipped by the user", note: "was skipped by the user. Do something else."})
		return nil, t, nil
	case Edit:
		// An Approver may hand back any call: it is coerced like the
		// model's before the same checks.
		edited, _, err := toolparse.Coerce(d.Call, r.cfg.Tools)
		if err != nil {
			edited = d.Call
		}
		if edited.Arguments == nil {
			edited.Arguments = map[string]any{}
		}
		nt := NoTarget
		if err == nil {
			nt, err = r.validate(ctx, edited)
		}
		if err != nil {
			r.emit(Event{Type: EvAction, Call: &edited, Element: nt.elementPtr(), Outcome: OutcomeNotRun, Detail: "not run", Error: err.Error()})
			r.record(stepOutcome{call: &edited, target: nt, result: fmt.Sprintf("the user's edit is invalid: %v", err),
				note: fmt.Sprintf("(the user's edit of your %s%s) was not run: %v.", call.String(), t.quoted(), err), error: true})
			return nil, nt, nil
		}
		r.warn(fmt.Sprintf("the user changed %s to %s", call.String(), edited.String()))
		return &edited, nt, nil
	case Abort:
		return nil, t, stop("stopped by the user")
	}
	return nil, t, fmt.Errorf("approval: unknown verdict %d", d.Verdict)
}
