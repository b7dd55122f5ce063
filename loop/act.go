package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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

// target is the element a call acts on, if any.
type target struct {
	index int // -1 when the call has no element
	el    uixml.Element
	node  uixml.Node
}

var noTarget = target{index: -1}

func (t target) elementPtr() *int {
	if t.index < 0 {
		return nil
	}
	i := t.index
	return &i
}

// quoted is the element's label for history lines, e.g. ` "Wi-Fi"`.
func (t target) quoted() string {
	if t.index < 0 || t.el.Label == "" {
		return ""
	}
	return fmt.Sprintf(" %q", t.el.Label)
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
func (r *runner) validate(ctx context.Context, call action.Call) (target, error) {
	if err := action.Validate(call, r.cfg.Tools); err != nil {
		return noTarget, err
	}
	t, err := r.elementArg(call)
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

// elementArg resolves the call's index argument against the screen.
func (r *runner) elementArg(call action.Call) (target, error) {
	i, ok := call.Arguments["index"].(int64)
	if !ok {
		return noTarget, nil
	}
	idx := int(i)
	if r.screen == nil {
		return noTarget, fmt.Errorf("index %d cannot be used: the screen could not be read", idx)
	}
	el, node, found := r.screen.ElementByIndex(idx)
	if !found {
		if v := validIndices(r.screen); v != "" {
			return noTarget, fmt.Errorf("index %d is not on the screen; valid indices are %s", idx, v)
		}
		return noTarget, fmt.Errorf("index %d is not on the screen, which has no elements", idx)
	}
	return target{index: idx, el: el, node: node}, nil
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
func (r *runner) sensitive(call action.Call, t target) string {
	switch call.Name {
	case action.TypeText:
		if t.index >= 0 && t.node.Password {
			return fmt.Sprintf("typing into the password field %q", t.el.Label)
		}
		if t.index < 0 && r.screen != nil {
			for _, n := range r.screen.Nodes {
				if n.Focused && n.Password {
					return "typing into a password field"
				}
			}
		}
	case action.Tap, action.LongPress:
		if t.index >= 0 {
			if w := matchWord(r.cfg.Sensitive, t.el.Label); w != "" {
				return fmt.Sprintf("label %q matches the sensitive word %q", t.el.Label, w)
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
func (r *runner) approve(ctx context.Context, call action.Call, t target) (*action.Call, target, error) {
	reason := r.sensitive(call, t)
	must := reason != "" || r.cfg.StepMode
	if !must && !(r.cfg.ConsultAlways && r.cfg.Approver != nil) {
		return &call, t, nil
	}
	if reason != "" && r.cfg.Approver == nil {
		r.emit(Event{Type: EvAction, Call: &call, Element: t.elementPtr(), Detail: "not run", Error: "needs approval: " + reason})
		r.record(outcome{call: &call, target: t, result: "refused: needs approval",
			note: fmt.Sprintf("was not run: it needs the user's approval (%s) and nobody can give it. Do something else or call task_complete.", reason)})
		return nil, t, r.failedStep("")
	}
	if r.cfg.Approver == nil { // step mode without anyone to ask
		return &call, t, nil
	}
	text := reason
	if text == "" && r.cfg.StepMode {
		text = "step mode"
	}
	if must {
		r.emit(Event{Type: EvApproval, Call: &call, Element: t.elementPtr(), Text: text})
	}
	d, err := r.cfg.Approver(ctx, ApprovalRequest{Step: r.step, Call: call, Label: t.el.Label, Sensitive: reason != "", Reason: text})
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
		r.emit(Event{Type: EvAction, Call: &call, Element: t.elementPtr(), Detail: "skipped by the user"})
		r.record(outcome{call: &call, target: t, result: "skipped by the user", note: "was skipped by the user. Do something else."})
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
		nt := noTarget
		if err == nil {
			nt, err = r.validate(ctx, edited)
		}
		if err != nil {
			r.emit(Event{Type: EvAction, Call: &edited, Element: nt.elementPtr(), Detail: "not run", Error: err.Error()})
			r.record(outcome{call: &edited, target: nt, result: fmt.Sprintf("the user's edit is invalid: %v", err),
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

// execute maps call onto device operations. The device layer quotes for
// the shell; values are passed literally.
func (r *runner) execute(ctx context.Context, call action.Call, t target) (detail string, err error) {
	dev := r.cfg.Device
	switch call.Name {
	case action.Tap:
		x, y := t.el.X, t.el.Y
		return fmt.Sprintf("tap %d %d", x, y), dev.Tap(ctx, x, y)
	case action.LongPress:
		x, y := t.el.X, t.el.Y
		return fmt.Sprintf("long press %d %d", x, y), dev.LongPress(ctx, x, y)
	case action.TypeText:
		text := strArg(call, "text")
		detail = fmt.Sprintf("type %q", text)
		if t.index >= 0 {
			x, y := t.el.X, t.el.Y
			if err := dev.Tap(ctx, x, y); err != nil {
				return fmt.Sprintf("tap %d %d", x, y), err
			}
			detail = fmt.Sprintf("tap %d %d, %s", x, y, detail)
		}
		return detail, dev.Type(ctx, text)
	case action.Swipe:
		x1, y1, x2, y2, err := r.swipeCoords(ctx, strArg(call, "direction"), t)
		if err != nil {
			return "swipe", err
		}
		return fmt.Sprintf("swipe %d %d %d %d", x1, y1, x2, y2), dev.Swipe(ctx, x1, y1, x2, y2, 300*time.Millisecond)
	case action.PressKey:
		key := strArg(call, "key")
		return "key " + key, dev.Key(ctx, key)
	case action.OpenApp:
		name := strings.TrimSpace(strArg(call, "name"))
		return "open " + name, dev.OpenApp(ctx, name)
	case action.Wait:
		s, _ := call.Arguments["seconds"].(float64)
		d := time.Duration(s * float64(time.Second))
		return fmt.Sprintf("wait %v", d), r.cfg.Sleep(ctx, d)
	}
	return "", fmt.Errorf("%s cannot be executed", call.Name)
}

// swipeCoords returns a swipe in direction across the element's bounds, or
// across the screen without an element (uixml.Rect.SwipeLine draws it).
func (r *runner) swipeCoords(ctx context.Context, direction string, t target) (x1, y1, x2, y2 int, err error) {
	var b uixml.Rect
	if t.index >= 0 {
		b = t.node.Bounds
	} else {
		w, h := 0, 0
		if r.screen != nil {
			w, h = r.screen.Width, r.screen.Height
		}
		if w <= 0 || h <= 0 {
			if w, h, err = r.cfg.Device.Size(ctx); err != nil {
				return 0, 0, 0, 0, fmt.Errorf("screen size: %w", err)
			}
		}
		b = uixml.Rect{X2: w, Y2: h}
	}
	x1, y1, x2, y2 = b.SwipeLine(direction)
	return x1, y1, x2, y2, nil
}
