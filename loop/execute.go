package loop

import (
	"context"
	"fmt"
	"image"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/uixml"
)

// SwipeDuration is how long a swipe's stroke takes: slow enough to scroll
// rather than fling.
const SwipeDuration = 300 * time.Millisecond

// IndexError is an element index a call names that is not on the screen.
// It is the one answer to "is this index on the screen?" (CheckIndex):
// the loop, `droidgo do` and the TUI's call editor all give it.
type IndexError struct {
	Index int
	// Elements is how many elements the screen has (their indices are 0
	// to Elements-1), or -1 when the screen could not be read.
	Elements int
}

func (e *IndexError) Error() string {
	switch {
	case e.Elements < 0:
		return fmt.Sprintf("index %d cannot be used: the screen could not be read", e.Index)
	case e.Elements == 0:
		return fmt.Sprintf("index %d is not on the screen, which has no elements", e.Index)
	case e.Elements == 1:
		return fmt.Sprintf("index %d is not on the screen; valid indices are 0", e.Index)
	}
	return fmt.Sprintf("index %d is not on the screen; valid indices are 0-%d", e.Index, e.Elements-1)
}

// CheckIndex reports whether index names an element of a screen with the
// given number of elements, numbered from 0 in order as uixml numbers
// them (elements < 0: the screen could not be read). The error is an
// *IndexError.
func CheckIndex(index, elements int) error {
	if elements < 0 || index < 0 || index >= elements {
		return &IndexError{Index: index, Elements: elements}
	}
	return nil
}

// elementCount is how many elements s has, -1 for no screen.
func elementCount(s *uixml.Screen) int {
	if s == nil {
		return -1
	}
	return len(s.Elements)
}

// Target is the element a call acts on.
type Target struct {
	Index   int // -1 when the call names no element
	Element uixml.Element
	Node    uixml.Node
}

// NoTarget is the target of a call that names no element.
var NoTarget = Target{Index: -1}

// TargetOf resolves the index argument of call on scr (nil: the screen
// could not be read): NoTarget for a call without one, else the element,
// or an *IndexError when it is not on the screen.
func TargetOf(scr *uixml.Screen, call action.Call) (Target, error) {
	i, ok := call.Arguments["index"].(int64)
	if !ok {
		return NoTarget, nil
	}
	idx := int(i)
	if err := CheckIndex(idx, elementCount(scr)); err != nil {
		return NoTarget, err
	}
	el, node, _ := scr.ElementByIndex(idx)
	return Target{Index: idx, Element: el, Node: node}, nil
}

func (t Target) elementPtr() *int {
	if t.Index < 0 {
		return nil
	}
	i := t.Index
	return &i
}

// quoted is the element's label for history lines, e.g. ` "Wi-Fi"`.
func (t Target) quoted() string {
	if t.Index < 0 || t.Element.Label == "" {
		return ""
	}
	return fmt.Sprintf(" %q", t.Element.Label)
}

// Done is what Execute did on the device.
type Done struct {
	// Detail says it in the words of EvAction's Detail: "tap 540 1210",
	// "tap 540 1210, type \"hi\"", "swipe 540 1920 540 480", "key back",
	// "open Settings", "wait 2s". It is set also when the call failed
	// (then it says what was tried).
	Detail string
	// Target is the element the call acted on.
	Target Target
	// Tap is where a tap or long press landed, or the tap into the field
	// before typing (zero when there was none).
	Tap image.Point
	// From and To are a swipe's stroke.
	From, To image.Point
}

// Execute carries out a checked call (action.Validate) on dev, on the
// screen scr it was decided on (nil when that could not be read), and
// says what it did. It is the one mapping of calls onto gestures: the
// loop, `droidgo do` and a replay on a phone all use it. An element is
// tapped at its tap point (uixml.Element's X, Y: uixml.Screen.TapPoint)
// and swiped along uixml.Rect.SwipeLine; a swipe without an element
// strokes the screen (dev.Size when scr is nil). The device layer quotes
// for the shell, so values are passed literally. sleep carries out wait
// (nil: the real clock).
func Execute(ctx context.Context, dev device.Device, scr *uixml.Screen, call action.Call, sleep func(context.Context, time.Duration) error) (Done, error) {
	t, err := TargetOf(scr, call)
	if err != nil {
		return Done{Target: t}, err
	}
	d := Done{Target: t}
	str := func(name string) string { s, _ := call.Arguments[name].(string); return s }
	tap := func(long bool) error {
		d.Tap = image.Pt(t.Element.X, t.Element.Y)
		verb, do := "tap", dev.Tap
		if long {
			verb, do = "long press", dev.LongPress
		}
		d.Detail = fmt.Sprintf("%s %d %d", verb, d.Tap.X, d.Tap.Y)
		return do(ctx, d.Tap.X, d.Tap.Y)
	}
	switch call.Name {
	case action.Tap:
		return d, tap(false)
	case action.LongPress:
		return d, tap(true)
	case action.TypeText:
		text := str("text")
		typed := fmt.Sprintf("type %q", text)
		if t.Index >= 0 {
			if err := tap(false); err != nil {
				return d, err
			}
			d.Detail += ", " + typed
		} else {
			d.Detail = typed
		}
		return d, dev.Type(ctx, text)
	case action.Swipe:
		d.Detail = "swipe"
		b := t.Node.Bounds
		if t.Index < 0 {
			w, h := 0, 0
			if scr != nil {
				w, h = scr.Width, scr.Height
			}
			if w <= 0 || h <= 0 {
				if w, h, err = dev.Size(ctx); err != nil {
					return d, fmt.Errorf("screen size: %w", err)
				}
			}
			b = uixml.Rect{X2: w, Y2: h}
		}
		x1, y1, x2, y2 := b.SwipeLine(str("direction"))
		d.From, d.To = image.Pt(x1, y1), image.Pt(x2, y2)
		d.Detail = fmt.Sprintf("swipe %d %d %d %d", x1, y1, x2, y2)
		return d, dev.Swipe(ctx, x1, y1, x2, y2, SwipeDuration)
	case action.PressKey:
		d.Detail = "key " + str("key")
		return d, dev.Key(ctx, str("key"))
	case action.OpenApp:
		name := strings.TrimSpace(str("name"))
		d.Detail = "open " + name
		return d, dev.OpenApp(ctx, name)
	case action.Wait:
		s, _ := call.Arguments["seconds"].(float64)
		w := time.Duration(s * float64(time.Second))
		d.Detail = fmt.Sprintf("wait %v", w)
		if sleep == nil {
			sleep = clock.Sleep
		}
		return d, sleep(ctx, w)
	}
	return d, fmt.Errorf("%s cannot be executed", call.Name)
}
