package simulator

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// rect is a bounds rectangle [x1,y1][x2,y2].
type rect struct{ x1, y1, x2, y2 int }

func (r rect) contains(x, y int) bool { return x >= r.x1 && x < r.x2 && y >= r.y1 && y < r.y2 }
func (r rect) empty() bool            { return r.x2 <= r.x1 || r.y2 <= r.y1 }
func (r rect) intersect(o rect) rect {
	return rect{max(r.x1, o.x1), max(r.y1, o.y1), min(r.x2, o.x2), min(r.y2, o.y2)}
}
func (r rect) shift(dx, dy int) rect { return rect{r.x1 + dx, r.y1 + dy, r.x2 + dx, r.y2 + dy} }
func (r rect) String() string {
	return fmt.Sprintf("[%d,%d][%d,%d]", r.x1, r.y1, r.x2, r.y2)
}

func parseBounds(s string) (rect, error) {
	var r rect
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "[%d,%d][%d,%d]", &r.x1, &r.y1, &r.x2, &r.y2); err != nil {
		return r, fmt.Errorf("bounds %q: want [x1,y1][x2,y2]", s)
	}
	if r.x2 < r.x1 || r.y2 < r.y1 {
		return r, fmt.Errorf("bounds %q: the second corner is above or left of the first", s)
	}
	return r, nil
}

// Attributes of a node, in the order uiautomator writes them. index,
// drawing-order and display-id are computed, bounds is parsed separately.
const (
	aText = iota
	aResourceID
	aClass
	aPackage
	aDesc
	aCheckable
	aChecked
	aClickable
	aEnabled
	aFocusable
	aFocused
	aScrollable
	aLongClickable
	aPassword
	aSelected
	aHint
	nAttrs
)

var attrNames = [nAttrs]string{
	aText: "text", aResourceID: "resource-id", aClass: "class", aPackage: "package",
	aDesc: "content-desc", aCheckable: "checkable", aChecked: "checked", aClickable: "clickable",
	aEnabled: "enabled", aFocusable: "focusable", aFocused: "focused", aScrollable: "scrollable",
	aLongClickable: "long-clickable", aPassword: "password", aSelected: "selected", aHint: "hint",
}

var boolAttr = [nAttrs]bool{
	aCheckable: true, aChecked: true, aClickable: true, aEnabled: true, aFocusable: true,
	aFocused: true, aScrollable: true, aLongClickable: true, aPassword: true, aSelected: true,
}

func attrIndex(name string) int {
	for i, n := range attrNames {
		if n == name {
			return i
		}
	}
	return -1
}

// tnode is one node of a screen template.
type tnode struct {
	attrs    [nAttrs]tmpl
	bconds   [nAttrs][]cond // a boolean attribute written "?condition"
	bounds   rect
	ifc      []cond
	list     string // sim-list: a scrolling container of item children
	columns  int    // sim-columns: items of a sim-list laid out in a grid this wide
	each     string // sim-each: repeat this item for each entry of a state list
	input    string // sim-input: an editable field bound to this variable
	maxLen   int    // sim-maxlen
	digits   bool   // sim-digits: accepts only 0-9
	inItem   bool   // bounds are relative to the top of the enclosing list item
	line     int
	children []*tnode
	parent   *tnode

	tap  []*handler // handlers of taps on this node, in priority order
	long []*handler // handlers of long presses
}

func (t *tnode) constAttr(i int) string {
	if !t.attrs[i].isConst() {
		return ""
	}
	return t.attrs[i].expand(nil)
}

func (t *tnode) walk(f func(*tnode)) {
	f(t)
	for _, c := range t.children {
		c.walk(f)
	}
}

// describe names a node for error messages.
func (t *tnode) describe() string {
	var parts []string
	if s := t.constAttr(aResourceID); s != "" {
		parts = append(parts, "resource-id="+strconv.Quote(s))
	}
	if s := t.constAttr(aText); s != "" {
		parts = append(parts, "text="+strconv.Quote(s))
	}
	if s := t.constAttr(aDesc); s != "" {
		parts = append(parts, "content-desc="+strconv.Quote(s))
	}
	parts = append(parts, "class="+strconv.Quote(t.constAttr(aClass)))
	return fmt.Sprintf("node at line %d (%s)", t.line, strings.Join(parts, " "))
}

// maxColumns bounds sim-columns, far above any real grid, so that the
// columns' extent cannot overflow.
const maxColumns = 100

// parseScreen parses a screen template: uiautomator XML whose omitted
// attributes take Android's defaults, plus sim-* attributes for state.
func parseScreen(data []byte, pkg string) ([]*tnode, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var roots []*tnode
	var stack []*tnode
	sawHierarchy := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		line, _ := d.InputPos()
		if err != nil {
			return nil, fmt.Errorf("malformed XML: %w", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			switch {
			case tk.Name.Local == "hierarchy" && !sawHierarchy && len(stack) == 0:
				sawHierarchy = true
				continue
			case tk.Name.Local != "node":
				return nil, fmt.Errorf("line %d: unexpected element <%s> (want <node> inside <hierarchy>)", line, tk.Name.Local)
			case !sawHierarchy:
				return nil, fmt.Errorf("line %d: <node> outside <hierarchy>", line)
			}
			var parent *tnode
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			n, err := parseNode(tk, parent, pkg, line)
			if err != nil {
				return nil, err
			}
			if parent == nil {
				roots = append(roots, n)
			} else {
				parent.children = append(parent.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if tk.Name.Local == "node" {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(bytes.TrimSpace(tk)) > 0 {
				return nil, fmt.Errorf("line %d: unexpected text %q", line, bytes.TrimSpace(tk))
			}
		}
	}
	if !sawHierarchy {
		return nil, errors.New("no <hierarchy> element")
	}
	if len(roots) == 0 {
		return nil, errors.New("<hierarchy> has no <node>")
	}
	return roots, nil
}

func parseNode(tk xml.StartElement, parent *tnode, pkg string, line int) (*tnode, error) {
	n := &tnode{parent: parent, line: line}
	if parent != nil {
		n.inItem = parent.inItem || parent.list != ""
	}
	raw := [nAttrs]string{aEnabled: "true", aPackage: pkg}
	set := [nAttrs]bool{}
	var bounds string
	for _, a := range tk.Attr {
		name, v := a.Name.Local, a.Value
		if a.Name.Space != "" {
			return nil, fmt.Errorf("line %d: unknown attribute %s:%s", line, a.Name.Space, name)
		}
		var err error
		switch name {
		case "bounds":
			bounds = v
		case "index", "drawing-order", "display-id":
			return nil, fmt.Errorf("line %d: attribute %q is computed by the simulator; leave it out", line, name)
		case "sim-if":
			for _, s := range strings.Split(v, "&&") {
				c, err := parseCond(s)
				if err != nil {
					return nil, fmt.Errorf("line %d: sim-if: %w", line, err)
				}
				n.ifc = append(n.ifc, c)
			}
		case "sim-list":
			n.list = v
		case "sim-columns":
			n.columns, err = strconv.Atoi(v)
			if err != nil || n.columns <= 0 || n.columns > maxColumns {
				return nil, fmt.Errorf("line %d: sim-columns %q is not a number from 1 to %d", line, v, maxColumns)
			}
		case "sim-each":
			n.each = v
		case "sim-input":
			n.input = v
		case "sim-maxlen":
			n.maxLen, err = strconv.Atoi(v)
			if err != nil || n.maxLen <= 0 {
				return nil, fmt.Errorf("line %d: sim-maxlen %q is not a positive number", line, v)
			}
		case "sim-digits":
			n.digits = v == "true"
		default:
			i := attrIndex(name)
			if i < 0 {
				return nil, fmt.Errorf("line %d: unknown attribute %q", line, name)
			}
			raw[i], set[i] = v, true
		}
		if name == "sim-list" || name == "sim-each" || name == "sim-input" {
			if !isName(v) {
				return nil, fmt.Errorf("line %d: %s %q is not a name", line, name, v)
			}
		}
	}
	if !set[aClass] || raw[aClass] == "" {
		return nil, fmt.Errorf("line %d: <node> has no class", line)
	}
	if bounds == "" {
		return nil, fmt.Errorf("line %d: <node> has no bounds", line)
	}
	b, err := parseBounds(bounds)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", line, err)
	}
	n.bounds = b
	// Defaults as Android reports them: clickable views are focusable,
	// compound buttons are checkable, scroll containers are scrollable.
	if !set[aFocusable] {
		raw[aFocusable] = raw[aClickable]
	}
	if !set[aCheckable] {
		switch raw[aClass] {
		case "android.widget.Switch", "android.widget.CheckBox", "android.widget.RadioButton",
			"android.widget.ToggleButton", "android.widget.CheckedTextView", "com.google.android.material.switchmaterial.SwitchMaterial":
			raw[aCheckable] = "true"
		}
	}
	if !set[aScrollable] && n.list != "" {
		raw[aScrollable] = "true"
	}
	for i := range nAttrs {
		if c, ok := strings.CutPrefix(raw[i], "?"); ok && boolAttr[i] {
			for _, part := range strings.Split(c, "&&") {
				cc, err := parseCond(part)
				if err != nil {
					return nil, fmt.Errorf("line %d: attribute %s: %w", line, attrNames[i], err)
				}
				n.bconds[i] = append(n.bconds[i], cc)
			}
			continue
		}
		t, err := parseTmpl(raw[i])
		if err != nil {
			return nil, fmt.Errorf("line %d: attribute %s: %w", line, attrNames[i], err)
		}
		if boolAttr[i] && t.isConst() {
			if v := t.expand(nil); v != "" && v != "true" && v != "false" {
				return nil, fmt.Errorf("line %d: attribute %s=%q is not true or false", line, attrNames[i], v)
			}
		}
		n.attrs[i] = t
	}
	if n.each != "" && (parent == nil || parent.list == "") {
		return nil, fmt.Errorf("line %d: sim-each is only allowed on a direct child of a sim-list node", line)
	}
	if parent != nil && parent.list != "" && n.bounds.y1 != 0 {
		return nil, fmt.Errorf("line %d: a list item's bounds are relative to the item's top, so y1 must be 0 (got %s)", line, n.bounds)
	}
	if n.list != "" && n.inItem {
		return nil, fmt.Errorf("line %d: sim-list inside a list item is not supported", line)
	}
	if n.columns > 0 && n.list == "" {
		return nil, fmt.Errorf("line %d: sim-columns is only allowed on a sim-list node", line)
	}
	// A grid item is drawn in the first column and repeated to the right
	// at its own width, so every column must fit in the list.
	if parent != nil && parent.columns > 1 {
		if right := n.bounds.x2 + (parent.columns-1)*(n.bounds.x2-n.bounds.x1); right > parent.bounds.x2 {
			return nil, fmt.Errorf("line %d: %d columns of items %d wide from x=%d end at x=%d, right of the sim-list's %s", line, parent.columns, n.bounds.x2-n.bounds.x1, n.bounds.x1, right, parent.bounds)
		}
	}
	return n, nil
}

// rnode is a rendered node: a template node with its values for the
// current state and its absolute, clipped bounds.
type rnode struct {
	t        *tnode
	vals     [nAttrs]string
	b        rect
	item     map[string]string // the list entry it was rendered from
	each     string            // the state list of item
	itemIdx  int
	content  int        // total height of a scroll container's items
	screen   *screenDef // on a window root: the screen it belongs to
	children []*rnode
	parent   *rnode
}

// itemEnv adds a list item's fields (item.NAME) to a base environment.
type itemEnv struct {
	base env
	item map[string]string
	text string
}

func (e itemEnv) lookup(name string) (string, bool) {
	if f, ok := strings.CutPrefix(name, "item."); ok && e.item != nil {
		v, ok := e.item[f]
		return v, ok
	}
	if name == "text" {
		return e.text, true
	}
	return e.base.lookup(name)
}

// renderCtx carries what rendering needs besides the template.
type renderCtx struct {
	base   env
	scroll map[string]int
	focus  string
	lists  map[string][]map[string]string
	vars   map[string]string
}

func (rc *renderCtx) render(t *tnode, parent *rnode, dy int, item map[string]string, each string, idx int) *rnode {
	return rc.renderAt(t, parent, 0, dy, item, each, idx)
}

// renderAt renders t moved by (dx, dy) if it is inside a list item: dy is
// the item's top, dx its column's offset in a grid.
func (rc *renderCtx) renderAt(t *tnode, parent *rnode, dx, dy int, item map[string]string, each string, idx int) *rnode {
	e := itemEnv{base: rc.base, item: item}
	if !allHold(t.ifc, e) {
		return nil
	}
	r := &rnode{t: t, parent: parent, item: item, each: each, itemIdx: idx}
	for i := range nAttrs {
		v := t.attrs[i].expand(e)
		if t.bconds[i] != nil {
			v = strconv.FormatBool(allHold(t.bconds[i], e))
		}
		if boolAttr[i] {
			if truthy(v) {
				v = "true"
			} else {
				v = "false"
			}
		}
		r.vals[i] = v
	}
	if t.input != "" {
		v := rc.vars[t.input]
		r.vals[aText] = v
		if v == "" {
			// Android reports the hint as the text of an empty field.
			r.vals[aText] = r.vals[aHint]
		}
		if rc.focus == t.input {
			r.vals[aFocused] = "true"
		}
	}
	r.b = t.bounds
	if t.inItem {
		r.b = t.bounds.shift(dx, dy)
	}
	if t.list == "" {
		for _, c := range t.children {
			if rc2 := rc.renderAt(c, r, dx, dy, item, each, idx); rc2 != nil {
				r.children = append(r.children, rc2)
			}
		}
		return r
	}
	// A scroll container stacks its items from its top, moved up by the
	// scroll offset, and shows only what falls inside its bounds. In a grid
	// the items fill a row left to right, and the row is as tall as its
	// tallest item.
	y := r.b.y1 - rc.scroll[t.list]
	top := y
	cols := max(t.columns, 1)
	col, rowH := 0, 0
	add := func(c *tnode, it map[string]string, each string, idx int) {
		if !allHold(c.ifc, itemEnv{base: rc.base, item: it}) {
			return
		}
		dx := col * (c.bounds.x2 - c.bounds.x1)
		if rn := rc.renderAt(c, r, dx, y, it, each, idx); rn != nil {
			if clipped := clip(rn, r.b); clipped != nil {
				r.children = append(r.children, clipped)
			}
		}
		rowH = max(rowH, c.bounds.y2)
		if col++; col == cols {
			y += rowH
			col, rowH = 0, 0
		}
	}
	for _, c := range t.children {
		if c.each == "" {
			add(c, item, each, idx)
			continue
		}
		for i, it := range rc.lists[c.each] {
			add(c, it, c.each, i)
		}
	}
	y += rowH // a last row that is not full
	r.content = y - top
	return r
}

// clip cuts a subtree to the visible area; nodes wholly outside it are not
// visible to the user and so are not dumped.
func clip(n *rnode, area rect) *rnode {
	b := n.b.intersect(area)
	if b.empty() {
		return nil
	}
	n.b = b
	kept := n.children[:0]
	for _, c := range n.children {
		if c = clip(c, area); c != nil {
			kept = append(kept, c)
		}
	}
	n.children = kept
	return n
}

// writeXML writes windows as one uiautomator dump, with every bound
// passed through scale (the phone's density).
func writeXML(w *bytes.Buffer, windows []*rnode, rotation int, scale func(int) int) {
	w.WriteString(`<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>`)
	fmt.Fprintf(w, `<hierarchy rotation="%d">`, rotation)
	for _, n := range windows {
		writeNode(w, n, 0, scale)
	}
	w.WriteString(`</hierarchy>`)
}

func writeNode(w *bytes.Buffer, n *rnode, index int, scale func(int) int) {
	fmt.Fprintf(w, `<node index="%d"`, index)
	for i := range aHint {
		w.WriteByte(' ')
		w.WriteString(attrNames[i])
		w.WriteString(`="`)
		escapeAttr(w, n.vals[i])
		w.WriteByte('"')
	}
	b := rect{scale(n.b.x1), scale(n.b.y1), scale(n.b.x2), scale(n.b.y2)}
	fmt.Fprintf(w, ` bounds="%s" drawing-order="%d" hint="`, b, index+1)
	escapeAttr(w, n.vals[aHint])
	w.WriteString(`" display-id="0"`)
	if len(n.children) == 0 {
		w.WriteString(" />")
		return
	}
	w.WriteByte('>')
	for i, c := range n.children {
		writeNode(w, c, i, scale)
	}
	w.WriteString("</node>")
}

func escapeAttr(w *bytes.Buffer, s string) {
	for _, r := range s {
		switch r {
		case '&':
			w.WriteString("&amp;")
		case '<':
			w.WriteString("&lt;")
		case '>':
			w.WriteString("&gt;")
		case '"':
			w.WriteString("&quot;")
		case '\n':
			w.WriteString("&#10;")
		case '\r':
			w.WriteString("&#13;")
		case '\t':
			w.WriteString("&#9;")
		default:
			if r < 0x20 || r == 0xFFFE || r == 0xFFFF {
				continue // not representable in XML 1.0
			}
			w.WriteRune(r)
		}
	}
}

// hit returns the deepest node of n that contains (x, y), later siblings
// first since they are drawn on top.
func hit(n *rnode, x, y int) *rnode {
	if !n.b.contains(x, y) {
		return nil
	}
	for i := len(n.children) - 1; i >= 0; i-- {
		if h := hit(n.children[i], x, y); h != nil {
			return h
		}
	}
	return n
}

// firstText is the node's text, or the first text found below it, which is
// what a row "says".
func firstText(n *rnode) string {
	if n.vals[aText] != "" {
		return n.vals[aText]
	}
	for _, c := range n.children {
		if s := firstText(c); s != "" {
			return s
		}
	}
	return ""
}
