// Package simulator implements device.Device with scripted phones: apps made
// of uiautomator XML screen templates, state that shows in later dumps,
// transitions on taps, keys, swipes and app launches, and a success
// predicate per task. The scenarios ship in the fixtures package; the format
// is described in fixtures/README.md.
package simulator

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/internal/editdist"
)

// ClockResourceID is the resource-id of the status bar clock, which
// advances one minute with every dump as a live phone's would between
// steps, so screen fingerprints must leave it out.
const ClockResourceID = "com.android.systemui:id/clock"

// Phone is a simulated phone running one scenario. It is safe for
// concurrent use.
type Phone struct {
	mu        sync.Mutex
	sc        *scenario
	vars      map[string]string
	lists     map[string][]map[string]string
	stack     []*frame
	minute    int // minutes after midnight shown by the status bar clock
	actions   []string
	typed     []string
	dumps     int
	failDumps int
	delay     time.Duration
}

// frame is one screen on the back stack, with its own scroll positions and
// focused field, as an Android activity keeps them.
type frame struct {
	screen *screenDef
	scroll map[string]int
	focus  string
}

var _ device.Device = (*Phone)(nil)

func newPhone(sc *scenario) *Phone {
	p := &Phone{
		sc:     sc,
		vars:   maps.Clone(sc.vars),
		lists:  map[string][]map[string]string{},
		minute: sc.clock,
	}
	for k, items := range sc.lists {
		cp := make([]map[string]string, len(items))
		for i, it := range items {
			cp[i] = maps.Clone(it)
		}
		p.lists[k] = cp
	}
	p.stack = []*frame{newFrame(sc.home.launch)}
	if sc.start != sc.home.launch {
		p.stack = append(p.stack, newFrame(sc.start))
	}
	return p
}

func newFrame(s *screenDef) *frame {
	return &frame{screen: s, scroll: map[string]int{}, focus: s.focus}
}

// Info returns the scenario's name, task and description.
func (p *Phone) Info() Info { return p.sc.info }

// Meta returns the scenario's benchmark data (its "eval" object).
func (p *Phone) Meta() Meta {
	m := p.sc.meta
	m.Answer = slices.Clone(m.Answer)
	return m
}

// Task returns the scenario's task.
func (p *Phone) Task() string { return p.sc.info.Task }

// Packages lists the packages of the scenario's apps, sorted, as
// `pm list packages` would on a phone.
func (p *Phone) Packages() []string {
	out := make([]string, 0, len(p.sc.byPackage))
	for pkg := range p.sc.byPackage {
		out = append(out, pkg)
	}
	sort.Strings(out)
	return out
}

// lookup implements env over the phone's state; the caller holds mu.
func (p *Phone) lookup(name string) (string, bool) {
	if name == clockVar {
		return fmt.Sprintf("%d:%02d", p.minute/60%24, p.minute%60), true
	}
	v, ok := p.vars[name]
	return v, ok
}

func (p *Phone) top() *frame { return p.stack[len(p.stack)-1] }

// wait applies the configured delay, as a real device takes time to answer.
func (p *Phone) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	d := p.delay
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return clock.Sleep(ctx, d)
}

// SetDelay makes every Device call take d before it answers.
func (p *Phone) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// FailNextDumps makes the next n calls of Dump fail with
// device.ErrDumpNotIdle, as uiautomator does on a screen that keeps
// animating.
func (p *Phone) FailNextDumps(n int) {
	p.mu.Lock()
	p.failDumps = n
	p.mu.Unlock()
}

// Actions returns the log of the actions received, one per call, such as
// `tap(540, 1200)` or `type("droidgo")`. Dumps are not actions.
func (p *Phone) Actions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.actions)
}

// Typed returns the literal text of every Type call, in order, whether or
// not a field had the focus, so tests can check exactly what arrived.
func (p *Phone) Typed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.typed)
}

// Dumps returns how many dumps succeeded.
func (p *Phone) Dumps() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dumps
}

// Screen returns the current screen as "app:screen", e.g. "settings:internet".
func (p *Phone) Screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.top().screen.id
}

// Var returns a state variable, for tests and diagnostics.
func (p *Phone) Var(name string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookup(name)
}

// List returns a copy of a state list, for tests and diagnostics.
func (p *Phone) List(name string) []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]map[string]string, len(p.lists[name]))
	for i, it := range p.lists[name] {
		out[i] = maps.Clone(it)
	}
	return out
}

// State is what a phone's scenario has come to: the back stack of
// screens ("app:screen", bottom first), the state variables and the state
// lists. Two phones of one scenario in the same State show the same
// screens and answer the same (but for the status bar clock).
type State struct {
	Stack []string                       `json:"stack"`
	Vars  map[string]string              `json:"vars"`
	Lists map[string][]map[string]string `json:"lists"`
}

// State returns a copy of the phone's state.
func (p *Phone) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := State{Vars: maps.Clone(p.vars), Lists: map[string][]map[string]string{}}
	for _, f := range p.stack {
		st.Stack = append(st.Stack, f.screen.id)
	}
	for k, items := range p.lists {
		if k == appsList {
			continue // built from the scenario, never changed
		}
		cp := make([]map[string]string, len(items))
		for i, it := range items {
			cp[i] = maps.Clone(it)
		}
		st.Lists[k] = cp
	}
	return st
}

// Success reports whether the scenario's success predicate holds now.
func (p *Phone) Success() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := &p.sc.success
	if !allHold(sp.ifc, envFunc(p.lookup)) {
		return false
	}
	if sp.screen != nil && p.top().screen != sp.screen {
		return false
	}
	if sp.app != "" && p.top().screen.app.pkg != sp.app {
		return false
	}
	if sp.listName != "" {
		found := false
		for _, it := range p.lists[sp.listName] {
			ok := true
			for k, v := range sp.listItem {
				ok = ok && it[k] == v
			}
			found = found || ok
		}
		if !found {
			return false
		}
	}
	return true
}

type envFunc func(string) (string, bool)

func (f envFunc) lookup(name string) (string, bool) { return f(name) }

// render lays out the current screen and the system bars; the caller holds mu.
func (p *Phone) render() []*rnode {
	f := p.top()
	rc := &renderCtx{base: envFunc(p.lookup), scroll: f.scroll, focus: f.focus, lists: p.lists, vars: p.vars}
	var out []*rnode
	for _, w := range f.screen.windows {
		if r := rc.render(w, nil, 0, nil, "", 0); r != nil {
			r.screen = f.screen
			out = append(out, r)
		}
	}
	if !f.screen.fullscreen {
		sys := &renderCtx{base: envFunc(p.lookup), scroll: map[string]int{}, lists: p.lists, vars: p.vars}
		for _, o := range p.sc.overlays {
			for _, w := range o.windows {
				if r := sys.render(w, nil, 0, nil, "", 0); r != nil {
					r.screen = o
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// Dump returns the current screen as uiautomator XML.
func (p *Phone) Dump(ctx context.Context) ([]byte, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failDumps > 0 {
		p.failDumps--
		return nil, device.ErrDumpNotIdle
	}
	var b bytes.Buffer
	writeXML(&b, p.render(), 0, p.sc.scale)
	p.dumps++
	p.minute = (p.minute + 1) % (24 * 60)
	return b.Bytes(), nil
}

// Size returns the screen size.
func (p *Phone) Size(ctx context.Context) (int, int, error) {
	if err := p.wait(ctx); err != nil {
		return 0, 0, err
	}
	return p.sc.w, p.sc.h, nil
}

// Density returns the screen density in dpi, as `wm density` reports it.
func (p *Phone) Density() int { return p.sc.density }

// CurrentApp returns the package of the app in the foreground.
func (p *Phone) CurrentApp(ctx context.Context) (string, error) {
	if err := p.wait(ctx); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.top().screen.app.pkg, nil
}

// Tap taps at (x, y). The touch goes to the deepest clickable node under
// the point; if nothing there handles it, nothing happens.
func (p *Phone) Tap(ctx context.Context, x, y int) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("tap(%d, %d)", x, y)
	p.touch(x, y, false)
	return nil
}

// LongPress long-presses at (x, y).
func (p *Phone) LongPress(ctx context.Context, x, y int) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("long_press(%d, %d)", x, y)
	p.touch(x, y, true)
	return nil
}

func (p *Phone) log(format string, args ...any) {
	p.actions = append(p.actions, fmt.Sprintf(format, args...))
}

// touch delivers a tap or long press at (x, y) in the phone's pixels; the
// caller holds mu.
func (p *Phone) touch(x, y int, long bool) {
	if x < 0 || y < 0 || x >= p.sc.w || y >= p.sc.h {
		return
	}
	x, y = p.sc.unscale(x), p.sc.unscale(y)
	windows := p.render()
	// Later windows (the system bars) are on top.
	for i := len(windows) - 1; i >= 0; i-- {
		n := hit(windows[i], x, y)
		if n == nil {
			continue
		}
		want := aClickable
		if long {
			want = aLongClickable
		}
		for ; n != nil; n = n.parent {
			if n.vals[want] == "true" {
				break
			}
		}
		if n == nil || n.vals[aEnabled] != "true" {
			return // nothing under the finger takes the touch
		}
		hs := n.t.tap
		if long {
			hs = n.t.long
		}
		e := itemEnv{base: envFunc(p.lookup), item: n.item, text: firstText(n)}
		for _, h := range hs {
			if allHold(h.ifc, e) {
				p.run(h, e, n)
				return
			}
		}
		if !long && n.t.input != "" {
			p.top().focus = n.t.input // a tapped field takes the focus
		}
		return
	}
}

// run carries out a handler; the caller holds mu.
func (p *Phone) run(h *handler, e itemEnv, n *rnode) {
	vals := make([]string, len(h.set))
	for i, s := range h.set {
		vals[i] = s.v.expand(e) // all values see the state before the handler
	}
	for i, s := range h.set {
		p.vars[s.k] = vals[i]
	}
	for _, v := range h.toggle {
		p.vars[v] = strconv.FormatBool(!truthy(p.vars[v]))
	}
	if h.toggleItem != "" && n != nil && n.item != nil {
		if items := p.lists[n.each]; n.itemIdx < len(items) {
			items[n.itemIdx][h.toggleItem] = strconv.FormatBool(!truthy(items[n.itemIdx][h.toggleItem]))
		}
	}
	if h.appendTo != "" {
		it := map[string]string{}
		for _, f := range h.appendItem {
			it[f.k] = f.v.expand(e)
		}
		p.lists[h.appendTo] = append(p.lists[h.appendTo], it)
	}
	if h.focus != "" {
		p.top().focus = h.focus
	}
	switch {
	case h.key != "":
		p.pressKey(h.key)
	case h.goTo != nil:
		p.stack = append(p.stack, newFrame(h.goTo))
	case h.replace != nil:
		p.stack[len(p.stack)-1] = newFrame(h.replace)
	case h.back:
		p.goBack()
	case h.home:
		p.goHome()
	case h.open != nil || h.openT != nil:
		if a := p.sc.openTarget(h, e); a != nil {
			p.launch(a)
		}
	}
}

func (p *Phone) goBack() {
	if len(p.stack) > 1 {
		p.stack = p.stack[:len(p.stack)-1]
	}
}

func (p *Phone) goHome() {
	p.stack = []*frame{newFrame(p.sc.home.launch)}
}

func (p *Phone) launch(a *appDef) {
	p.goHome()
	if a != p.sc.home {
		p.stack = append(p.stack, newFrame(a.launch))
	}
}

// Key presses a key by its action-space name.
func (p *Phone) Key(ctx context.Context, key string) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	if _, ok := action.Keys[key]; !ok {
		return fmt.Errorf("press %q: %w", key, device.ErrUnknownKey)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("key(%s)", key)
	p.pressKey(key)
	return nil
}

// pressKey runs a screen's key handler or the key's default; the caller
// holds mu.
func (p *Phone) pressKey(key string) {
	f := p.top()
	if h := f.screen.keys[key]; h != nil {
		e := itemEnv{base: envFunc(p.lookup)}
		if allHold(h.ifc, e) {
			p.run(h, e, nil)
			return
		}
	}
	switch key {
	case "back":
		p.goBack()
	case "home":
		p.goHome()
	case "delete":
		if f.focus != "" {
			v := p.vars[f.focus]
			_, size := utf8.DecodeLastRuneInString(v)
			p.vars[f.focus] = v[:len(v)-size]
		}
	}
}

// Type types text into the focused field. With no focused field the text
// goes nowhere, as on a phone.
func (p *Phone) Type(ctx context.Context, text string) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("type(%q)", text)
	p.typed = append(p.typed, text)
	f := p.top()
	if f.focus == "" {
		return nil
	}
	field := p.inputNode(f.screen, f.focus)
	v := p.vars[f.focus]
	for _, r := range text {
		if field != nil && field.digits && (r < '0' || r > '9') {
			continue
		}
		if field != nil && field.maxLen > 0 && utf8.RuneCountInString(v) >= field.maxLen {
			break
		}
		v += string(r)
	}
	p.vars[f.focus] = v
	return nil
}

func (p *Phone) inputNode(s *screenDef, name string) *tnode {
	var out *tnode
	for _, w := range s.windows {
		w.walk(func(n *tnode) {
			if out == nil && n.input == name {
				out = n
			}
		})
	}
	return out
}

// Swipe swipes from (x1, y1) to (x2, y2). A vertical swipe inside a list
// scrolls it by the distance moved; otherwise the screen's swipe handler for
// the direction, if any, runs.
func (p *Phone) Swipe(ctx context.Context, x1, y1, x2, y2 int, d time.Duration) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("swipe(%d, %d, %d, %d, %s)", x1, y1, x2, y2, d)
	x1, y1, x2, y2 = p.sc.unscale(x1), p.sc.unscale(y1), p.sc.unscale(x2), p.sc.unscale(y2)
	dx, dy := x2-x1, y2-y1
	const slop = 24 // below this a finger movement is not a swipe
	if max(abs(dx), abs(dy)) < slop {
		return nil
	}
	dir := "up"
	switch {
	case abs(dx) > abs(dy) && dx < 0:
		dir = "left"
	case abs(dx) > abs(dy):
		dir = "right"
	case dy > 0:
		dir = "down"
	}
	f := p.top()
	windows := p.render()
	// A swipe that starts on a system bar belongs to it (the status bar
	// pulls down the quick settings).
	for i := len(windows) - 1; i >= 0; i-- {
		w := windows[i]
		if w.screen == f.screen || !w.b.contains(x1, y1) {
			continue
		}
		if h := w.screen.swipes[dir]; h != nil {
			e := itemEnv{base: envFunc(p.lookup)}
			if allHold(h.ifc, e) {
				p.run(h, e, nil)
			}
		}
		return nil
	}
	if dir == "up" || dir == "down" {
		for _, w := range windows {
			if l := scrollerAt(w, x1, y1); l != nil {
				name := l.t.list
				maxOff := max(0, l.content-(l.b.y2-l.b.y1))
				old := f.scroll[name]
				f.scroll[name] = min(max(old-dy, 0), maxOff)
				if f.scroll[name] != old {
					return nil
				}
				break // at the end of the list the swipe goes to the screen
			}
		}
	}
	if h := f.screen.swipes[dir]; h != nil {
		e := itemEnv{base: envFunc(p.lookup)}
		if allHold(h.ifc, e) {
			p.run(h, e, nil)
		}
	}
	return nil
}

// scrollerAt returns the deepest scroll container under (x, y).
func scrollerAt(n *rnode, x, y int) *rnode {
	if !n.b.contains(x, y) {
		return nil
	}
	for _, c := range n.children {
		if s := scrollerAt(c, x, y); s != nil {
			return s
		}
	}
	if n.t.list != "" {
		return n
	}
	return nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// OpenApp launches an app by label, alias or package, case-insensitively.
func (p *Phone) OpenApp(ctx context.Context, nameOrPackage string) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("open_app(%q)", nameOrPackage)
	want := strings.ToLower(strings.TrimSpace(nameOrPackage))
	for _, a := range p.sc.apps {
		if a.hidden {
			continue
		}
		if want == strings.ToLower(a.label) || want == strings.ToLower(a.pkg) || slices.ContainsFunc(a.aliases, func(s string) bool { return strings.ToLower(s) == want }) {
			p.launch(a)
			return nil
		}
	}
	return fmt.Errorf("open app %q: %w; %s", nameOrPackage, device.ErrUnknownApp, p.suggest(want))
}

// suggest names the installed apps closest to want.
func (p *Phone) suggest(want string) string {
	type cand struct {
		label string
		d     int
	}
	var cs []cand
	var all []string
	for _, a := range p.sc.apps {
		if a.hidden {
			continue
		}
		all = append(all, a.label)
		best := -1
		for _, n := range append([]string{a.label, a.pkg}, a.aliases...) {
			n = strings.ToLower(n)
			d := editdist.Levenshtein(want, n)
			if want != "" && (strings.Contains(n, want) || strings.Contains(want, n)) {
				d = 0
			}
			if best < 0 || d < best {
				best = d
			}
		}
		if best <= max(2, utf8.RuneCountInString(want)/3) {
			cs = append(cs, cand{a.label, best})
		}
	}
	if len(cs) == 0 {
		return "installed apps: " + strings.Join(all, ", ")
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.label
	}
	return "did you mean " + strings.Join(names, " or ") + "?"
}
