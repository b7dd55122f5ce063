// Package macro keeps runs as small editable files to do again: a task,
// its parameters and its steps, each the call that was made with the
// element it acted on (found again by identity, uixml.Identity) and the
// screen it was made on (uixml.Signature). A macro is made from a
// successful recorded run (FromPlan) and becomes a replay plan again
// (Macro.Plan) once its parameters have values.
//
// The file is TOML:
//
//	task = "Send '{{message}}' to Alice Moreau"
//	params = ["message"]
//
//	[[step]]
//	do = 'open_app(name="Messages")'
//
//	[[step]]
//	do = 'type_text(text="{{message}}", index=7)'
//	[step.target]
//	hint = "Text message"
//	...
//
// `do` is the call as toolparse.ReadCall reads it (its index names an
// element of the recorded screen: the replay finds the element again by
// target). {{NAME}} in a text (the task, a string argument, a name in a
// target or screen) is the parameter NAME, which must be listed in params
// and given a value to run the macro.
package macro

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/replay"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/droidgo/droidgo/uixml"
)

// Macro is a run kept to be done again.
type Macro struct {
	// Name is the macro's name (its file's, without .toml).
	Name string
	// Task is what the run did, as its recording says it.
	Task string
	// Params are the parameters' names, each {{NAME}} in the texts.
	Params []string
	Steps  []Step
	// Note is free text kept at the top of the file (how it was made).
	Note string
}

// Step is one action of a macro.
type Step struct {
	// Do is the call. Its index argument, if any, names the element on
	// the recorded screen; Target finds it again on a live one.
	Do     action.Call
	Target *uixml.Identity
	// Focus is the field that had the focus, for a type_text without an
	// index.
	Focus *uixml.Identity
	// Screen is the screen the call was made on.
	Screen uixml.Signature
}

// The limits of a macro file: far above any real run, so that a corrupt
// or hostile file costs little.
const (
	MaxFileSize = 4 << 20
	MaxSteps    = 1000
	MaxParams   = 32
)

// paramRE matches {{NAME}} in a text.
var paramRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}`)

// tomlLineRE reads the line out of the TOML decoder's type errors.
var tomlLineRE = regexp.MustCompile(`^toml: line (\d+) (.*)$`)

// nameRE is what a parameter may be called.
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// file is the TOML form of a macro.
type file struct {
	Task   string     `toml:"task"`
	Params []string   `toml:"params"`
	Steps  []fileStep `toml:"step"`
}

type fileStep struct {
	Do     string           `toml:"do"`
	Target *uixml.Identity  `toml:"target,omitempty"`
	Focus  *uixml.Identity  `toml:"focus,omitempty"`
	Screen *uixml.Signature `toml:"screen,omitempty"`
}

// Error is a problem in a macro file, at a line (0 when it is the whole
// file's).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Parse reads the macro called name from the contents of its file (named
// path in errors). A malformed file is an *Error naming the line.
func Parse(data []byte, name, path string) (*Macro, error) {
	bad := func(line int, format string, args ...any) error {
		return &Error{File: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxFileSize {
		return nil, bad(0, "larger than %d MiB", MaxFileSize>>20)
	}
	var f file
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, bad(pe.Position.Line, "%s", pe.Message)
		}
		// A value of the wrong type: "toml: line N (last key ...): ...".
		if m := tomlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, bad(line, "%s", m[2])
		}
		return nil, bad(0, "%v", err)
	}
	lines := strings.Split(string(data), "\n")
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return nil, bad(keyLine(lines, k[len(k)-1]), "unknown key %q", k.String())
	}
	stepLines := headerLines(lines, "[[step]]")
	stepLine := func(i int) int {
		if i < len(stepLines) {
			return stepLines[i]
		}
		return 0
	}
	m := &Macro{Name: name, Task: f.Task, Params: f.Params, Note: leadingComment(lines)}
	if strings.TrimSpace(f.Task) == "" {
		return nil, bad(keyLine(lines, "task"), "no task")
	}
	if len(f.Params) > MaxParams {
		return nil, bad(keyLine(lines, "params"), "%d parameters, more than %d", len(f.Params), MaxParams)
	}
	for i, p := range f.Params {
		if !nameRE.MatchString(p) {
			return nil, bad(keyLine(lines, "params"), "parameter %q is not a name (letters, digits, _ and -)", p)
		}
		if slices.Contains(f.Params[:i], p) {
			return nil, bad(keyLine(lines, "params"), "parameter %q is listed twice", p)
		}
	}
	if len(f.Steps) == 0 {
		return nil, bad(0, "no steps ([[step]] tables)")
	}
	if len(f.Steps) > MaxSteps {
		return nil, bad(stepLine(MaxSteps), "more than %d steps", MaxSteps)
	}
	if err := m.checkParams(f.Task, keyLine(lines, "task")); err != nil {
		return nil, err.(*Error).in(path)
	}
	for i, fs := range f.Steps {
		line := stepLine(i)
		at := func(key string) int {
			if l := keyLineFrom(lines, line, key); l > 0 {
				return l
			}
			return line
		}
		if strings.TrimSpace(fs.Do) == "" {
			return nil, bad(line, "step %d: no do (the call, e.g. do = 'tap(index=3)')", i+1)
		}
		call, _, err := toolparse.ReadCall(fs.Do, action.Tools)
		if err == nil {
			err = action.Validate(call, action.Tools)
		}
		if err != nil {
			return nil, bad(at("do"), "step %d: do: %v", i+1, err)
		}
		st := Step{Do: call, Target: tidy(fs.Target), Focus: tidy(fs.Focus)}
		if fs.Screen != nil && !fs.Screen.Empty() {
			st.Screen = *fs.Screen
			if len(st.Screen.Labels) == 0 {
				st.Screen.Labels = nil
			}
		}
		if _, ok := call.Arguments["index"]; ok && fs.Target == nil {
			return nil, bad(at("do"), "step %d: %s names an element, but the step has no [step.target] to find it by", i+1, call.Name)
		}
		for _, t := range st.texts() {
			if err := m.checkParams(t, at("do")); err != nil {
				return nil, err.(*Error).in(path).step(i + 1)
			}
		}
		m.Steps = append(m.Steps, st)
	}
	return m, nil
}

// tidy makes the empty lists of an identity nil, as a file that leaves
// them out reads.
func tidy(id *uixml.Identity) *uixml.Identity {
	if id == nil {
		return nil
	}
	if len(id.Texts) == 0 {
		id.Texts = nil
	}
	if len(id.Ancestors) == 0 {
		id.Ancestors = nil
	}
	return id
}

// checkParams checks that every {{NAME}} in text is a listed parameter.
func (m *Macro) checkParams(text string, line int) error {
	for _, sub := range paramRE.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(m.Params, sub[1]) {
			return &Error{Line: line, Msg: fmt.Sprintf("{{%s}} is not a parameter (params = %q)", sub[1], m.Params)}
		}
	}
	return nil
}

func (e *Error) in(path string) *Error { e.File = path; return e }

func (e *Error) step(n int) *Error {
	e.Msg = fmt.Sprintf("step %d: %s", n, e.Msg)
	return e
}

// texts are every text of the step that may hold parameters.
func (st *Step) texts() []string {
	var out []string
	for _, v := range st.Do.Arguments {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	for _, id := range []*uixml.Identity{st.Target, st.Focus} {
		if id != nil {
			out = append(out, id.Text, id.Desc, id.Hint, id.Label)
			out = append(out, id.Texts...)
		}
	}
	return append(out, st.Screen.Labels...)
}

// headerLines are the 1-based lines of each header h, in order.
func headerLines(lines []string, h string) []int {
	var out []int
	for i, l := range lines {
		if strings.TrimSpace(l) == h {
			out = append(out, i+1)
		}
	}
	return out
}

// keyLine is the first line that sets key, or 0.
func keyLine(lines []string, key string) int { return keyLineIn(lines, 1, key, false) }

// keyLineFrom is the first line from line `from` on that sets key, before
// the next [[step]], or 0.
func keyLineFrom(lines []string, from int, key string) int { return keyLineIn(lines, from, key, true) }

func keyLineIn(lines []string, from int, key string, oneStep bool) int {
	for i := max(from, 1) - 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if oneStep && i+1 > from && l == "[[step]]" {
			return 0
		}
		if rest, ok := strings.CutPrefix(l, key); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			return i + 1
		}
	}
	return 0
}

// leadingComment is the comment block at the top of a file, without its
// "# " marks.
func leadingComment(lines []string) string {
	var out []string
	for _, l := range lines {
		c, ok := strings.CutPrefix(strings.TrimSpace(l), "#")
		if !ok {
			break
		}
		out = append(out, strings.TrimPrefix(c, " "))
	}
	return strings.Join(out, "\n")
}

// Encode writes the macro as its file.
func (m *Macro) Encode() ([]byte, error) {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(m.Note), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	b.WriteString(fileHelp)
	f := file{Task: m.Task, Params: m.Params}
	if f.Params == nil {
		f.Params = []string{}
	}
	for _, st := range m.Steps {
		fs := fileStep{Do: toolparse.FormatCall(st.Do, action.Tools), Target: st.Target, Focus: st.Focus}
		if !st.Screen.Empty() {
			sig := st.Screen
			fs.Screen = &sig
		}
		f.Steps = append(f.Steps, fs)
	}
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("write macro %s: %w", m.Name, err)
	}
	return b.Bytes(), nil
}

// fileHelp heads every macro file.
const fileHelp = `#
# A droidgo macro (droidgo macro run NAME): each [[step]] is one action. "do" is
# the call; its index names the element on the recorded screen, and the replay
# finds that element again on the live screen by [step.target]: its name, id,
# class, place and position. [step.screen] is the screen the step is done on
# (its app and element names). {{NAME}} in a text is the parameter NAME (listed
# in params), given with --set NAME=VALUE.
`

// Plan turns the macro into a replay plan with the parameters set to
// values. Every parameter must have a value, and every value must name a
// parameter: nothing is replayed with a {{NAME}} left in it.
func (m *Macro) Plan(values map[string]string) (*replay.Plan, error) {
	var missing []string
	for _, p := range m.Params {
		if _, ok := values[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("macro %s: parameter %s has no value (give --set %s=VALUE)", m.Name, strings.Join(missing, ", "), missing[0])
	}
	for k := range values {
		if !slices.Contains(m.Params, k) {
			return nil, fmt.Errorf("macro %s has no parameter %q (its parameters: %s)", m.Name, k, paramList(m.Params))
		}
	}
	fill := func(s string) string {
		return paramRE.ReplaceAllStringFunc(s, func(ref string) string {
			return values[paramRE.FindStringSubmatch(ref)[1]]
		})
	}
	p := &replay.Plan{Task: fill(m.Task)}
	for i, st := range m.Steps {
		call := st.Do
		call.Arguments = map[string]any{}
		for k, v := range st.Do.Arguments {
			if s, ok := v.(string); ok {
				v = fill(s)
			}
			call.Arguments[k] = v
		}
		if err := action.Validate(call, action.Tools); err != nil {
			return nil, fmt.Errorf("macro %s: step %d with the values given: %w", m.Name, i+1, err)
		}
		rs := replay.Step{Call: call, Target: fillIdentity(st.Target, fill), Focus: fillIdentity(st.Focus, fill)}
		rs.Screen.App = st.Screen.App
		for _, l := range st.Screen.Labels {
			rs.Screen.Labels = append(rs.Screen.Labels, fill(l))
		}
		p.Steps = append(p.Steps, rs)
	}
	return p, nil
}

func paramList(ps []string) string {
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}

func fillIdentity(id *uixml.Identity, fill func(string) string) *uixml.Identity {
	if id == nil {
		return nil
	}
	out := *id
	out.Text, out.Desc, out.Hint, out.Label = fill(id.Text), fill(id.Desc), fill(id.Hint), fill(id.Label)
	out.Texts = nil
	for _, t := range id.Texts {
		out.Texts = append(out.Texts, fill(t))
	}
	return &out
}

// FromPlan makes a macro called name of a successful run's plan. params
// maps parameter names to the values they stand for in the run: every
// occurrence of a value in the run's texts (the task, the calls' string
// arguments, the names of targets and screens) becomes {{NAME}}. A value
// that occurs in no call is an error: it would be no parameter.
func FromPlan(name string, p *replay.Plan, params map[string]string, note string) (*Macro, error) {
	if !p.Succeeded() {
		reason := "it ended before it finished"
		if p.End != nil {
			reason = "it ended with: " + p.End.Reason
		}
		return nil, fmt.Errorf("only a successful run can be a macro, and this one did not succeed (%s)", reason)
	}
	m := &Macro{Name: name, Task: p.Task, Note: note}
	keys := make([]string, 0, len(params))
	for k, v := range params {
		if !nameRE.MatchString(k) {
			return nil, fmt.Errorf("parameter %q is not a name (letters, digits, _ and -)", k)
		}
		if v == "" {
			return nil, fmt.Errorf("parameter %s: the value it stands for is empty", k)
		}
		keys = append(keys, k)
	}
	if len(keys) > MaxParams {
		return nil, fmt.Errorf("%d parameters, more than %d", len(keys), MaxParams)
	}
	// Longer values first, so that one value inside another is not cut.
	slices.SortFunc(keys, func(a, b string) int { return len(params[b]) - len(params[a]) })
	m.Params = slices.Sorted(slices.Values(keys))
	used := map[string]bool{}
	var literal string // a text with "{{", which would read back as a parameter
	sub := func(s string, call bool) string {
		if strings.Contains(s, "{{") && literal == "" {
			literal = s
		}
		for _, k := range keys {
			if strings.Contains(s, params[k]) {
				s = strings.ReplaceAll(s, params[k], "{{"+k+"}}")
				used[k] = used[k] || call
			}
		}
		return s
	}
	m.Task = sub(p.Task, false)
	for _, st := range p.Steps {
		ms := Step{Do: st.Call, Screen: st.Screen}
		ms.Do.Arguments = map[string]any{}
		for k, v := range st.Call.Arguments {
			if s, ok := v.(string); ok {
				v = sub(s, true)
			}
			ms.Do.Arguments[k] = v
		}
		ms.Target = fillIdentity(st.Target, func(s string) string { return sub(s, false) })
		ms.Focus = fillIdentity(st.Focus, func(s string) string { return sub(s, false) })
		ms.Screen.Labels = nil
		for _, l := range st.Screen.Labels {
			ms.Screen.Labels = append(ms.Screen.Labels, sub(l, false))
		}
		m.Steps = append(m.Steps, ms)
	}
	if literal != "" {
		return nil, fmt.Errorf("the run's text %q holds \"{{\", which a macro would read as a parameter", literal)
	}
	for _, k := range keys {
		if !used[k] {
			return nil, fmt.Errorf("parameter %s: %q is in no call of the run (a parameter stands for a text the run typed, opened or summed up)", k, params[k])
		}
	}
	return m, nil
}
