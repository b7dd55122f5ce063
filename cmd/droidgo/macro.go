package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/macro"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

func newMacroCmd(d *deps) *cobra.Command {
	c := &cobra.Command{
		Use:   "macro",
		Short: "Keep runs as macros and do them again: save, list, show, run, rm",
		Long: `A macro is a successful recorded run kept as a small editable file: its task, its
parameters and its steps, each the call with the element it acted on and the
screen it was made on. 'droidgo macro run' carries it out again as 'droidgo
replay --device' does: no model, every element found again by what it is.

Macros are kept in $XDG_DATA_HOME/droidgo/macros (~/.local/share/droidgo/macros
without XDG_DATA_HOME), one NAME.toml each.`,
	}
	c.AddCommand(newMacroSaveCmd(d), newMacroListCmd(d), newMacroShowCmd(d), newMacroRunCmd(d), newMacroRmCmd(d))
	return c
}

// macroStore is the store the environment names.
func (d *deps) macroStore() (macro.Store, error) {
	dir, err := macro.DefaultDir(d.getenv)
	if err != nil {
		return macro.Store{}, usageErr(err)
	}
	return macro.Store{Dir: dir}, nil
}

// loadMacro reads the macro called name from the store.
func (d *deps) loadMacro(name string) (macro.Store, *macro.Macro, error) {
	store, err := d.macroStore()
	if err != nil {
		return store, nil, err
	}
	m, err := store.Load(name)
	if err != nil {
		return store, nil, macroErr(err)
	}
	return store, m, nil
}

// macroErr makes the errors a person caused (a bad name, a macro that does
// not exist, a malformed file) usage errors.
func macroErr(err error) error {
	var me *macro.Error
	if errors.Is(err, macro.ErrBadName) || errors.Is(err, macro.ErrNotFound) || errors.As(err, &me) {
		return usageErr(err)
	}
	return err
}

// keyValues reads NAME=VALUE flags into a map.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr(fmt.Errorf("--%s %q: want NAME=VALUE", flag, kv))
		}
		if _, dup := out[k]; dup {
			return nil, usageErr(fmt.Errorf("--%s %s is given twice", flag, k))
		}
		out[k] = v
	}
	return out, nil
}

func (d *deps) encodeJSON(v any) error {
	enc := json.NewEncoder(d.jsonOut())
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newMacroSaveCmd(d *deps) *cobra.Command {
	var params []string
	var force, asJSON bool
	c := &cobra.Command{
		Use:   "save RUN.jsonl NAME",
		Short: "Save a successful recorded run as a macro",
		Long: `Save the run recorded in RUN.jsonl ('droidgo run --record', a shipped recording
such as wifi, or a replay's --record) as the macro NAME. Only a run that
succeeded can be saved.

--param NAME=VALUE makes a parameter of a text the run used: every occurrence
of VALUE in the task, the calls' texts and the names of their elements becomes
{{NAME}}, to be given with 'droidgo macro run NAME --set NAME=...'. VALUE must
occur in a call (what was typed, the app opened, the summary).

With --json it prints {"name", "file", "task", "params", "steps"}.`,
		Example: `  droidgo run "Send 'On my way' to Alice Moreau" --record send.jsonl
  droidgo macro save send.jsonl send-alice --param message="On my way"
  droidgo macro save wifi wifi-on`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			vals, err := keyValues("param", params)
			if err != nil {
				return err
			}
			if err := macro.CheckName(args[1]); err != nil {
				return usageErr(err)
			}
			store, err := d.macroStore()
			if err != nil {
				return err
			}
			rec, err := openRecording(args[0])
			if err != nil {
				return usageErr(err)
			}
			plan, err := replay.FromRecording(rec)
			if err != nil {
				return usageErr(fmt.Errorf("recording %s: %w", args[0], err))
			}
			note := fmt.Sprintf("made by 'droidgo macro save' from %s (%s, %s)", args[0], rec.Header.Device, rec.Header.Model)
			m, err := macro.FromPlan(args[1], plan, vals, note)
			if err != nil {
				return usageErr(fmt.Errorf("recording %s: %w", args[0], err))
			}
			path, err := store.Save(m, force)
			if err != nil {
				if _, serr := os.Stat(store.Path(m.Name)); serr == nil && !force {
					return usageErr(err)
				}
				return err
			}
			if asJSON {
				return d.encodeJSON(macroJSON{Name: m.Name, File: path, Task: m.Task, Params: nonNil(m.Params), Steps: len(m.Steps)})
			}
			fmt.Fprintf(termsafe.NewWriter(d.stdout), "saved macro %s (%d steps of %q) in %s\n", m.Name, len(m.Steps), m.Task, path)
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&params, "param", nil, "`NAME=VALUE`: make VALUE, a text of the run, the parameter NAME (repeatable)")
	f.BoolVar(&force, "force", false, "replace a macro of the same name")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// macroJSON is a macro in the --json output of macro list, show and
// save.
type macroJSON struct {
	Name   string   `json:"name"`
	File   string   `json:"file"`
	Task   string   `json:"task,omitempty"`
	Params []string `json:"params"`
	// Steps is the number of steps (list, save) ...
	Steps any `json:"steps"`
	// Error is why the file cannot be read (list).
	Error string `json:"error,omitempty"`
}

// stepJSON is a step of macro show --json.
type stepJSON struct {
	Do     string           `json:"do"`
	Target *uixml.Identity  `json:"target,omitempty"`
	Focus  *uixml.Identity  `json:"focus,omitempty"`
	Screen *uixml.Signature `json:"screen,omitempty"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func newMacroListCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the saved macros",
		Long: `List the saved macros: name, number of steps, parameters and task. A file that
cannot be read is listed with its error.

With --json it prints [{"name", "file", "task", "params", "steps", "error"}].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := d.macroStore()
			if err != nil {
				return err
			}
			infos, err := store.List()
			if err != nil {
				return err
			}
			out := []macroJSON{}
			for _, in := range infos {
				j := macroJSON{Name: in.Name, File: in.File, Params: []string{}, Steps: 0}
				if in.Err != nil {
					j.Error = in.Err.Error()
				} else {
					j.Task, j.Params, j.Steps = in.Macro.Task, nonNil(in.Macro.Params), len(in.Macro.Steps)
				}
				out = append(out, j)
			}
			if asJSON {
				return d.encodeJSON(out)
			}
			if len(out) == 0 {
				fmt.Fprintf(d.stdout, "no macros in %s (save one with 'droidgo macro save RUN.jsonl NAME')\n", store.Dir)
				return nil
			}
			tw := tabwriter.NewWriter(termsafe.NewWriter(d.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTEPS\tPARAMS\tTASK")
			for _, j := range out {
				if j.Error != "" {
					fmt.Fprintf(tw, "%s\t-\t-\tcannot be read: %s\n", j.Name, j.Error)
					continue
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", j.Name, j.Steps, strings.Join(j.Params, ","), j.Task)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newMacroShowCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a macro",
		Long: `Print the macro NAME: its file as it is, or with --json
{"name", "file", "task", "params", "steps": [{"do", "target", "focus", "screen"}]}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, m, err := d.loadMacro(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				steps := make([]stepJSON, len(m.Steps))
				for i, st := range m.Steps {
					steps[i] = stepJSON{Do: toolparse.FormatCall(st.Do, action.Tools), Target: st.Target, Focus: st.Focus}
					if !st.Screen.Empty() {
						sig := st.Screen
						steps[i].Screen = &sig
					}
				}
				return d.encodeJSON(macroJSON{Name: m.Name, File: store.Path(m.Name), Task: m.Task, Params: nonNil(m.Params), Steps: steps})
			}
			data, err := os.ReadFile(store.Path(m.Name))
			if err != nil {
				return err
			}
			_, err = termsafe.NewWriter(d.stdout).Write(data)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newMacroRmCmd(d *deps) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a macro",
		Long:  `Remove the macro NAME. With --json it prints {"name", "file", "removed": true}.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := d.macroStore()
			if err != nil {
				return err
			}
			path, err := store.Remove(args[0])
			if err != nil {
				return macroErr(err)
			}
			if asJSON {
				return d.encodeJSON(struct {
					Name    string `json:"name"`
					File    string `json:"file"`
					Removed bool   `json:"removed"`
				}{args[0], path, true})
			}
			fmt.Fprintf(termsafe.NewWriter(d.stdout), "removed macro %s (%s)\n", args[0], path)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newMacroRunCmd(d *deps) *cobra.Command {
	p := phoneReplay{run: &runOptions{d: d}}
	var sets []string
	c := &cobra.Command{
		Use:   "run NAME [--device S | --sim SCENARIO] [--set NAME=VALUE]...",
		Short: "Carry out a macro on a phone",
		Long: `Carry out the macro NAME on a phone (--device, else ANDROID_SERIAL or the
configured or only attached phone; or a simulated one with --sim), as 'droidgo
replay FILE --device' carries out a recording: no model, each element found
again by what it is, sensitive actions waiting for approval, a report where the
phone disagrees, and with --model or --endpoint the model taking over there.

Every parameter of the macro must be given a value with --set NAME=VALUE, and
only those: a macro with a parameter left unset is refused before anything on
the phone is touched.

Output and exit status are replay's: events as 'run' shows them (--json: one
per line, the last one {"type":"replay_result","replayed":N,"total":M,
"stopped_at":K,"why":"..."}); exit 0 only when every step was carried out and
the run ended as recorded, 1 when it stopped or failed, 2 on a usage error.`,
		Example: `  droidgo macro run wifi-on --device emulator-5554
  droidgo macro run send-alice --set message="Running late" --sim message-send`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.run.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { p.run.set[f.Name] = true })
			vals, err := keyValues("set", sets)
			if err != nil {
				return err
			}
			if err := p.check(); err != nil {
				return err
			}
			_, m, err := d.loadMacro(args[0])
			if err != nil {
				return err
			}
			plan, err := m.Plan(vals)
			if err != nil {
				return usageErr(err)
			}
			return p.do(plan, "macro:"+m.Name, replayNote("macro "+m.Name, plan, d.clock()))
		},
	}
	f := c.Flags()
	f.StringArrayVar(&sets, "set", nil, "`NAME=VALUE`: the value of the macro's parameter NAME (repeatable)")
	p.addFlags(f)
	return c
}
