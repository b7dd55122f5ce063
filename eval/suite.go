// Package eval is droidgo's benchmark: task suites (multi-step tasks on
// simulated phones, judged by the phone's state) and decision suites
// (single steps on fixed screens, judged against the acceptable calls). It
// runs them through the agent loop, scores them, and writes results.json,
// recordings and a report.
package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/fixtures"
	"github.com/droidgo/droidgo/simulator"
)

// Names of the built-in suites.
const (
	BuiltinTasks     = "tasks"
	BuiltinDecisions = "decisions"
	// BuiltinPerturbed is the task suite's variants on perturbed phones
	// (fixtures/perturbed), on which replays are checked too.
	BuiltinPerturbed = "perturbed"
)

// Suite is a loaded suite: tasks or decision cases, and the entries that
// could not be loaded (a broken file), which are reported as not run.
type Suite struct {
	// Name is "tasks", "decisions" or the directory's base name.
	Name string
	// Dir is where the suite was loaded from ("" for a built-in one).
	Dir    string
	Tasks  []*Task
	Cases  []*Case
	Broken []Broken
}

// Broken is a task or case that could not be loaded.
type Broken struct {
	Name   string
	Reason string // names the file and, for a JSON line, the line
	// Decision tells which list of results it belongs to.
	Decision bool
}

// Task is one scenario of a task suite. Open gives a fresh phone.
type Task struct {
	Suite string
	Name  string
	Text  string // the task as the user says it
	Meta  simulator.Meta
	open  func() (*simulator.Phone, error)
}

// Open loads a fresh simulated phone for one run of the task.
func (t *Task) Open() (*simulator.Phone, error) { return t.open() }

// Case is one single-decision case: a screen, a task, the steps before and
// the calls that are acceptable.
type Case struct {
	Suite   string
	Name    string
	Screen  []byte // uiautomator XML
	Task    string
	History []string
	Accept  []action.Call
}

// caseJSON is one line of cases.jsonl.
type caseJSON struct {
	Name    string        `json:"name"`
	Screen  string        `json:"screen"`
	Task    string        `json:"task"`
	History []string      `json:"history"`
	Accept  []action.Call `json:"accept"`
}

// Load loads the suite a --suite value names: "tasks", "decisions",
// "perturbed" or a
// directory (a decision suite when it holds cases.jsonl, else a task suite
// of scenario directories). An error means the suite cannot be read at all;
// broken entries inside it are in Suite.Broken.
func Load(spec string) (*Suite, error) {
	switch spec {
	case BuiltinTasks:
		return loadTasks(BuiltinTasks, "", fixtures.FS, simulator.TasksDir)
	case BuiltinPerturbed:
		return loadTasks(BuiltinPerturbed, "", fixtures.FS, simulator.PerturbedDir)
	case BuiltinDecisions:
		sub, err := fs.Sub(fixtures.FS, "decisions")
		if err != nil {
			return nil, err
		}
		return loadDecisions(BuiltinDecisions, "", sub, "fixtures/decisions/")
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("suite %s: not tasks, decisions, perturbed or a directory: %w", spec, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("suite %s: not a directory", spec)
	}
	name := filepath.Base(filepath.Clean(spec))
	if abs, err := filepath.Abs(spec); err == nil {
		name = filepath.Base(abs) // "." names the directory too
	}
	dir := os.DirFS(spec)
	// A directory may hold both kinds: scenario directories and a
	// cases.jsonl.
	root := "."
	if _, err := fs.Stat(dir, "scenarios"); err == nil {
		// The layout of fixtures/ itself: scenarios/NAME beside apps/.
		root = "scenarios"
	}
	tasks, terr := loadTasks(name, spec, overlay{dir, fixtures.FS}, root)
	if _, err := fs.Stat(dir, "cases.jsonl"); err != nil {
		return tasks, terr
	}
	dec, err := loadDecisions(name, spec, dir, filepath.Clean(spec)+string(filepath.Separator))
	if err != nil {
		return nil, err
	}
	if terr == nil {
		dec.Tasks, dec.Broken = tasks.Tasks, append(tasks.Broken, dec.Broken...)
	}
	return dec, nil
}

// overlay reads from top first, then from base: a user's suite directory
// sees its own apps/ and the built-in apps and system bars.
type overlay struct{ top, base fs.FS }

func (o overlay) Open(name string) (fs.File, error) {
	f, err := o.top.Open(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	return o.base.Open(name)
}

// loadTasks loads every scenario directory under root of fsys.
func loadTasks(suite, dir string, fsys fs.FS, root string) (*Suite, error) {
	s := &Suite{Name: suite, Dir: dir}
	ents, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", suite, err)
	}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "apps" || e.Name() == "system" {
			continue
		}
		sdir := path.Join(root, e.Name())
		if _, err := fs.Stat(fsys, path.Join(sdir, "scenario.json")); err != nil {
			continue
		}
		name := e.Name()
		ph, err := simulator.LoadFS(fsys, sdir)
		if err != nil {
			s.Broken = append(s.Broken, Broken{Name: name, Reason: displayErr(err, dir)})
			continue
		}
		s.Tasks = append(s.Tasks, &Task{
			Suite: suite, Name: name, Text: ph.Task(), Meta: ph.Meta(),
			open: func() (*simulator.Phone, error) { return simulator.LoadFS(fsys, sdir) },
		})
	}
	if len(s.Tasks) == 0 && len(s.Broken) == 0 {
		return nil, fmt.Errorf("suite %s: no scenario directories (NAME/scenario.json) and no cases.jsonl", displayDir(suite, dir))
	}
	return s, nil
}

// displayErr makes a loader error name files as the user knows them: a
// file of the suite directory by its full path, a built-in one under
// fixtures/.
func displayErr(err error, dir string) string {
	msg := err.Error()
	if dir == "" {
		return "fixtures/" + msg
	}
	file, _, _ := strings.Cut(msg, ":")
	if _, serr := fs.Stat(os.DirFS(dir), file); serr == nil || !fs.ValidPath(file) {
		return filepath.Join(dir, file) + msg[len(file):]
	}
	if _, serr := fs.Stat(fixtures.FS, file); serr == nil {
		return "fixtures/" + msg
	}
	return filepath.Join(dir, file) + msg[len(file):]
}

func displayDir(suite, dir string) string {
	if dir != "" {
		return dir
	}
	return suite
}

// maxCaseLine bounds one line of cases.jsonl, so a corrupt file cannot
// take unbounded memory.
const maxCaseLine = 1 << 20

// maxScreen bounds a case's screen file.
const maxScreen = 8 << 20

// loadDecisions reads cases.jsonl of fsys; prefix is how file names are
// shown.
func loadDecisions(suite, dir string, fsys fs.FS, prefix string) (*Suite, error) {
	s := &Suite{Name: suite, Dir: dir}
	f, err := fsys.Open("cases.jsonl")
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", displayDir(suite, dir), err)
	}
	defer f.Close()
	file := prefix + "cases.jsonl"
	br := bufio.NewReader(f)
	seen := map[string]int{}
	for line := 1; ; line++ {
		raw, tooLong, err := readLine(br, maxCaseLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 || tooLong {
			where := fmt.Sprintf("%s:%d", file, line)
			c, cerr := parseCase(fsys, prefix, raw, tooLong)
			name := fmt.Sprintf("line-%d", line)
			if c != nil && c.Name != "" {
				name = c.Name
			}
			if cerr == nil {
				if first, dup := seen[c.Name]; dup {
					cerr = fmt.Errorf("case name %q is also used on line %d", c.Name, first)
				}
			}
			if cerr != nil {
				s.Broken = append(s.Broken, Broken{Name: name, Reason: where + ": " + cerr.Error(), Decision: true})
			} else {
				seen[c.Name] = line
				c.Suite = suite
				s.Cases = append(s.Cases, c)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(s.Cases) == 0 && len(s.Broken) == 0 {
		return nil, fmt.Errorf("suite %s: %s has no cases", displayDir(suite, dir), file)
	}
	return s, nil
}

// readLine reads one line without its newline; a line longer than limit is
// consumed and reported as tooLong.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line)+len(chunk) > limit {
			tooLong = true
			line = nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

func parseCase(fsys fs.FS, prefix string, raw []byte, tooLong bool) (*Case, error) {
	if tooLong {
		return nil, fmt.Errorf("line longer than %d bytes", maxCaseLine)
	}
	var cj caseJSON
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(&cj); err != nil {
		return nil, fmt.Errorf("malformed case: %w", err)
	}
	if d.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	c := &Case{Name: cj.Name, Task: strings.TrimSpace(cj.Task), History: cj.History}
	switch {
	case strings.TrimSpace(cj.Name) == "":
		return c, errors.New("no name")
	case c.Task == "":
		return c, errors.New("no task")
	case cj.Screen == "":
		return c, errors.New("no screen")
	case len(cj.Accept) == 0:
		return c, errors.New("no accepted calls (accept)")
	}
	for i, a := range cj.Accept {
		t, ok := action.Lookup(action.Tools, a.Name)
		if !ok {
			return c, fmt.Errorf("accept[%d]: unknown tool %q (tools: %s)", i, a.Name, strings.Join(action.Names(action.Tools), ", "))
		}
		for k := range a.Arguments {
			if _, ok := t.Param(k); !ok {
				return c, fmt.Errorf("accept[%d]: %s has no argument %q", i, a.Name, k)
			}
		}
		c.Accept = append(c.Accept, a)
	}
	file := path.Clean(cj.Screen)
	if path.IsAbs(cj.Screen) || strings.HasPrefix(file, "../") || file == ".." || !fs.ValidPath(file) {
		return c, fmt.Errorf("screen %q must be a path inside the suite directory", cj.Screen)
	}
	f, err := fsys.Open(file)
	if err != nil {
		return c, fmt.Errorf("screen %s%s: %w", prefix, file, unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScreen+1))
	if err != nil {
		return c, fmt.Errorf("screen %s%s: %w", prefix, file, err)
	}
	if len(data) > maxScreen {
		return c, fmt.Errorf("screen %s%s: larger than %d bytes", prefix, file, maxScreen)
	}
	c.Screen = data
	return c, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
