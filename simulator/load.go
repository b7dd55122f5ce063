package simulator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/fixtures"
)

// Info describes a scenario.
type Info struct {
	Name        string `json:"name"`
	Task        string `json:"task"`
	Description string `json:"description"`
}

// The JSON files of the scenario format. See fixtures/README.md.

type scenarioJSON struct {
	Task        string                         `json:"task"`
	Description string                         `json:"description"`
	Apps        []string                       `json:"apps"`
	Home        string                         `json:"home"`
	Start       string                         `json:"start"`
	State       map[string]string              `json:"state"`
	Lists       map[string][]map[string]string `json:"lists"`
	Clock       string                         `json:"clock"`
	Width       int                            `json:"width"`
	Height      int                            `json:"height"`
	Success     *successJSON                   `json:"success"`
	Eval        *Meta                          `json:"eval"`
}

// Meta is what a benchmark needs to know about a scenario beyond its
// success predicate (the "eval" object of scenario.json). The simulator
// only checks it; droidgo eval uses it.
type Meta struct {
	// App names the app the task is about, for reports ("Settings").
	App string `json:"app,omitempty"`
	// Difficulty is "easy", "medium" or "hard".
	Difficulty string `json:"difficulty,omitempty"`
	// HumanSteps is how many actions a person needs.
	HumanSteps int `json:"human_steps,omitempty"`
	// Answer lists what the summary of task_complete must contain
	// (ignoring case), for tasks whose result is information.
	Answer []string `json:"answer,omitempty"`
	// Infeasible marks a task that cannot be done on this phone: the
	// right move is to stop and say so.
	Infeasible bool `json:"infeasible,omitempty"`
}

type successJSON struct {
	If      []string     `json:"if"`
	Screen  string       `json:"screen"`
	App     string       `json:"app"`
	ListHas *listHasJSON `json:"list_has"`
}

type listHasJSON struct {
	List string            `json:"list"`
	Item map[string]string `json:"item"`
}

type appJSON struct {
	Label   string                         `json:"label"`
	Package string                         `json:"package"`
	Aliases []string                       `json:"aliases"`
	Hidden  bool                           `json:"hidden"`
	Launch  string                         `json:"launch"`
	State   map[string]string              `json:"state"`
	Lists   map[string][]map[string]string `json:"lists"`
	Screens map[string]*screenJSON         `json:"screens"`
}

type systemJSON struct {
	Package  string                 `json:"package"`
	State    map[string]string      `json:"state"`
	Overlays []*screenJSON          `json:"overlays"`
	Screens  map[string]*screenJSON `json:"screens"`
}

type screenJSON struct {
	File       string                  `json:"file"`
	Focus      string                  `json:"focus"`
	Fullscreen bool                    `json:"fullscreen"`
	OnTap      []*handlerJSON          `json:"on_tap"`
	OnLong     []*handlerJSON          `json:"on_long_press"`
	Keys       map[string]*handlerJSON `json:"keys"`
	Swipes     map[string]*handlerJSON `json:"swipes"`
}

type selectorJSON struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Desc string `json:"desc"`
}

type handlerJSON struct {
	Target     *selectorJSON     `json:"target"`
	If         []string          `json:"if"`
	Set        map[string]string `json:"set"`
	Toggle     []string          `json:"toggle"`
	ToggleItem string            `json:"toggle_item"`
	Append     *listHasJSON      `json:"append"`
	Focus      string            `json:"focus"`
	Key        string            `json:"key"`
	Go         string            `json:"go"`
	Replace    string            `json:"replace"`
	Back       bool              `json:"back"`
	Home       bool              `json:"home"`
	Open       string            `json:"open"`
}

// Loaded definitions.

type appDef struct {
	name    string
	label   string
	pkg     string
	aliases []string
	hidden  bool // no launcher entry: open_app does not know it
	launch  *screenDef
	screens map[string]*screenDef
}

type screenDef struct {
	app        *appDef
	id         string // "app:screen"
	file       string
	windows    []*tnode
	focus      string
	fullscreen bool
	keys       map[string]*handler
	swipes     map[string]*handler
}

type kv struct {
	k string
	v tmpl
}

type handler struct {
	where      string // file and position, for messages
	ifc        []cond
	set        []kv
	toggle     []string
	toggleItem string
	appendTo   string
	appendItem []kv
	focus      string
	key        string
	goTo       *screenDef
	replace    *screenDef
	back, home bool
	open       *appDef
	openT      *tmpl  // open templated from the tapped list entry's fields
	itemList   string // the sim-each list of the node it is attached to
}

type scenario struct {
	info      Info
	meta      Meta
	apps      []*appDef
	home      *appDef
	start     *screenDef
	overlays  []*screenDef
	vars      map[string]string
	lists     map[string][]map[string]string
	clock     int // minutes after midnight
	w, h      int
	success   successSpec
	byPackage map[string]*appDef
	byName    map[string]*appDef
}

// appsList is the built-in state list of the apps a launcher shows: one
// entry per launchable app of the scenario (see launcherEntries).
const appsList = "apps"

// appsFields are the fields of an entry of appsList.
var appsFields = []string{"name", "label", "package"}

type successSpec struct {
	ifc      []cond
	screen   *screenDef
	app      string
	listName string
	listItem map[string]string
}

// ErrUnknownScenario is wrapped by Load's error for a name that is no
// shipped scenario (a usage error for the commands).
var ErrUnknownScenario = errors.New("unknown scenario")

// Load loads the scenario called name from the fixtures shipped with
// droidgo (fixtures/scenarios/NAME).
func Load(name string) (*Phone, error) {
	if !isName(name) {
		return nil, fmt.Errorf("%w %q", ErrUnknownScenario, name)
	}
	if sc, ok := shipped.Load(name); ok {
		return newPhone(sc.(*scenario)), nil
	}
	if _, err := fs.Stat(fixtures.FS, path.Join("scenarios", name, "scenario.json")); err != nil {
		names, _ := scenarioNames(fixtures.FS)
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownScenario, name, strings.Join(names, ", "))
	}
	sc, err := loadScenario(fixtures.FS, path.Join("scenarios", name))
	if err != nil {
		return nil, err
	}
	shipped.Store(name, sc)
	return newPhone(sc), nil
}

// shipped caches the embedded scenarios by name. A loaded scenario is never
// modified (each Phone copies the state it changes), so phones share it.
var shipped sync.Map

// LoadFS loads the scenario in directory dir of fsys: dir/scenario.json,
// the apps it names from apps/NAME/app.json at the root of fsys, their
// screen files beside each app.json, and system/system.json for the status
// and navigation bars.
func LoadFS(fsys fs.FS, dir string) (*Phone, error) {
	sc, err := loadScenario(fsys, dir)
	if err != nil {
		return nil, err
	}
	return newPhone(sc), nil
}

// List returns the scenarios shipped with droidgo, sorted by name.
func List() ([]Info, error) {
	return ListFS(fixtures.FS)
}

// ListFS returns the scenarios under scenarios/ in fsys, sorted by name.
// Each is loaded fully, so a broken scenario is reported here too.
func ListFS(fsys fs.FS) ([]Info, error) {
	names, err := scenarioNames(fsys)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		sc, err := loadScenario(fsys, path.Join("scenarios", n))
		if err != nil {
			return nil, err
		}
		out = append(out, sc.info)
	}
	return out, nil
}

func scenarioNames(fsys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(fsys, "scenarios")
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := fs.Stat(fsys, path.Join("scenarios", e.Name(), "scenario.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// decodeStrict decodes JSON and rejects unknown fields, so a typo in a
// fixture is an error instead of a silently ignored setting.
func decodeStrict(fsys fs.FS, file string, v any) error {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			return fmt.Errorf("%s:%d: malformed JSON: %w", file, line, err)
		}
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// loader holds what is being loaded and the declared variables.
type loader struct {
	fsys  fs.FS
	sc    *scenario
	apps  map[string]*appDef
	sys   *appDef
	decl  map[string]bool // declared state variables
	lists map[string]bool // declared state lists
	// pending handler targets to resolve once every app is loaded
	fixups []func() error
	// every handler, for the checks that need them all
	handlers []*handler
}

func loadScenario(fsys fs.FS, dir string) (*scenario, error) {
	file := path.Join(dir, "scenario.json")
	var sj scenarioJSON
	if err := decodeStrict(fsys, file, &sj); err != nil {
		return nil, err
	}
	l := &loader{fsys: fsys, apps: map[string]*appDef{}, decl: map[string]bool{"clock": true}, lists: map[string]bool{appsList: true}}
	sc := &scenario{
		info:      Info{Name: path.Base(dir), Task: sj.Task, Description: sj.Description},
		vars:      map[string]string{},
		lists:     map[string][]map[string]string{},
		byPackage: map[string]*appDef{},
		byName:    l.apps,
		w:         sj.Width, h: sj.Height,
	}
	l.sc = sc
	if sc.w == 0 && sc.h == 0 {
		sc.w, sc.h = 1080, 2400
	}
	if sc.w <= 0 || sc.h <= 0 {
		return nil, fmt.Errorf("%s: width and height must be positive", file)
	}
	if strings.TrimSpace(sj.Task) == "" {
		return nil, fmt.Errorf("%s: no task", file)
	}
	if sj.Eval != nil {
		if err := checkMeta(sj.Eval); err != nil {
			return nil, fmt.Errorf("%s: eval: %w", file, err)
		}
		sc.meta = *sj.Eval
	}
	if len(sj.Apps) == 0 {
		return nil, fmt.Errorf("%s: no apps", file)
	}
	// Declare every app's state before reading any screen, so that an app
	// may use another's variables.
	defs := make([]*appJSON, len(sj.Apps))
	for i, name := range sj.Apps {
		if slices.Contains(sj.Apps[:i], name) {
			return nil, fmt.Errorf("%s: app %q listed twice", file, name)
		}
		if name == "system" {
			return nil, fmt.Errorf("%s: the app name \"system\" is reserved for system/", file)
		}
		aj, err := l.declareApp(name)
		if err != nil {
			return nil, err
		}
		defs[i] = aj
	}
	for i, name := range sj.Apps {
		a, err := l.loadApp(name, defs[i])
		if err != nil {
			return nil, err
		}
		if other, dup := sc.byPackage[a.pkg]; dup {
			return nil, fmt.Errorf("%s: apps %q and %q have the same package %s", file, other.name, a.name, a.pkg)
		}
		l.apps[name] = a
		sc.apps = append(sc.apps, a)
		sc.byPackage[a.pkg] = a
	}
	if err := l.loadSystem(); err != nil {
		return nil, err
	}
	for _, f := range l.fixups {
		if err := f(); err != nil {
			return nil, err
		}
	}
	home := sj.Home
	if home == "" {
		home = "launcher"
		if l.apps[home] == nil {
			home = sj.Apps[0]
		}
	}
	if sc.home = l.apps[home]; sc.home == nil {
		return nil, fmt.Errorf("%s: home app %q is not among the apps %v", file, home, sj.Apps)
	}
	sc.lists[appsList] = launcherEntries(sc)
	sc.start = sc.home.launch
	if sj.Start != "" {
		s, err := l.screenRef(sj.Start, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: start: %w", file, err)
		}
		sc.start = s
	}
	for k, v := range sj.State {
		if !l.decl[k] || k == "clock" {
			return nil, fmt.Errorf("%s: state: unknown variable %q (declare it in an app's state)", file, k)
		}
		sc.vars[k] = v
	}
	for k, v := range sj.Lists {
		if err := checkEntries(v); err != nil {
			return nil, fmt.Errorf("%s: lists: %s%w", file, k, err)
		}
		if k == appsList {
			return nil, fmt.Errorf("%s: lists: the list %q is built in (the scenario's launchable apps) and cannot be set", file, k)
		}
		if !l.lists[k] {
			return nil, fmt.Errorf("%s: lists: unknown list %q (declare it in an app's lists)", file, k)
		}
		sc.lists[k] = v
	}
	clock := sj.Clock
	if clock == "" {
		clock = "9:41"
	}
	var hh, mm int
	if _, err := fmt.Sscanf(clock, "%d:%d", &hh, &mm); err != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return nil, fmt.Errorf("%s: clock %q is not H:MM", file, clock)
	}
	sc.clock = hh*60 + mm
	if err := l.checkOpens(); err != nil {
		return nil, err
	}
	if sj.Success == nil {
		return nil, fmt.Errorf("%s: no success predicate", file)
	}
	if err := l.loadSuccess(file, sj.Success); err != nil {
		return nil, err
	}
	return sc, nil
}

func (l *loader) loadSuccess(file string, s *successJSON) error {
	sp := &l.sc.success
	if len(s.If) == 0 && s.Screen == "" && s.App == "" && s.ListHas == nil {
		return fmt.Errorf("%s: success predicate is empty (use if, screen, app or list_has)", file)
	}
	cs, err := parseConds(s.If)
	if err != nil {
		return fmt.Errorf("%s: success: %w", file, err)
	}
	for _, c := range cs {
		if !l.decl[c.name] {
			return fmt.Errorf("%s: success: condition %q names unknown variable %q", file, c.src, c.name)
		}
	}
	sp.ifc = cs
	if s.Screen != "" {
		if sp.screen, err = l.screenRef(s.Screen, nil); err != nil {
			return fmt.Errorf("%s: success: %w", file, err)
		}
	}
	if s.App != "" {
		found := false
		for _, a := range l.sc.apps {
			found = found || a.pkg == s.App
		}
		if !found {
			return fmt.Errorf("%s: success: app %q is not the package of any app of the scenario", file, s.App)
		}
		sp.app = s.App
	}
	if s.ListHas != nil {
		if !l.lists[s.ListHas.List] {
			return fmt.Errorf("%s: success: list_has: unknown list %q", file, s.ListHas.List)
		}
		if len(s.ListHas.Item) == 0 {
			return fmt.Errorf("%s: success: list_has: no item fields to match", file)
		}
		sp.listName, sp.listItem = s.ListHas.List, s.ListHas.Item
	}
	return nil
}

// declareApp reads apps/NAME/app.json and declares its state.
func (l *loader) declareApp(name string) (*appJSON, error) {
	if !isName(name) {
		return nil, fmt.Errorf("app name %q is not a name", name)
	}
	file := path.Join("apps", name, "app.json")
	var aj appJSON
	if err := decodeStrict(l.fsys, file, &aj); err != nil {
		return nil, err
	}
	if aj.Label == "" || aj.Package == "" {
		return nil, fmt.Errorf("%s: label and package are required", file)
	}
	if err := l.declare(file, aj.State, aj.Lists); err != nil {
		return nil, err
	}
	return &aj, nil
}

// declare adds the variables and lists a file declares.
func (l *loader) declare(file string, state map[string]string, lists map[string][]map[string]string) error {
	for k, v := range state {
		if !isName(k) || strings.HasPrefix(k, "item.") || k == "text" || k == "clock" {
			return fmt.Errorf("%s: state: %q cannot be a variable name", file, k)
		}
		if l.decl[k] {
			return fmt.Errorf("%s: state: variable %q is declared twice", file, k)
		}
		l.decl[k] = true
		l.sc.vars[k] = v
	}
	for k, v := range lists {
		if err := checkEntries(v); err != nil {
			return fmt.Errorf("%s: lists: %s%w", file, k, err)
		}
		if k == appsList {
			return fmt.Errorf("%s: lists: %q is a built-in list (the scenario's launchable apps); choose another name", file, k)
		}
		if l.lists[k] {
			return fmt.Errorf("%s: lists: list %q is declared twice", file, k)
		}
		l.lists[k] = true
		l.sc.lists[k] = v
	}
	return nil
}

// checkEntries rejects null list entries, which would have no fields to
// show or change.
func checkEntries(items []map[string]string) error {
	for i, it := range items {
		if it == nil {
			return fmt.Errorf("[%d] is null", i)
		}
	}
	return nil
}

// loadApp loads the screens of a declared app.
func (l *loader) loadApp(name string, aj *appJSON) (*appDef, error) {
	dir := path.Join("apps", name)
	file := path.Join(dir, "app.json")
	a := &appDef{name: name, label: aj.Label, pkg: aj.Package, aliases: aj.Aliases, hidden: aj.Hidden, screens: map[string]*screenDef{}}
	if len(aj.Screens) == 0 {
		return nil, fmt.Errorf("%s: no screens", file)
	}
	ids := make([]string, 0, len(aj.Screens))
	for id := range aj.Screens {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !isName(id) {
			return nil, fmt.Errorf("%s: screen id %q is not a name", file, id)
		}
		a.screens[id] = &screenDef{app: a, id: name + ":" + id}
	}
	for _, id := range ids {
		if err := l.loadScreen(a.screens[id], dir, file, aj.Screens[id], a); err != nil {
			return nil, err
		}
	}
	launch := aj.Launch
	if launch == "" {
		return nil, fmt.Errorf("%s: no launch screen", file)
	}
	if a.launch = a.screens[launch]; a.launch == nil {
		return nil, fmt.Errorf("%s: launch screen %q is not defined", file, launch)
	}
	return a, nil
}

func (l *loader) loadSystem() error {
	file := "system/system.json"
	var sj systemJSON
	if err := decodeStrict(l.fsys, file, &sj); err != nil {
		return err
	}
	if sj.Package == "" {
		return fmt.Errorf("%s: no package", file)
	}
	sys := &appDef{name: "system", label: "System UI", pkg: sj.Package, hidden: true, screens: map[string]*screenDef{}}
	l.sys = sys
	if err := l.declare(file, sj.State, nil); err != nil {
		return err
	}
	ids := make([]string, 0, len(sj.Screens))
	for id := range sj.Screens {
		if !isName(id) {
			return fmt.Errorf("%s: screen id %q is not a name", file, id)
		}
		ids = append(ids, id)
		sys.screens[id] = &screenDef{app: sys, id: "system:" + id}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := l.loadScreen(sys.screens[id], "system", file, sj.Screens[id], sys); err != nil {
			return err
		}
	}
	for i, o := range sj.Overlays {
		s := &screenDef{app: sys, id: fmt.Sprintf("system:overlay%d", i)}
		if err := l.loadScreen(s, "system", file, o, sys); err != nil {
			return err
		}
		l.sc.overlays = append(l.sc.overlays, s)
	}
	return nil
}

func (l *loader) loadScreen(s *screenDef, dir, file string, sj *screenJSON, a *appDef) error {
	where := fmt.Sprintf("%s: screen %q", file, s.id)
	if sj == nil || sj.File == "" {
		return fmt.Errorf("%s: no file", where)
	}
	s.file = path.Join(dir, sj.File)
	if !fs.ValidPath(s.file) {
		return fmt.Errorf("%s: file %q is outside the fixtures", where, sj.File)
	}
	data, err := fs.ReadFile(l.fsys, s.file)
	if err != nil {
		return fmt.Errorf("%s: screen file: %w", where, err)
	}
	s.windows, err = parseScreen(data, a.pkg)
	if err != nil {
		return fmt.Errorf("%s: %w", s.file, err)
	}
	s.fullscreen = sj.Fullscreen
	// Every name a template mentions must be declared, so a typo shows at
	// load time instead of as an empty string on screen.
	var inputs []string
	for _, w := range s.windows {
		var bad error
		w.walk(func(n *tnode) {
			if bad != nil {
				return
			}
			for i := range nAttrs {
				for _, ref := range n.attrs[i].refs() {
					bad = l.checkRef(ref, n, true, false)
					if bad != nil {
						bad = fmt.Errorf("%s: line %d: attribute %s: %w", s.file, n.line, attrNames[i], bad)
						return
					}
				}
			}
			var cs []cond
			cs = append(cs, n.ifc...)
			for i := range nAttrs {
				cs = append(cs, n.bconds[i]...)
			}
			for _, c := range cs {
				if bad = l.checkRef(c.name, n, true, false); bad != nil {
					bad = fmt.Errorf("%s: line %d: condition %q: %w", s.file, n.line, c.src, bad)
					return
				}
			}
			if n.input != "" {
				if !l.decl[n.input] {
					bad = fmt.Errorf("%s: line %d: sim-input: unknown variable %q", s.file, n.line, n.input)
					return
				}
				inputs = append(inputs, n.input)
			}
			if n.each != "" && !l.lists[n.each] {
				bad = fmt.Errorf("%s: line %d: sim-each: unknown list %q", s.file, n.line, n.each)
			}
		})
		if bad != nil {
			return bad
		}
	}
	if sj.Focus != "" {
		if !slices.Contains(inputs, sj.Focus) {
			return fmt.Errorf("%s: focus %q is not the sim-input of any field in %s", where, sj.Focus, s.file)
		}
		s.focus = sj.Focus
	}
	for i, hj := range sj.OnTap {
		if err := l.attach(s, fmt.Sprintf("%s: on_tap[%d]", where, i), hj, false, inputs); err != nil {
			return err
		}
	}
	for i, hj := range sj.OnLong {
		if err := l.attach(s, fmt.Sprintf("%s: on_long_press[%d]", where, i), hj, true, inputs); err != nil {
			return err
		}
	}
	s.keys = map[string]*handler{}
	for k, hj := range sj.Keys {
		if _, ok := action.Keys[k]; !ok {
			return fmt.Errorf("%s: keys: unknown key %q (known: %s)", where, k, strings.Join(action.KeyNames(), ", "))
		}
		h, err := l.handler(s, fmt.Sprintf("%s: keys.%s", where, k), hj, nil, inputs)
		if err != nil {
			return err
		}
		s.keys[k] = h
	}
	s.swipes = map[string]*handler{}
	for d, hj := range sj.Swipes {
		if !slices.Contains(action.Directions, d) {
			return fmt.Errorf("%s: swipes: unknown direction %q (known: %s)", where, d, strings.Join(action.Directions, ", "))
		}
		h, err := l.handler(s, fmt.Sprintf("%s: swipes.%s", where, d), hj, nil, inputs)
		if err != nil {
			return err
		}
		s.swipes[d] = h
	}
	return nil
}

// checkRef checks a name used in a template or condition.
func (l *loader) checkRef(name string, n *tnode, inTemplate, tapped bool) error {
	if f, ok := strings.CutPrefix(name, "item."); ok {
		switch each := eachList(n); {
		case each == "":
			return fmt.Errorf("%q is used outside a sim-each item", name)
		case f == "":
			return fmt.Errorf("%q names no field", name)
		case each == appsList && !slices.Contains(appsFields, f):
			return fmt.Errorf("%q: the entries of the built-in list %q have the fields %s", name, appsList, strings.Join(appsFields, ", "))
		}
		return nil
	}
	if name == "text" && tapped {
		return nil
	}
	if !l.decl[name] {
		return fmt.Errorf("unknown variable %q", name)
	}
	return nil
}

// eachList is the sim-each list of the item n is in, or "".
func eachList(n *tnode) string {
	for p := n; p != nil; p = p.parent {
		if p.each != "" {
			return p.each
		}
	}
	return ""
}

// attach resolves a tap handler's target in the screen's templates and
// attaches the handler to the clickable node that receives the touch.
func (l *loader) attach(s *screenDef, where string, hj *handlerJSON, long bool, inputs []string) error {
	if hj == nil || hj.Target == nil || (hj.Target.ID == "" && hj.Target.Text == "" && hj.Target.Desc == "") {
		return fmt.Errorf("%s: target needs id, text or desc", where)
	}
	sel := *hj.Target
	var matched []*tnode
	for _, w := range s.windows {
		w.walk(func(n *tnode) {
			if (sel.ID == "" || n.constAttr(aResourceID) == sel.ID) &&
				(sel.Text == "" || n.constAttr(aText) == sel.Text) &&
				(sel.Desc == "" || n.constAttr(aDesc) == sel.Desc) {
				matched = append(matched, n)
			}
		})
	}
	if len(matched) == 0 {
		return fmt.Errorf("%s: unknown target %s: no node in %s matches", where, selString(sel), s.file)
	}
	want := aClickable
	if long {
		want = aLongClickable
	}
	var targets []*tnode
	for _, m := range matched {
		t := m
		for t != nil && t.constAttr(want) != "true" {
			t = t.parent
		}
		if t == nil {
			return fmt.Errorf("%s: target %s: %s is not %s and has no %s ancestor, so a phone would ignore a tap on it", where, selString(sel), m.describe(), attrNames[want], attrNames[want])
		}
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	for _, t := range targets {
		h, err := l.handler(s, where, hj, t, inputs)
		if err != nil {
			return err
		}
		if long {
			t.long = append(t.long, h)
		} else {
			t.tap = append(t.tap, h)
		}
	}
	return nil
}

func selString(s selectorJSON) string {
	var p []string
	if s.ID != "" {
		p = append(p, "id="+fmtQ(s.ID))
	}
	if s.Text != "" {
		p = append(p, "text="+fmtQ(s.Text))
	}
	if s.Desc != "" {
		p = append(p, "desc="+fmtQ(s.Desc))
	}
	return "{" + strings.Join(p, " ") + "}"
}

func fmtQ(s string) string { return fmt.Sprintf("%q", s) }

// handler builds a handler; node is the node it is attached to (nil for
// key and swipe handlers), which decides whether item.* and text exist.
func (l *loader) handler(s *screenDef, where string, hj *handlerJSON, node *tnode, inputs []string) (*handler, error) {
	if hj == nil {
		return nil, fmt.Errorf("%s: the handler is null", where)
	}
	h := &handler{where: where, toggle: hj.Toggle, toggleItem: hj.ToggleItem, key: hj.Key, back: hj.Back, home: hj.Home}
	if node != nil {
		h.itemList = eachList(node)
	}
	l.handlers = append(l.handlers, h)
	ref := func(name string) error {
		if node == nil {
			if strings.HasPrefix(name, "item.") || name == "text" {
				return fmt.Errorf("%q is only defined in tap handlers", name)
			}
			if !l.decl[name] {
				return fmt.Errorf("unknown variable %q", name)
			}
			return nil
		}
		return l.checkRef(name, node, false, true)
	}
	var err error
	if h.ifc, err = parseConds(hj.If); err != nil {
		return nil, fmt.Errorf("%s: if: %w", where, err)
	}
	for _, c := range h.ifc {
		if err := ref(c.name); err != nil {
			return nil, fmt.Errorf("%s: if %q: %w", where, c.src, err)
		}
	}
	keys := make([]string, 0, len(hj.Set))
	for k := range hj.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !l.decl[k] || k == "clock" {
			return nil, fmt.Errorf("%s: set: unknown variable %q", where, k)
		}
		t, err := parseTmpl(hj.Set[k])
		if err != nil {
			return nil, fmt.Errorf("%s: set %s: %w", where, k, err)
		}
		for _, r := range t.refs() {
			if err := ref(r); err != nil {
				return nil, fmt.Errorf("%s: set %s: %w", where, k, err)
			}
		}
		h.set = append(h.set, kv{k, t})
	}
	for _, v := range hj.Toggle {
		if !l.decl[v] || v == "clock" {
			return nil, fmt.Errorf("%s: toggle: unknown variable %q", where, v)
		}
	}
	if hj.ToggleItem != "" {
		if err := ref("item." + hj.ToggleItem); err != nil {
			return nil, fmt.Errorf("%s: toggle_item: %w", where, err)
		}
		if h.itemList == appsList {
			return nil, fmt.Errorf("%s: toggle_item: the built-in list %q cannot be changed", where, appsList)
		}
	}
	if hj.Append != nil {
		if !l.lists[hj.Append.List] {
			return nil, fmt.Errorf("%s: append: unknown list %q", where, hj.Append.List)
		}
		if hj.Append.List == appsList {
			return nil, fmt.Errorf("%s: append: the built-in list %q cannot be changed", where, appsList)
		}
		h.appendTo = hj.Append.List
		fields := make([]string, 0, len(hj.Append.Item))
		for k := range hj.Append.Item {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		for _, k := range fields {
			t, err := parseTmpl(hj.Append.Item[k])
			if err != nil {
				return nil, fmt.Errorf("%s: append %s: %w", where, k, err)
			}
			for _, r := range t.refs() {
				if err := ref(r); err != nil {
					return nil, fmt.Errorf("%s: append %s: %w", where, k, err)
				}
			}
			h.appendItem = append(h.appendItem, kv{k, t})
		}
	}
	if hj.Focus != "" {
		if !slices.Contains(inputs, hj.Focus) {
			return nil, fmt.Errorf("%s: focus %q is not the sim-input of any field in %s", where, hj.Focus, s.file)
		}
		h.focus = hj.Focus
	}
	if hj.Key != "" {
		if _, ok := action.Keys[hj.Key]; !ok {
			return nil, fmt.Errorf("%s: unknown key %q", where, hj.Key)
		}
	}
	nav := 0
	for _, b := range []bool{hj.Go != "", hj.Replace != "", hj.Back, hj.Home, hj.Open != "", hj.Key != ""} {
		if b {
			nav++
		}
	}
	if nav > 1 {
		return nil, fmt.Errorf("%s: use at most one of go, replace, back, home, open and key", where)
	}
	if strings.Contains(hj.Open, "${") {
		if h.openT, err = openTmpl(hj.Open, node, ref); err != nil {
			return nil, fmt.Errorf("%s: open %q: %w", where, hj.Open, err)
		}
	}
	// Screen and app references may point at apps loaded later.
	l.fixups = append(l.fixups, func() error {
		var err error
		if hj.Go != "" {
			if h.goTo, err = l.screenRef(hj.Go, s.app); err != nil {
				return fmt.Errorf("%s: go: %w", where, err)
			}
		}
		if hj.Replace != "" {
			if h.replace, err = l.screenRef(hj.Replace, s.app); err != nil {
				return fmt.Errorf("%s: replace: %w", where, err)
			}
		}
		if hj.Open != "" && h.openT == nil {
			if h.open = l.apps[hj.Open]; h.open == nil {
				return fmt.Errorf("%s: open: unknown app %q (not among the scenario's apps)", where, hj.Open)
			}
		}
		return nil
	})
	return h, nil
}

// openTmpl parses a templated open target. It may name the app only by
// fields of the tapped list entry, so that checkOpens can check every app
// it can open at load time.
func openTmpl(src string, node *tnode, ref func(string) error) (*tmpl, error) {
	if node == nil {
		return nil, errors.New("a templated app is only defined in tap handlers")
	}
	t, err := parseTmpl(src)
	if err != nil {
		return nil, err
	}
	for _, r := range t.refs() {
		if !strings.HasPrefix(r, "item.") {
			return nil, fmt.Errorf("%q is not a field of the tapped list entry (write ${item.FIELD}, e.g. ${item.name} in a sim-each=%q item)", r, appsList)
		}
		if err := ref(r); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// checkOpens checks that every entry of the list behind a templated open
// names an app of the scenario, once the scenario's lists are final, and
// that no handler changes those entries later.
func (l *loader) checkOpens() error {
	for _, h := range l.handlers {
		if h.openT == nil {
			continue
		}
		var fields []string
		for _, r := range h.openT.refs() {
			fields = append(fields, strings.TrimPrefix(r, "item."))
		}
		for _, o := range l.handlers {
			if o.appendTo == h.itemList {
				return fmt.Errorf("%s: open: %s appends to the list %q, whose entries name the app to open, so they could not be checked at load", h.where, o.where, h.itemList)
			}
			if o.toggleItem != "" && o.itemList == h.itemList && slices.Contains(fields, o.toggleItem) {
				return fmt.Errorf("%s: open: %s toggles the field %q of the list %q, which names the app to open", h.where, o.where, o.toggleItem, h.itemList)
			}
		}
		none := envFunc(func(string) (string, bool) { return "", false })
		for i, it := range l.sc.lists[h.itemList] {
			name := h.openT.expand(itemEnv{base: none, item: it})
			if l.apps[name] == nil {
				return fmt.Errorf("%s: open: entry %d of the list %q names the app %q, which is not among the scenario's apps %v", h.where, i, h.itemList, name, slices.Sorted(maps.Keys(l.apps)))
			}
		}
	}
	return nil
}

// launcherEntries are the entries of the built-in list appsList: every
// app of the scenario that open_app knows, except the home app (a launcher
// does not list itself), sorted by label as a launcher's app drawer is.
func launcherEntries(sc *scenario) []map[string]string {
	var apps []*appDef
	for _, a := range sc.apps {
		if !a.hidden && a != sc.home {
			apps = append(apps, a)
		}
	}
	slices.SortFunc(apps, func(a, b *appDef) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.label), strings.ToLower(b.label)), strings.Compare(a.label, b.label), strings.Compare(a.name, b.name))
	})
	out := make([]map[string]string, len(apps))
	for i, a := range apps {
		out[i] = map[string]string{"name": a.name, "label": a.label, "package": a.pkg}
	}
	return out
}

// openTarget is the app a handler opens when it runs in e, or nil.
func (sc *scenario) openTarget(h *handler, e env) *appDef {
	if h.openT != nil {
		return sc.byName[h.openT.expand(e)]
	}
	return h.open
}

// screenRef resolves "screen" (in app from) or "app:screen".
func (l *loader) screenRef(ref string, from *appDef) (*screenDef, error) {
	appName, id, ok := strings.Cut(ref, ":")
	a := from
	if ok {
		a = l.apps[appName]
		if appName == "system" {
			a = l.sys
		}
		if a == nil {
			return nil, fmt.Errorf("unknown target %q: no app %q in the scenario", ref, appName)
		}
	} else {
		id = appName
		if a == nil {
			return nil, fmt.Errorf("unknown target %q: write it as app:screen", ref)
		}
	}
	s := a.screens[id]
	if s == nil {
		return nil, fmt.Errorf("unknown target %q: app %q has no screen %q", ref, a.name, id)
	}
	return s, nil
}

func checkMeta(m *Meta) error {
	switch m.Difficulty {
	case "", "easy", "medium", "hard":
	default:
		return fmt.Errorf("difficulty %q is not easy, medium or hard", m.Difficulty)
	}
	if m.HumanSteps < 0 {
		return fmt.Errorf("human_steps must not be negative, not %d", m.HumanSteps)
	}
	for _, a := range m.Answer {
		if strings.TrimSpace(a) == "" {
			return errors.New("an answer is empty")
		}
	}
	return nil
}
