package uixml

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// size sets the screen size: the hierarchy's own width/height attributes
// when present, else the extent of the top-level nodes (window roots), else
// of all nodes.
func (s *Screen) size(w, h int) {
	if w > 0 && h > 0 {
		s.Width, s.Height = w, h
		return
	}
	for pass := 0; pass < 2 && (s.Width <= 0 || s.Height <= 0); pass++ {
		for i := range s.Nodes {
			n := &s.Nodes[i]
			if pass == 0 && n.Parent != -1 {
				continue
			}
			r := n.Bounds
			if r.X2 <= r.X1 || r.Y2 <= r.Y1 {
				continue
			}
			s.Width = max(s.Width, r.X2)
			s.Height = max(s.Height, r.Y2)
		}
	}
	s.Width, s.Height = max(s.Width, 0), max(s.Height, 0)
}

// clip returns r clipped to the screen.
func (s *Screen) clip(r Rect) Rect {
	return Rect{max(r.X1, 0), max(r.Y1, 0), min(r.X2, s.Width), min(r.Y2, s.Height)}
}

func area(r Rect) int {
	if r.X2 <= r.X1 || r.Y2 <= r.Y1 {
		return 0
	}
	return (r.X2 - r.X1) * (r.Y2 - r.Y1)
}

// TapPoint returns where to tap node i: the centre of its bounds clipped to
// the screen, or the centre of its bounds when nothing of it is on screen.
func (s *Screen) TapPoint(i int) (x, y int) {
	if i < 0 || i >= len(s.Nodes) {
		return 0, 0
	}
	r := s.Nodes[i].Bounds
	if c := s.clip(r); area(c) > 0 {
		return c.Center()
	}
	return r.Center()
}

// maxPieces is how many descendant texts a container may take as its label;
// a container with more is a panel, not a row, and its texts are listed on
// their own.
const maxPieces = 6

// rowLevels is how far up from a switch or checkbox its row may be.
const rowLevels = 4

// minSliver is the width or height in pixels below which a control with
// no name is not listed: even on a 480-pixel-wide screen a real button is
// larger, while rows scrolled to the list's edge show a few pixels.
const minSliver = 24

// maxRowNodes bounds the subtree searched for a row's texts: a bigger
// container is a panel, not a row, and the bound keeps pathological dumps
// (thousands of nested labelled nodes) linear.
const maxRowNodes = 300

// build computes the element list from s.Nodes in named passes, each
// handing what it found to the next: what each node shows of itself
// (look), the switches and checkboxes tied to their rows (tieToggles), the
// labels (label), names for the controls still without one (nameUnnamed),
// the slivers left out (dropSlivers), the cut for length (cut), and the
// list itself (list).
func (s *Screen) build() {
	f := facts{end: subtreeEnds(s.Nodes)}
	f.look = s.look(f.end)
	f.rows = s.tieToggles(f.look)
	nm := s.label(f)
	s.nameUnnamed(f, nm)
	s.dropSlivers(nm)
	s.list(f, nm, s.cut(f, nm))
}

// facts are what the first passes learned of each node; the later passes
// only read them.
type facts struct {
	end  []int  // end of each node's subtree (exclusive)
	look []look // what each node shows of itself
	rows rows   // switches and checkboxes tied to their rows
}

// look is what one node shows of itself.
type look struct {
	vis      bool // on screen, not the status bar or a keyboard
	editable bool
	own      string // cleaned own label (text, else desc)
	ownFrom  LabelSource
	inter    bool // acts on input and is on screen
}

// rows ties switches and checkboxes to the rows they belong to.
type rows struct {
	merged  []bool // a toggle merged into its row (not listed alone)
	toggle  []int  // a row's merged toggle node, or -1
	rowNode []int  // the row of a separately tappable toggle, or -1
}

// naming is the labels the passes give the nodes, and which nodes are
// listed.
type naming struct {
	label    []string
	from     []LabelSource
	cand     []bool // listed, unless cut for length
	absorbed []bool // a text taken into another node's label
}

// subtreeEnds returns the end (exclusive) of each node's subtree in the
// document-order list.
func subtreeEnds(nodes []Node) []int {
	n := len(nodes)
	end := make([]int, n)
	var stack []int
	for j := 0; j < n; j++ {
		for len(stack) > 0 && nodes[stack[len(stack)-1]].Depth >= nodes[j].Depth {
			end[stack[len(stack)-1]] = j
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, j)
	}
	for _, k := range stack {
		end[k] = n
	}
	return end
}

// look is the visibility pass: which nodes are on screen, which act on
// input, and each node's own label. It also finds the keyboard window
// (s.Keyboard) and resets every node's Index.
func (s *Screen) look(end []int) []look {
	out := make([]look, len(s.Nodes))
	// A keyboard window (dumps of all windows include it) would fill the
	// list with forty one-letter keys and push the app's controls past the
	// cut; it is left out and named once in the prompt. A keyboard's own
	// screens (its settings app) are the only window then, and stay.
	imeEnd := -1
	s.Keyboard = false
	if s.hasAppRoot() {
		for i := range s.Nodes {
			if s.Nodes[i].Parent == -1 && isIMEPackage(s.Nodes[i].Package) {
				s.Keyboard = true
			}
		}
	}

	// The phone's status bar (clock, battery, notification icons) is left
	// out: it changes every minute and offers nothing to tap.
	statusEnd := -1
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		nd.Index = -1
		f := &out[i]
		if i >= statusEnd && nd.Package == "com.android.systemui" {
			if id := shortID(nd.ResourceID); id == "status_bar" || id == "status_bar_container" {
				statusEnd = end[i]
			}
		}
		if s.Keyboard && i >= imeEnd && nd.Parent == -1 && isIMEPackage(nd.Package) {
			imeEnd = end[i]
		}
		f.vis = !nd.Hidden && area(s.clip(nd.Bounds)) > 0 && i >= statusEnd && i >= imeEnd
		f.editable = isEditable(nd)
		if t := cleanLabel(nd.Text); t != "" {
			f.own, f.ownFrom = t, LabelText
		} else if d := cleanLabel(nd.Desc); d != "" {
			f.own, f.ownFrom = d, LabelDesc
		}
		if isToggleClass(nd.Class) && isStateWord(f.own) {
			// An "ON"/"OFF" text on a switch is its state, not its name.
			f.own, f.ownFrom = "", LabelNone
		}
		f.inter = f.vis && (nd.Clickable || nd.LongClickable || nd.Checkable || nd.Scrollable || f.editable)
	}
	return out
}

// tieToggles ties switches and checkboxes to their rows: one that is not
// clickable on its own is merged into its row (tapping the row toggles
// it); one that is, but has no name, is named after its row later.
func (s *Screen) tieToggles(lk []look) rows {
	n := len(s.Nodes)
	r := rows{merged: make([]bool, n), toggle: make([]int, n), rowNode: make([]int, n)}
	for i := range r.toggle {
		r.toggle[i], r.rowNode[i] = -1, -1
	}
	for i := range s.Nodes {
		nd, f := &s.Nodes[i], &lk[i]
		if !nd.Checkable || f.editable {
			continue
		}
		// A switch scrolled half out of its row still belongs to it, so an
		// invisible one may merge; only a visible one is listed alone.
		if !nd.Clickable {
			if row := s.rowOf(i, lk); row >= 0 {
				// A second state indicator in the same row (a RadioButton
				// beside a CheckedTextView holding the option's name) is
				// the same choice: it merges too, the first one speaks.
				if r.toggle[row] < 0 {
					r.toggle[row] = i
				}
				r.merged[i] = true
			}
		} else if f.own == "" && f.vis {
			r.rowNode[i] = s.rowOf(i, lk)
		}
	}
	return r
}

// label is the labelling pass, in document order so that a container
// absorbs its descendants' texts before they are visited.
func (s *Screen) label(f facts) *naming {
	n := len(s.Nodes)
	nm := &naming{label: make([]string, n), from: make([]LabelSource, n), cand: make([]bool, n), absorbed: make([]bool, n)}
	for i := range s.Nodes {
		nd, lk := &s.Nodes[i], &f.look[i]
		if !lk.vis || f.rows.merged[i] || nm.absorbed[i] {
			continue
		}
		isWeb := strings.Contains(nd.Class, "WebView")
		set := func(label string, from LabelSource) { nm.label[i], nm.from[i] = label, from }
		switch {
		case lk.editable:
			nm.cand[i] = true
			switch {
			case lk.own != "" && lk.ownFrom == LabelText && nd.Password:
				// Some apps expose a password field's real text; the
				// model needs to know it is filled, not the secret (the
				// prompt goes into logs and recordings).
				set(maskSecret(lk.own), LabelText)
				if h := cleanLabel(nd.Hint); h != "" && h != lk.own {
					set(h+" "+nm.label[i], LabelHint)
				}
			case lk.own != "" && lk.ownFrom == LabelText:
				set(lk.own, LabelText)
			case cleanLabel(nd.Hint) != "":
				set(cleanLabel(nd.Hint), LabelHint)
			case lk.own != "":
				set(lk.own, lk.ownFrom)
			}
		case nd.Scrollable && !nd.Clickable && !nd.Checkable:
			nm.cand[i] = true
			set(lk.own, lk.ownFrom)
		case lk.inter:
			nm.cand[i] = true
			if lk.own != "" {
				set(lk.own, lk.ownFrom)
				s.absorbContained(i, f, nm, lk.own)
				break
			}
			if f.rows.rowNode[i] >= 0 {
				break // labelled by its row in nameUnnamed
			}
			pieces, idx, hasCtl := s.pieces(i, f, nm)
			if hasCtl && s.isPanel(i) {
				// A dialog or card holding its own buttons: its texts are
				// not the name of one control ("Allow Camera to access
				// ...?" must not read as a button), so they stay listed.
				pieces, idx = nil, nil
			}
			switch {
			case len(pieces) > 0 && len(pieces) <= maxPieces:
				set(strings.Join(pieces, ", "), LabelChildren)
				for _, j := range idx {
					nm.absorbed[j] = true
				}
			case len(pieces) == 0 && hasCtl && f.rows.toggle[i] < 0 && !nd.Checkable:
				// A bare wrapper around other controls: they are listed,
				// the wrapper has nothing to say of its own.
				nm.cand[i] = false
			}
		case isWeb:
			nm.cand[i] = true
			set(lk.own, lk.ownFrom)
		case lk.own != "":
			nm.cand[i] = true
			set(lk.own, lk.ownFrom)
			s.absorbContained(i, f, nm, lk.own)
		}
	}
	return nm
}

// nameUnnamed names the listed controls still without a label. A
// separately tappable switch with no name of its own is named after its
// row; with no clickable row, after the texts around it. Any other
// control with no name (an avatar beside a contact's name) takes the texts
// next to it when nothing else competes for them. What is left is known
// by its resource-id, else its class.
func (s *Screen) nameUnnamed(f facts, nm *naming) {
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		if !nm.cand[i] || nm.label[i] != "" || !f.look[i].inter || nd.Scrollable && !nd.Checkable {
			continue
		}
		if r := f.rows.rowNode[i]; r >= 0 && nm.label[r] != "" {
			nm.label[i], nm.from[i] = nm.label[r], LabelRow
			continue
		}
		if p := s.textAround(i, f, nm, !nd.Checkable); p != "" {
			nm.label[i], nm.from[i] = p, LabelRow
		}
	}
	for i := range s.Nodes {
		if !nm.cand[i] || nm.label[i] != "" {
			continue
		}
		nd := &s.Nodes[i]
		if id := shortID(nd.ResourceID); id != "" {
			nm.label[i], nm.from[i] = id, LabelID
		} else if c := shortClass(nd.Class); c != "" {
			nm.label[i], nm.from[i] = c, LabelClass
		}
	}
}

// dropSlivers leaves out the controls with no name at all that show only
// a sliver (a list row scrolled almost out of view, a 10-pixel strip of a
// card): they tell the model nothing it could act on with sense.
func (s *Screen) dropSlivers(nm *naming) {
	for i := range s.Nodes {
		if !nm.cand[i] || !nm.from[i].StandIn() {
			continue
		}
		if r := s.clip(s.Nodes[i].Bounds); r.X2-r.X1 < minSliver || r.Y2-r.Y1 < minSliver {
			nm.cand[i] = false
		}
		// Nor does a disabled one known only by its class (the dots of a
		// pager indicator): it can neither be named nor used.
		if nm.from[i] == LabelClass && !s.Nodes[i].Enabled {
			nm.cand[i] = false
		}
	}
}

// cut returns the nodes listed, within s.opts.MaxElements: controls
// first, then texts, each in document order. s.Cut counts what was left
// out.
func (s *Screen) cut(f facts, nm *naming) []int {
	var cands []int
	inter := 0
	for i := range s.Nodes {
		if nm.cand[i] && !nm.absorbed[i] {
			cands = append(cands, i)
			if f.look[i].inter {
				inter++
			}
		}
	}
	if len(cands) <= s.opts.MaxElements {
		return cands
	}
	s.Cut = len(cands) - s.opts.MaxElements
	room := s.opts.MaxElements - min(inter, s.opts.MaxElements)
	var keep []int
	ni := 0
	for _, i := range cands {
		if f.look[i].inter {
			if ni < s.opts.MaxElements {
				keep = append(keep, i)
				ni++
			}
		} else if room > 0 {
			keep = append(keep, i)
			room--
		}
	}
	return keep
}

// list makes s.Elements of the nodes kept.
func (s *Screen) list(f facts, nm *naming, keep []int) {
	s.Elements = make([]Element, 0, len(keep))
	for k, i := range keep {
		nd := &s.Nodes[i]
		nd.Index = k
		toggle := f.rows.toggle[i]
		e := Element{
			Index: k, Node: i, Label: truncRunes(nm.label[i], s.opts.MaxLabel), LabelFrom: nm.from[i],
			Editable: f.look[i].editable, Toggle: toggle, Row: -1,
			Checkable: nd.Checkable, Checked: nd.Checked,
		}
		e.X, e.Y = s.TapPoint(i)
		kindNode := nd
		if toggle >= 0 {
			kindNode = &s.Nodes[toggle]
			e.Checkable, e.Checked = true, kindNode.Checked
		}
		e.Kind = kindOf(kindNode, f.look[i].editable)
		if toggle >= 0 && e.Kind != "switch" && e.Kind != "radio" {
			e.Kind = "checkbox"
		}
		s.Elements = append(s.Elements, e)
	}
	for k := range s.Elements {
		e := &s.Elements[k]
		if r := f.rows.rowNode[e.Node]; r >= 0 {
			e.Row = s.Nodes[r].Index
		}
	}
}

// hasAppRoot reports a window root that is not a keyboard's.
func (s *Screen) hasAppRoot() bool {
	for i := range s.Nodes {
		if n := &s.Nodes[i]; n.Parent == -1 && n.Package != "" && !isIMEPackage(n.Package) {
			return true
		}
	}
	return false
}

// isIMEPackage reports the package of an input method (on-screen
// keyboard): Gboard and AOSP's (…inputmethod…), Samsung's honeyboard,
// SwiftKey, and the common Chinese ones (Sogou, Baidu, iFlytek, QQ).
func isIMEPackage(p string) bool {
	return strings.Contains(p, "inputmethod") || strings.Contains(p, "honeyboard") ||
		strings.Contains(p, "swiftkey") || strings.Contains(p, ".keyboard") ||
		strings.HasPrefix(p, "com.baidu.input") || strings.Contains(p, "qqpinyin")
}

// rowOf finds the row a switch or checkbox belongs to: the nearest clickable,
// visible ancestor within rowLevels that is not a scrolling list.
func (s *Screen) rowOf(i int, lk []look) int {
	p := s.Nodes[i].Parent
	for lvl := 0; p >= 0 && lvl < rowLevels; lvl++ {
		pn := &s.Nodes[p]
		if pn.Scrollable {
			return -1
		}
		if pn.Clickable && lk[p].vis {
			return p
		}
		p = pn.Parent
	}
	return -1
}

// isPanel reports a container taller than a third of the screen: a dialog
// or a card rather than a row.
func (s *Screen) isPanel(i int) bool {
	r := s.clip(s.Nodes[i].Bounds)
	return 3*(r.Y2-r.Y1) > s.Height
}

// pieces gathers the labels of node i's descendants that are not controls
// listed on their own. hasCtl reports a listed control among them.
func (s *Screen) pieces(i int, f facts, nm *naming) (pieces []string, idx []int, hasCtl bool) {
	if f.end[i]-i > maxRowNodes {
		return nil, nil, true
	}
	for j := i + 1; j < f.end[i]; j++ {
		own := f.look[j].own
		if f.rows.merged[j] {
			// A merged toggle's own text (a CheckBox or CheckedTextView
			// that carries the option's name) names the row.
			if own != "" && !contains(pieces, own) {
				pieces = append(pieces, own)
			}
			j = f.end[j] - 1
			continue
		}
		if f.look[j].inter {
			hasCtl = true
			j = f.end[j] - 1
			continue
		}
		if own == "" || nm.absorbed[j] {
			continue
		}
		if !contains(pieces, own) {
			pieces = append(pieces, own)
		}
		idx = append(idx, j)
	}
	return pieces, idx, hasCtl
}

// absorbContained hides descendants of i whose text only repeats i's label
// (a quick-settings tile "Bluetooth, On" over texts "Bluetooth" and "On").
func (s *Screen) absorbContained(i int, f facts, nm *naming, label string) {
	if f.end[i]-i > maxRowNodes {
		return
	}
	for j := i + 1; j < f.end[i]; j++ {
		if f.look[j].inter || f.rows.merged[j] {
			j = f.end[j] - 1
			continue
		}
		if own := f.look[j].own; own != "" && strings.Contains(label, own) {
			nm.absorbed[j] = true
		}
	}
}

// textAround names a control with no label and no clickable row after the
// texts of its nearest ancestor (within rowLevels) that has any, taking
// those texts out of the list. With alone, an ancestor holding another
// control is not used: the texts could be that control's.
func (s *Screen) textAround(i int, f facts, nm *naming, alone bool) string {
	p := s.Nodes[i].Parent
	levels := rowLevels
	if alone {
		levels = 2
	}
	for lvl := 0; p >= 0 && lvl < levels; lvl++ {
		if s.Nodes[p].Scrollable || f.end[p]-p > maxRowNodes {
			return ""
		}
		var pieces []string
		var idx []int
		for j := p + 1; j < f.end[p]; j++ {
			if j == i {
				j = f.end[j] - 1
				continue
			}
			if f.look[j].inter || f.rows.merged[j] {
				if alone {
					return ""
				}
				j = f.end[j] - 1
				continue
			}
			if own := f.look[j].own; own != "" && !nm.absorbed[j] && f.look[j].vis {
				if !contains(pieces, own) {
					pieces = append(pieces, own)
				}
				idx = append(idx, j)
			}
		}
		if len(pieces) > maxPieces || alone && len(pieces) > 3 {
			return ""
		}
		if len(pieces) > 0 {
			for _, j := range idx {
				nm.absorbed[j] = true
				nm.cand[j] = false
			}
			return strings.Join(pieces, ", ")
		}
		p = s.Nodes[p].Parent
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isEditable(n *Node) bool {
	c := n.Class
	return strings.Contains(c, "EditText") || strings.Contains(c, "AutoCompleteTextView") ||
		n.Password || n.Focusable && strings.Contains(c, "TextField")
}

func isToggleClass(c string) bool {
	return strings.Contains(c, "Switch") || strings.Contains(c, "ToggleButton")
}

func isStateWord(s string) bool {
	switch strings.ToLower(s) {
	case "on", "off":
		return true
	}
	return false
}

// kindOf chooses the short role word the model sees for node n.
func kindOf(n *Node, editable bool) string {
	c := n.Class
	switch {
	case editable:
		return "field"
	case isToggleClass(c):
		return "switch"
	case strings.Contains(c, "RadioButton"):
		return "radio"
	case strings.Contains(c, "CheckBox") || strings.Contains(c, "CheckedTextView"):
		return "checkbox"
	case strings.Contains(c, "WebView"):
		return "webview"
	case strings.Contains(c, "SeekBar") || strings.Contains(c, "Slider"):
		return "slider"
	case n.Scrollable && !n.Clickable:
		switch {
		case strings.Contains(c, "ViewPager"):
			return "pager"
		case strings.Contains(c, "ListView") || strings.Contains(c, "RecyclerView") || strings.Contains(c, "GridView"):
			return "list"
		}
		return "scroll"
	case n.Checkable:
		return "checkbox"
	case n.Clickable || n.LongClickable:
		return "button"
	case strings.Contains(c, "Image"):
		return "image"
	}
	return "text"
}

// shortID returns the part of a resource-id after ":id/".
func shortID(id string) string {
	if i := strings.LastIndex(id, ":id/"); i >= 0 {
		id = id[i+4:]
	} else if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	return cleanLabel(id)
}

// shortClass returns a class name without its package or outer class.
func shortClass(c string) string {
	if i := strings.LastIndexAny(c, ".$"); i >= 0 {
		c = c[i+1:]
	}
	return cleanLabel(c)
}

// cleanLabel makes text fit on one prompt line: whitespace runs become one
// space, and invisible characters (bidi marks, zero-width spaces,
// private-use icon glyphs) go.
func cleanLabel(s string) string {
	if s == "" {
		return s
	}
	if plainASCII(s) {
		return tidyCommas(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r) || r == '\u00a0' || r == '\u2009' || r == '\u202f':
			space = true
			continue
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u200e' || r == '\u200f' ||
			r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u061c':
			continue
		case r >= '\ue000' && r <= '\uf8ff', unicode.IsControl(r):
			continue
		case r == '"':
			r = '\''
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return tidyCommas(b.String())
}

// maskSecret replaces a password's characters with bullets, keeping its
// length (up to 16) so the model can tell an empty field from a filled one.
func maskSecret(s string) string {
	return strings.Repeat("•", min(utf8.RuneCountInString(s), 16))
}

// emptyFields matches the separators of empty fields in a text joined with
// commas: Gmail's conversation rows read ", , , Test C. User, , Subject".
var emptyFields = regexp.MustCompile(`,(\s*,)+`)

// tidyCommas drops the empty fields of a comma-joined text.
func tidyCommas(s string) string {
	if !strings.Contains(s, ",") {
		return s
	}
	if !emptyFields.MatchString(s) && s[0] != ',' && s[len(s)-1] != ',' {
		return s
	}
	s = emptyFields.ReplaceAllString(s, ",")
	return strings.Trim(s, ", ")
}

// plainASCII reports text cleanLabel would return unchanged: printable
// ASCII without '"', single spaces, none at either end.
func plainASCII(s string) bool {
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	prev := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == ' ' && prev == ' ' {
			return false
		}
		prev = c
	}
	return true
}

// truncRunes shortens s to at most n runes, marking the cut with "…".
func truncRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return strings.TrimRight(s[:i], " ,") + "…"
		}
		k++
	}
	return s
}
