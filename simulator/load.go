package simulator

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/fixtures"
)

// ErrUnknownScenario is wrapped by Load's error for a name that is no
// shipped scenario (a usage error for the commands).
var ErrUnknownScenario = errors.New("unknown scenario")

// The directories of fixtures that hold shipped scenarios: the task suite
// (TasksDir) and its scenarios' variants on perturbed phones
// (PerturbedDir: a list with one more row, a target moved, another
// density, the notification shade left open, a one-time dialog, a target
// that is gone), on which replays of the task suite's runs are checked.
// Names are unique across both.
const (
	TasksDir     = "scenarios"
	PerturbedDir = "perturbed"
)

// Load loads the shipped scenario called name (fixtures/scenarios/NAME or
// fixtures/perturbed/NAME).
func Load(name string) (*Phone, error) {
	if !isName(name) {
		return nil, fmt.Errorf("%w %q", ErrUnknownScenario, name)
	}
	if sc, ok := shipped.Load(name); ok {
		return newPhone(sc.(*scenario)), nil
	}
	dir := ""
	for _, d := range []string{TasksDir, PerturbedDir} {
		if _, err := fs.Stat(fixtures.FS, path.Join(d, name, "scenario.json")); err == nil {
			dir = path.Join(d, name)
			break
		}
	}
	if dir == "" {
		names, _ := scenarioNames(fixtures.FS, TasksDir)
		return nil, fmt.Errorf("%w %q (known: %s; variants on perturbed phones: fixtures/%s)", ErrUnknownScenario, name, strings.Join(names, ", "), PerturbedDir)
	}
	sc, err := loadScenario(fixtures.FS, dir)
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

// List returns the scenarios of the task suite shipped with droidgo,
// sorted by name.
func List() ([]Info, error) {
	return ListFS(fixtures.FS)
}

// ListPerturbed returns the shipped scenarios on perturbed phones
// (PerturbedDir), sorted by name.
func ListPerturbed() ([]Info, error) {
	return listDir(fixtures.FS, PerturbedDir)
}

// ListFS returns the scenarios under scenarios/ in fsys, sorted by name.
// Each is loaded fully, so a broken scenario is reported here too.
func ListFS(fsys fs.FS) ([]Info, error) {
	return listDir(fsys, TasksDir)
}

func listDir(fsys fs.FS, dir string) ([]Info, error) {
	names, err := scenarioNames(fsys, dir)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		sc, err := loadScenario(fsys, path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, sc.info)
	}
	return out, nil
}

func scenarioNames(fsys fs.FS, dir string) ([]string, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := fs.Stat(fsys, path.Join(dir, e.Name(), "scenario.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// clockVar is the built-in variable of the status bar time. Templates
// and conditions may read it; no file may declare, set or type into it.
const clockVar = "clock"

// reservedVar reports whether name cannot be declared as a state
// variable: the built-in clock, and the names tap handlers define
// (text, item.FIELD).
func reservedVar(name string) bool {
	return name == clockVar || name == "text" || strings.HasPrefix(name, "item.")
}

// loader holds what is being loaded and the declared variables.
type loader struct {
	fsys  fs.FS
	dir   string // the scenario's directory, whose own apps/ and system/ files come first
	sc    *scenario
	apps  map[string]*appDef
	sys   *appDef
	decl  map[string]bool // declared state variables (never clockVar)
	lists map[string]bool // declared state lists
	// refs are the screens and apps handlers name, for resolve
	refs []handlerRefs
	// every handler, for the checks that need them all
	handlers []*handler
}

// file is where the loader reads name, a file of apps/ or system/: the
// scenario's own version of it (DIR/apps/..., DIR/system/...) when the
// scenario directory has one, else the shared one. A scenario can so vary
// a screen or an app for itself alone.
func (l *loader) file(name string) string {
	own := path.Join(l.dir, name)
	if _, err := fs.Stat(l.fsys, own); err == nil {
		return own
	}
	return name
}

// readable reports whether templates and conditions may read the
// variable name: a declared one or the built-in clock.
func (l *loader) readable(name string) bool { return l.decl[name] || name == clockVar }

// settable reports whether handlers, the scenario's state and sim-input
// may write the variable name: only declared ones (reservedVar keeps the
// clock from being declared).
func (l *loader) settable(name string) bool { return l.decl[name] }

func loadScenario(fsys fs.FS, dir string) (*scenario, error) {
	file := path.Join(dir, "scenario.json")
	var sj scenarioJSON
	if err := decodeStrict(fsys, file, &sj); err != nil {
		return nil, err
	}
	l := &loader{fsys: fsys, dir: dir, apps: map[string]*appDef{}, decl: map[string]bool{}, lists: map[string]bool{appsList: true}}
	sc := &scenario{
		info:      Info{Name: path.Base(dir), Task: sj.Task, Description: sj.Description},
		vars:      map[string]string{},
		lists:     map[string][]map[string]string{},
		byPackage: map[string]*appDef{},
		byName:    l.apps,
		w:         sj.Width, h: sj.Height,
		density: sj.Density,
	}
	l.sc = sc
	if sc.density == 0 {
		sc.density = designDensity
	}
	if sc.density < minDensity || sc.density > maxDensity {
		return nil, fmt.Errorf("%s: density %d is not between %d and %d", file, sc.density, minDensity, maxDensity)
	}
	if sc.w == 0 && sc.h == 0 {
		sc.w, sc.h = sc.scale(designWidth), sc.scale(designHeight)
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
	if err := l.resolve(); err != nil {
		return nil, err
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
		if !l.settable(k) {
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
		if !l.readable(c.name) {
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
	file := l.file(path.Join("apps", name, "app.json"))
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
		if !isName(k) || reservedVar(k) {
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
	file := l.file(path.Join(dir, "app.json"))
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
	file := l.file("system/system.json")
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
	s.file = l.file(s.file)
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
				if !l.settable(n.input) {
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
	if !l.readable(name) {
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
			if !l.readable(name) {
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
		if !l.settable(k) {
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
		if !l.settable(v) {
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
	// Screens and apps may be loaded after this handler: resolve finds
	// them once everything is loaded.
	l.refs = append(l.refs, handlerRefs{h: h, from: s.app, where: where, goTo: hj.Go, replace: hj.Replace, open: hj.Open})
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
