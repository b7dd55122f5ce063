package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// doTools are the tools `droidgo do` carries out: the model's, without
// wait and task_complete, which do nothing on the phone.
var doTools = slices.DeleteFunc(slices.Clone(action.Tools), func(t action.Tool) bool {
	return t.Name == action.Wait || t.Name == action.TaskComplete
})

// doAliases are the verbs `droidgo do` took before it took the tool names.
var doAliases = map[string]string{
	"long-press": action.LongPress,
	"type":       action.TypeText,
	"key":        action.PressKey,
	"open":       action.OpenApp,
}

func newDoCmd(d *deps) *cobra.Command {
	var serial string
	var long strings.Builder
	long.WriteString("Run one action on the ADB device, to check a setup by hand. The actions are\nthe model's tools, and their arguments are checked as the model's are; the\narguments fill the tool's parameters in order. Element indexes are the ones\n`droidgo screen` prints; each action on an element takes a fresh dump and\nuses the point the agent would.\n\nActions:\n")
	for _, t := range doTools {
		fmt.Fprintf(&long, "  %-26s %s\n", doUsage(t), t.Description)
	}
	fmt.Fprintf(&long, "\nKeys: %s.\nThe old verbs %s still work.\n", strings.Join(action.KeyNames(), ", "), aliasList())
	c := &cobra.Command{
		Use:   "do [--device SERIAL] TOOL ARG...",
		Short: "Run one action (tap, long_press, type_text, swipe, press_key, open_app) on the phone",
		Long:  long.String(),
		Example: `  droidgo do tap 3
  droidgo do --device 127.0.0.1:40123 type_text "hello world"
  droidgo do type_text "hello" 5
  droidgo do swipe up
  droidgo do press_key back
  droidgo do open_app Settings`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flags stop at the action (so text may start with "-"), but
			// "do type_text --help" asks for help, not to type "--help";
			// to type that, "do type_text -- --help".
			if len(args) == 2 && (args[1] == "--help" || args[1] == "-h") {
				return cmd.Help()
			}
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1:1], args[2:]...)
			}
			call, notes, err := doCall(args)
			if err != nil {
				return usageErr(err)
			}
			for _, n := range notes {
				fmt.Fprintf(termsafe.NewWriter(d.stderr), "droidgo: note: %s\n", n)
			}
			dev, name, err := d.openDevice(d.ctx, "", serial)
			if err != nil {
				return err
			}
			defer closeDevice(dev)
			msg, err := runDo(d.ctx, dev, call)
			if err != nil {
				return err
			}
			fmt.Fprintf(termsafe.NewWriter(d.stdout), "%s: %s\n", name, msg)
			return nil
		},
	}
	c.Flags().StringVarP(&serial, "device", "s", "", "the device `SERIAL` (default: ANDROID_SERIAL, or the only attached device)")
	c.Flags().SetInterspersed(false) // text to type may start with "-"
	return c
}

// doUsage is how t is written after `droidgo do`: "swipe DIRECTION [INDEX]".
func doUsage(t action.Tool) string {
	parts := []string{t.Name}
	for _, p := range t.Params {
		arg := strings.ToUpper(p.Name)
		if !p.Required {
			arg = "[" + arg + "]"
		}
		parts = append(parts, arg)
	}
	return strings.Join(parts, " ")
}

// aliasList names the old verbs and the tools they stand for.
func aliasList() string {
	var out []string
	for verb, tool := range doAliases {
		out = append(out, verb+" ("+tool+")")
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// doCall reads `TOOL ARG...` as a call: the arguments fill the tool's
// parameters in the order the action space declares them, and the call
// goes through the schema check the model's calls go through
// (toolparse.Coerce, then action.Validate) before any device is touched.
// notes are the repairs Coerce made (a key written KEYCODE_BACK).
func doCall(args []string) (call action.Call, notes []string, err error) {
	name := args[0]
	if tool, ok := doAliases[name]; ok {
		name = tool
	}
	// Coerce resolves a name in another case or spelling (Tap, longPress).
	probe, _, _ := toolparse.Coerce(action.Call{Name: name}, doTools)
	t, ok := action.Lookup(doTools, probe.Name)
	if !ok {
		return action.Call{}, nil, fmt.Errorf("unknown action %q: want one of %s (or the old verbs %s)", args[0], strings.Join(action.Names(doTools), ", "), aliasList())
	}
	if len(args)-1 > len(t.Params) {
		return action.Call{}, nil, fmt.Errorf("usage: droidgo do %s (%s takes %s; quote text with spaces)", doUsage(t), t.Name, t.ParamList())
	}
	call = action.Call{Name: name, Arguments: map[string]any{}}
	for i, v := range args[1:] {
		call.Arguments[t.Params[i].Name] = argValue(t.Params[i], v)
	}
	call, notes, err = toolparse.Coerce(call, doTools)
	if err == nil {
		err = action.Validate(call, doTools)
	}
	if err != nil {
		return action.Call{}, nil, fmt.Errorf("%w (usage: droidgo do %s)", err, doUsage(t))
	}
	if call.Name == action.TypeText && call.Arguments["text"] == "" {
		return action.Call{}, nil, errors.New("nothing to type: give the text, e.g. droidgo do type_text \"hello\"")
	}
	return call, notes, nil
}

// argValue is a command-line word as the value of p: a numeric parameter
// gets a number written as JSON writes it as a number, as a model's JSON
// call would carry it, so Coerce reads it without a repair; anything else
// stays a string for Coerce to read or refuse.
func argValue(p action.Param, s string) any {
	if p.Type != action.String && s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s)) {
		return json.Number(s)
	}
	return s
}

// runDo carries out one checked call with the agent's executor
// (loop.Execute: the same tap points and strokes) and describes what it
// did. A call on an element reads the screen first, and its index is
// checked as the agent's is (loop.CheckIndex).
func runDo(ctx context.Context, dev device.Device, call action.Call) (string, error) {
	var scr *uixml.Screen
	if _, ok := call.Arguments["index"]; ok {
		xml, err := dev.Dump(ctx)
		if err != nil {
			return "", err
		}
		if scr, err = uixml.Parse(xml); err != nil {
			return "", fmt.Errorf("read the screen: %w", err)
		}
	}
	done, err := loop.Execute(ctx, dev, scr, call, nil)
	if err != nil {
		return "", err
	}
	return doneText(call, done), nil
}

// doneText says what runDo did, for people: `tap element 2 "Settings" at
// (247,356)`.
func doneText(call action.Call, d loop.Done) string {
	str := func(k string) string { s, _ := call.Arguments[k].(string); return s }
	el := ""
	if t := d.Target; t.Index >= 0 {
		el = fmt.Sprintf("element %d %q", t.Index, t.Element.Label)
	}
	switch call.Name {
	case action.Tap:
		return fmt.Sprintf("tap %s at (%d,%d)", el, d.Tap.X, d.Tap.Y)
	case action.LongPress:
		return fmt.Sprintf("long press %s at (%d,%d)", el, d.Tap.X, d.Tap.Y)
	case action.TypeText:
		if el != "" {
			return fmt.Sprintf("tapped %s at (%d,%d) and typed %q", el, d.Tap.X, d.Tap.Y, str("text"))
		}
		return fmt.Sprintf("typed %q", str("text"))
	case action.Swipe:
		if el == "" {
			el = "the screen"
		}
		return fmt.Sprintf("swiped %s across %s, (%d,%d) to (%d,%d)", str("direction"), el, d.From.X, d.From.Y, d.To.X, d.To.Y)
	case action.PressKey:
		return "pressed " + str("key")
	case action.OpenApp:
		return "opened " + str("name")
	}
	return d.Detail
}
