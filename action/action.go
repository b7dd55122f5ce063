// Package action defines droidgo's action space once: the tools the model may
// call, their parameters and types. The same definitions feed the prompt, the
// parser's argument coercion, validation and execution.
package action

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Type is the JSON-schema type of a parameter.
type Type string

// Parameter types used by the action space.
const (
	Integer Type = "integer"
	Number  Type = "number"
	String  Type = "string"
)

// Param is one argument of a tool.
type Param struct {
	Name        string
	Type        Type
	Description string
	Required    bool
	Enum        []string // allowed values of a string parameter, if limited
	Min, Max    *float64 // inclusive bounds of a numeric parameter, if any
	// Verbatim marks free text whose inner and surrounding spaces matter
	// (text to type); other string values are names and choices, which
	// the parser trims.
	Verbatim bool
	// Default, when not nil, is the value of the argument when a call
	// leaves it out: the schema still asks for it (Required), but a call
	// without it is taken, not refused (toolparse.Coerce fills it in and
	// says so; Validate accepts its absence). task_complete's summary is
	// information, not a precondition.
	Default any
}

// Tool is one action the model may call.
type Tool struct {
	Name        string
	Description string
	Params      []Param
}

// Call is a tool call with its arguments, as parsed from model output.
// Argument values are int64, float64 or string once coerced by the schema;
// before coercion they may be any JSON value.
type Call struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Tool names of the action space.
const (
	Tap          = "tap"
	LongPress    = "long_press"
	TypeText     = "type_text"
	Swipe        = "swipe"
	PressKey     = "press_key"
	OpenApp      = "open_app"
	Wait         = "wait"
	TaskComplete = "task_complete"
)

// Keys are the key names press_key accepts, mapped to Android key codes.
var Keys = map[string]int{
	"back":        4,
	"home":        3,
	"enter":       66,
	"recent_apps": 187,
	"delete":      67,
	"tab":         61,
	"search":      84,
	"menu":        82,
	"volume_up":   24,
	"volume_down": 25,
	"power":       26,
	"escape":      111,
	"space":       62,
	"dpad_up":     19,
	"dpad_down":   20,
	"dpad_left":   21,
	"dpad_right":  22,
}

// KeyNames returns the accepted key names, sorted.
func KeyNames() []string {
	names := make([]string, 0, len(Keys))
	for k := range Keys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// KeyAliases maps other names a model uses for a key (Android KEYCODE_
// names, common synonyms) to the name in Keys. The parser applies them and
// reports that it did.
var KeyAliases = map[string]string{
	"return":     "enter",
	"backspace":  "delete",
	"del":        "delete",
	"recents":    "recent_apps",
	"recent":     "recent_apps",
	"app_switch": "recent_apps",
	"overview":   "recent_apps",
	"esc":        "escape",
	"volumeup":   "volume_up",
	"volumedown": "volume_down",
	"up":         "dpad_up",
	"down":       "dpad_down",
	"left":       "dpad_left",
	"right":      "dpad_right",
}

// Directions are the swipe directions. A swipe "up" moves the finger up,
// which scrolls a list down to reveal what is below.
var Directions = []string{"up", "down", "left", "right"}

func f(v float64) *float64 { return &v }

// Tools is droidgo's action space, in the order the prompt lists it.
var Tools = []Tool{
	{Name: Tap, Description: "Tap the element with the given index on the current screen.",
		Params: []Param{{Name: "index", Type: Integer, Description: "index of the element in the element list", Required: true, Min: f(0)}}},
	{Name: LongPress, Description: "Long-press the element with the given index.",
		Params: []Param{{Name: "index", Type: Integer, Description: "index of the element in the element list", Required: true, Min: f(0)}}},
	{Name: TypeText, Description: "Type text into the focused field, or into the field with the given index (tapped first).",
		Params: []Param{
			{Name: "text", Type: String, Description: "the text to type", Required: true, Verbatim: true},
			{Name: "index", Type: Integer, Description: "index of an editable field to type into", Min: f(0)},
		}},
	{Name: Swipe, Description: "Swipe on the screen, or inside the scrollable element with the given index. Swipe up to see what is below.",
		Params: []Param{
			{Name: "direction", Type: String, Description: "direction the finger moves", Required: true, Enum: Directions},
			{Name: "index", Type: Integer, Description: "index of a scrollable element", Min: f(0)},
		}},
	{Name: PressKey, Description: "Press a key.",
		Params: []Param{{Name: "key", Type: String, Description: "the key", Required: true, Enum: KeyNames()}}},
	{Name: OpenApp, Description: "Open an app by its name or package.",
		Params: []Param{{Name: "name", Type: String, Description: "app label (e.g. Settings) or package (e.g. com.android.settings)", Required: true}}},
	{Name: Wait, Description: "Wait for the screen to change.",
		Params: []Param{{Name: "seconds", Type: Number, Description: "seconds to wait", Required: true, Min: f(0), Max: f(30)}}},
	{Name: TaskComplete, Description: "Declare the task finished, with a short summary of what was done.",
		Params: []Param{{Name: "summary", Type: String, Description: "what was achieved", Required: true, Default: ""}}},
}

// Lookup returns the tool named name in tools.
func Lookup(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Names returns the names of tools, in order.
func Names(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// Param returns the parameter named name.
func (t Tool) Param(name string) (Param, bool) {
	for _, p := range t.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// FunctionSchema returns the tool as an OpenAI-style function object
// ({"name","description","parameters"}), the shape chat templates serialise.
// Keys are ordered as the official template expects when marshalled with
// OrderedJSON.
func (t Tool) FunctionSchema() map[string]any {
	props := map[string]any{}
	var required []string
	for _, p := range t.Params {
		s := map[string]any{"type": string(p.Type), "description": p.Description}
		if len(p.Enum) > 0 {
			s["enum"] = p.Enum
		}
		if p.Min != nil {
			s["minimum"] = *p.Min
		}
		if p.Max != nil {
			s["maximum"] = *p.Max
		}
		props[p.Name] = s
		if p.Required {
			required = append(required, p.Name)
		}
	}
	params := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		params["required"] = required
	}
	return map[string]any{"name": t.Name, "description": t.Description, "parameters": params}
}

// Signature renders the tool compactly for a prompt, e.g.
// "swipe(direction: up|down|left|right, index?: integer)".
func (t Tool) Signature() string {
	var b strings.Builder
	b.WriteString(t.Name)
	b.WriteByte('(')
	for i, p := range t.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		if !p.Required {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		if len(p.Enum) > 0 {
			b.WriteString(strings.Join(p.Enum, "|"))
		} else {
			b.WriteString(string(p.Type))
		}
	}
	b.WriteByte(')')
	return b.String()
}

// String renders the call as NAME(k=v, ...) with keys in the order the
// action space declares them (unknown keys after, sorted), for logs, the
// timeline and `droidgo parse`.
func (c Call) String() string { return c.Format(Tools, strconv.Quote) }

// Format renders the call as NAME(k=v, ...) with keys in the order tools
// declares them (unknown keys after, sorted), strings written by quote and
// other values as %v prints them.
func (c Call) Format(tools []Tool, quote func(string) string) string {
	var b strings.Builder
	b.WriteString(c.Name)
	b.WriteByte('(')
	for i, k := range c.orderedKeys(tools) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		if s, ok := c.Arguments[k].(string); ok {
			b.WriteString(quote(s))
		} else {
			fmt.Fprintf(&b, "%v", c.Arguments[k])
		}
	}
	b.WriteByte(')')
	return b.String()
}

// OrderedKeys returns the call's argument names in the order the tool named
// by the call declares them in tools; names the tool does not declare come
// last, sorted.
func (c Call) OrderedKeys(tools []Tool) []string { return c.orderedKeys(tools) }

func (c Call) orderedKeys(tools []Tool) []string {
	keys := make([]string, 0, len(c.Arguments))
	seen := map[string]bool{}
	if t, ok := Lookup(tools, c.Name); ok {
		for _, p := range t.Params {
			if _, ok := c.Arguments[p.Name]; ok {
				keys = append(keys, p.Name)
				seen[p.Name] = true
			}
		}
	}
	var rest []string
	for k := range c.Arguments {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}
