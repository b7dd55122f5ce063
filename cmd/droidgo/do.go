package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/uixml"
)

func init() { register(newDoCmd) }

// doActions are the verbs of `droidgo do`, with their argument names.
var doActions = []struct{ verb, arg, help string }{
	{"tap", "INDEX", "tap the centre of element INDEX of the current screen"},
	{"long-press", "INDEX", "long-press the centre of element INDEX"},
	{"type", "TEXT", "type TEXT into the focused field (one argument: quote it)"},
	{"swipe", "DIR [INDEX]", "swipe up|down|left|right across the screen, or inside element INDEX"},
	{"key", "NAME", "press a key: " + strings.Join(action.KeyNames(), ", ")},
	{"open", "APP", "open an app by label (Settings) or package (com.android.settings)"},
}

func newDoCmd(g *globals) *cobra.Command {
	var serial string
	var long strings.Builder
	long.WriteString("Run one action on the ADB device, to check a setup by hand. Element indexes\nare the ones `droidgo screen` prints; each tap or long-press takes a fresh dump.\n\nActions:\n")
	for _, a := range doActions {
		fmt.Fprintf(&long, "  %-22s %s\n", a.verb+" "+a.arg, a.help)
	}
	c := &cobra.Command{
		Use:   "do [--device SERIAL] ACTION ARG...",
		Short: "Run one action (tap, long-press, type, swipe, key, open) on the phone",
		Long:  long.String(),
		Example: `  droidgo do tap 3
  droidgo do --device 127.0.0.1:40123 type "hello world"
  droidgo do swipe up
  droidgo do key back
  droidgo do open Settings`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if openADB == nil {
				return errors.New("this build has no ADB support")
			}
			// Flags stop at the action (so text may start with "-"), but
			// "do type --help" asks for help, not to type "--help"; to
			// type that, "do type -- --help".
			if len(args) == 2 && (args[1] == "--help" || args[1] == "-h") {
				return cmd.Help()
			}
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1:1], args[2:]...)
			}
			if err := checkDoArgs(args); err != nil {
				return usageErr(err)
			}
			dev, name, err := openADB(g.ctx, serial)
			if err != nil {
				return err
			}
			msg, err := runDo(g.ctx, dev, args)
			if err != nil {
				return err
			}
			fmt.Fprintf(termsafe.NewWriter(g.stdout), "%s: %s\n", name, msg)
			return nil
		},
	}
	c.Flags().StringVarP(&serial, "device", "s", "", "the device `SERIAL` (default: ANDROID_SERIAL, or the only attached device)")
	c.Flags().SetInterspersed(false) // text to type may start with "-"
	return c
}

// checkDoArgs validates the action and its argument count before any device
// is touched.
func checkDoArgs(args []string) error {
	verb := args[0]
	want := map[string][2]int{"tap": {1, 1}, "long-press": {1, 1}, "type": {1, 1}, "swipe": {1, 2}, "key": {1, 1}, "open": {1, 1}}
	n, ok := want[verb]
	if !ok {
		var verbs []string
		for _, a := range doActions {
			verbs = append(verbs, a.verb)
		}
		return fmt.Errorf("unknown action %q: want one of %s", verb, strings.Join(verbs, ", "))
	}
	if got := len(args) - 1; got < n[0] || got > n[1] {
		for _, a := range doActions {
			if a.verb == verb {
				return fmt.Errorf("usage: droidgo do %s %s", verb, a.arg)
			}
		}
	}
	switch verb {
	case "tap", "long-press":
		if _, err := parseIndex(args[1]); err != nil {
			return err
		}
	case "swipe":
		if !slices.Contains(action.Directions, args[1]) {
			return fmt.Errorf("swipe direction %q: want one of %s", args[1], strings.Join(action.Directions, ", "))
		}
		if len(args) == 3 {
			if _, err := parseIndex(args[2]); err != nil {
				return err
			}
		}
	case "type":
		if args[1] == "" {
			return errors.New("nothing to type: give the text, e.g. droidgo do type \"hello\"")
		}
	case "key":
		if _, ok := action.Keys[args[1]]; !ok {
			return fmt.Errorf("unknown key %q: want one of %s", args[1], strings.Join(action.KeyNames(), ", "))
		}
	}
	return nil
}

func parseIndex(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("element index %q is not a number >= 0", s)
	}
	return n, nil
}

// element dumps the screen and returns element i with its node.
func element(ctx context.Context, dev device.Device, i int) (*uixml.Screen, uixml.Element, uixml.Node, error) {
	xml, err := dev.Dump(ctx)
	if err != nil {
		return nil, uixml.Element{}, uixml.Node{}, err
	}
	scr, err := uixml.Parse(xml)
	if err != nil {
		return nil, uixml.Element{}, uixml.Node{}, fmt.Errorf("read the screen: %w", err)
	}
	if i >= len(scr.Elements) {
		return nil, uixml.Element{}, uixml.Node{}, fmt.Errorf("the screen has %d elements (0-%d); there is no element %d", len(scr.Elements), len(scr.Elements)-1, i)
	}
	el := scr.Elements[i]
	return scr, el, scr.Nodes[el.Node], nil
}

// runDo carries out one checked action and describes what it did.
func runDo(ctx context.Context, dev device.Device, args []string) (string, error) {
	switch verb := args[0]; verb {
	case "tap", "long-press":
		i, _ := parseIndex(args[1])
		_, el, node, err := element(ctx, dev, i)
		if err != nil {
			return "", err
		}
		x, y := node.Bounds.Center()
		if verb == "tap" {
			err = dev.Tap(ctx, x, y)
		} else {
			err = dev.LongPress(ctx, x, y)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s element %d %q at (%d,%d)", strings.ReplaceAll(verb, "-", " "), i, el.Label, x, y), nil
	case "type":
		if err := dev.Type(ctx, args[1]); err != nil {
			return "", err
		}
		return fmt.Sprintf("typed %q", args[1]), nil
	case "swipe":
		var b uixml.Rect
		where := "the screen"
		if len(args) == 3 {
			i, _ := parseIndex(args[2])
			_, el, node, err := element(ctx, dev, i)
			if err != nil {
				return "", err
			}
			b, where = node.Bounds, fmt.Sprintf("element %d %q", i, el.Label)
		} else {
			w, h, err := dev.Size(ctx)
			if err != nil {
				return "", err
			}
			b = uixml.Rect{X2: w, Y2: h}
		}
		x1, y1, x2, y2 := swipeLine(b, args[1])
		if err := dev.Swipe(ctx, x1, y1, x2, y2, 300*time.Millisecond); err != nil {
			return "", err
		}
		return fmt.Sprintf("swiped %s across %s, (%d,%d) to (%d,%d)", args[1], where, x1, y1, x2, y2), nil
	case "key":
		if err := dev.Key(ctx, args[1]); err != nil {
			return "", err
		}
		return "pressed " + args[1], nil
	case "open":
		if err := dev.OpenApp(ctx, args[1]); err != nil {
			return "", err
		}
		return "opened " + args[1], nil
	}
	return "", fmt.Errorf("unknown action %q", args[0])
}

// swipeLine is a stroke over 60% of b through its centre, in the direction
// the finger moves, the same geometry the agent loop uses.
func swipeLine(b uixml.Rect, dir string) (x1, y1, x2, y2 int) {
	cx, cy := b.Center()
	dx, dy := (b.X2-b.X1)*3/10, (b.Y2-b.Y1)*3/10
	switch dir {
	case "up":
		return cx, cy + dy, cx, cy - dy
	case "down":
		return cx, cy - dy, cx, cy + dy
	case "left":
		return cx + dx, cy, cx - dx, cy
	default:
		return cx - dx, cy, cx + dx, cy
	}
}
