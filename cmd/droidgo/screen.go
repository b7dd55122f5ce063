package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/uixml"
	"github.com/spf13/cobra"
)

// maxDumpSize bounds what `droidgo screen` reads: real dumps are tens of
// kilobytes, a huge one is a few megabytes.
const maxDumpSize = 64 << 20

// screenOptions are the flags of `droidgo screen`.
type screenOptions struct {
	file, sim, serial string
	deviceSet         bool
	asJSON, all       bool
	maxElements       int
}

func newScreenCmd(d *deps) *cobra.Command {
	var o screenOptions
	c := &cobra.Command{
		Use:   "screen (--file DUMP.xml | --sim SCENARIO | --device SERIAL) [--json] [--all]",
		Short: "Print a screen's element list exactly as the model sees it",
		Long: `Screen reads one uiautomator dump — from a file, a simulator scenario or a
connected phone — and prints the element list the model is shown: one line per
element with its index, kind, label and state.

With --json it prints the screen as one JSON object: size, rotation, whether
the dump was truncated, the prompt text and the elements with every attribute.
--all lists every node of the dump instead of only the elements, in document
order; nodes the model is not shown have index -1.

Exit status: 0 on success; 1 when the dump cannot be read or parsed, or was
truncated (what parsed is still printed, the truncation is reported on
stderr); 2 on a usage error.`,
		Example: `  droidgo screen --file window_dump.xml
  adb exec-out uiautomator dump /dev/tty | droidgo screen --file - --json
  droidgo screen --sim wifi --json --all
  droidgo screen --device emulator-5554`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(fmt.Errorf("screen takes no arguments; give the dump with --file, --sim or --device"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.deviceSet = cmd.Flags().Changed("device")
			return runScreen(d, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.file, "file", "", "read the dump from this file (- for standard input)")
	f.StringVar(&o.sim, "sim", "", "dump the first screen of this simulator scenario")
	f.StringVar(&o.serial, "device", "", `dump the current screen of the ADB device with this serial ("" for the only one attached)`)
	f.BoolVar(&o.asJSON, "json", false, "print the screen as JSON")
	f.BoolVar(&o.all, "all", false, "list every node of the dump, not only the elements the model sees")
	f.IntVar(&o.maxElements, "max-elements", uixml.DefaultMaxElements, "cut the element list after this many elements")
	return c
}

func runScreen(d *deps, o screenOptions) error {
	sources := 0
	for _, set := range []bool{o.file != "", o.sim != "", o.deviceSet} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return usageErr(errors.New("give exactly one source: --file DUMP.xml, --sim SCENARIO or --device SERIAL"))
	}
	if o.maxElements < 1 {
		return usageErr(fmt.Errorf("--max-elements must be at least 1, not %d", o.maxElements))
	}
	data, from, err := readDump(d, o)
	if err != nil {
		return err
	}
	s, perr := uixml.ParseWithOptions(data, uixml.Options{MaxElements: o.maxElements})
	if s == nil {
		return fmt.Errorf("cannot read the screen from %s: %w", from, perr)
	}
	out := d.jsonOut()
	if !o.asJSON {
		out = termsafe.NewWriter(d.stdout) // labels and ids are the device's text
	}
	if err := printScreen(out, s, o); err != nil {
		return fmt.Errorf("write screen: %w", err)
	}
	if perr != nil {
		// The screen above is what parsed; the error says what is missing.
		return fmt.Errorf("%s: %w", from, perr)
	}
	return nil
}

// readDump returns the raw dump and a name for its source in messages.
func readDump(d *deps, o screenOptions) ([]byte, string, error) {
	switch {
	case o.file == "-":
		data, err := io.ReadAll(io.LimitReader(d.stdin, maxDumpSize+1))
		if err != nil {
			return nil, "", fmt.Errorf("read the dump from standard input: %w", err)
		}
		if len(data) > maxDumpSize {
			return nil, "", errors.New("the input is larger than 64 MiB; that is not a uiautomator dump")
		}
		return data, "standard input", nil
	case o.file != "":
		f, err := os.Open(o.file)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read the dump: %w", err)
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxDumpSize+1))
		if err != nil {
			return nil, "", fmt.Errorf("cannot read the dump %s: %w", o.file, err)
		}
		if len(data) > maxDumpSize {
			return nil, "", fmt.Errorf("%s is larger than 64 MiB; that is not a uiautomator dump", o.file)
		}
		return data, o.file, nil
	default:
		dev, name, err := d.openDevice(d.ctx, o.sim, o.serial)
		if err != nil {
			if o.sim == "" {
				err = fmt.Errorf("open device: %w", err)
			}
			return nil, "", err
		}
		defer closeDevice(dev)
		if o.sim != "" {
			name = fmt.Sprintf("simulator scenario %q", o.sim)
		}
		data, err := dev.Dump(d.ctx)
		if err != nil {
			return nil, "", fmt.Errorf("dump the screen of %s: %w", name, err)
		}
		return data, name, nil
	}
}

func printScreen(w io.Writer, s *uixml.Screen, o screenOptions) error {
	if o.asJSON {
		return s.WriteJSON(w, o.all)
	}
	if !o.all {
		_, err := io.WriteString(w, s.Prompt())
		return err
	}
	// --all as text: every node, indented by depth, with the element index
	// the model sees or "-". Indentation stops growing at maxIndent levels,
	// where the depth is written out instead, so the output stays linear
	// in the dump however deep it nests.
	b := bufio.NewWriter(w)
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Depth <= maxIndent {
			b.WriteString(strings.Repeat("  ", n.Depth))
		} else {
			fmt.Fprintf(b, "%s(depth %d) ", strings.Repeat("  ", maxIndent), n.Depth)
		}
		if n.Index >= 0 {
			fmt.Fprintf(b, "[%d] ", n.Index)
		} else {
			b.WriteString("- ")
		}
		b.WriteString(n.Class)
		if n.ResourceID != "" {
			b.WriteString(" id=" + n.ResourceID)
		}
		if n.Text != "" {
			fmt.Fprintf(b, " text=%q", n.Text)
		}
		if n.Desc != "" {
			fmt.Fprintf(b, " desc=%q", n.Desc)
		}
		r := n.Bounds
		fmt.Fprintf(b, " [%d,%d][%d,%d]", r.X1, r.Y1, r.X2, r.Y2)
		for _, fl := range []struct {
			on   bool
			name string
		}{{n.Clickable, "clickable"}, {n.LongClickable, "long-clickable"}, {n.Checkable, "checkable"}, {n.Checked, "checked"},
			{n.Scrollable, "scrollable"}, {n.Focused, "focused"}, {n.Selected, "selected"}, {n.Password, "password"}, {!n.Enabled, "disabled"}, {n.Hidden, "hidden"}} {
			if fl.on {
				b.WriteString(" " + fl.name)
			}
		}
		b.WriteByte('\n')
	}
	return b.Flush()
}

// maxIndent is the deepest level `screen --all` indents; real dumps rarely
// nest deeper.
const maxIndent = 32
