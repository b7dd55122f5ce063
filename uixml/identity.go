package uixml

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/internal/editdist"
)

// Identity names an element by what it is rather than by its index in the
// list or its place on the screen: the attributes a person would use to
// find it again on another dump of the same screen, on a list with one more
// row, or on a phone with another screen size. Recordings and macros keep
// it, and Screen.Match finds it on a live screen. Every field is optional:
// an identity read from an older file matches on what it has.
type Identity struct {
	ResourceID string `json:"resource_id,omitempty" toml:"resource_id,omitempty"`
	Text       string `json:"text,omitempty" toml:"text,omitempty"`
	Desc       string `json:"desc,omitempty" toml:"desc,omitempty"`
	Hint       string `json:"hint,omitempty" toml:"hint,omitempty"`
	// Label is the element's name as the model was shown it (it may come
	// from the node's children or its row).
	Label string `json:"label,omitempty" toml:"label,omitempty"`
	// Texts are the texts shown inside the element, its own first, in
	// screen order (a row's title, then its summary), at most MaxTexts.
	Texts   []string `json:"texts,omitempty" toml:"texts,omitempty"`
	Class   string   `json:"class,omitempty" toml:"class,omitempty"`
	Package string   `json:"package,omitempty" toml:"package,omitempty"`
	// Editable marks a text field: its text (and the label made from it)
	// is what was typed, not a name, so matching leaves it out.
	Editable bool `json:"editable,omitempty" toml:"editable,omitempty"`
	// Checkable and Checked are the element's state when it was taken.
	Checkable bool `json:"checkable,omitempty" toml:"checkable,omitempty"`
	Checked   bool `json:"checked,omitempty" toml:"checked,omitempty"`
	// Sibling is the node's position among its parent's children.
	Sibling int `json:"sibling" toml:"sibling"`
	// Ancestors are the node's ancestors, parent first, at most
	// MaxAncestors of them.
	Ancestors []Ancestor `json:"ancestors,omitempty" toml:"ancestors,omitempty"`
	// Bounds are the node's bounds [x1,y1,x2,y2] on a screen of Screen
	// [width,height]: the position, matched last and relative to the size.
	Bounds [4]int `json:"bounds" toml:"bounds"`
	Screen [2]int `json:"screen" toml:"screen"`
}

// Ancestor is one ancestor of an element in its Identity.
type Ancestor struct {
	Class      string `json:"class,omitempty" toml:"class,omitempty"`
	ResourceID string `json:"resource_id,omitempty" toml:"resource_id,omitempty"`
	Sibling    int    `json:"sibling" toml:"sibling"`
}

// MaxTexts bounds Identity.Texts.
const MaxTexts = 6

// MaxAncestors bounds Identity.Ancestors: the nearest ones tell a row of
// one list from another; the rest are the same window frames everywhere.
const MaxAncestors = 8

// maxIdentityText bounds the texts an identity keeps, in runes: enough to
// name any control, and a page of text in a node costs no more.
const maxIdentityText = 200

// Identity returns the identity of element i, or false when there is no
// element i.
func (s *Screen) Identity(i int) (Identity, bool) {
	el, _, ok := s.ElementByIndex(i)
	if !ok {
		return Identity{}, false
	}
	return s.identity(el.Node, el, s.siblings()), true
}

func (s *Screen) identity(node int, el Element, sib []int) Identity {
	n := &s.Nodes[node]
	id := Identity{
		ResourceID: n.ResourceID,
		Desc:       truncRunes(n.Desc, maxIdentityText),
		Hint:       truncRunes(n.Hint, maxIdentityText),
		Label:      el.Label,
		Class:      n.Class,
		Package:    n.Package,
		Editable:   el.Editable,
		Checkable:  el.Checkable,
		Checked:    el.Checked,
		Sibling:    sib[node],
		Bounds:     [4]int{n.Bounds.X1, n.Bounds.Y1, n.Bounds.X2, n.Bounds.Y2},
		Screen:     [2]int{s.Width, s.Height},
	}
	if !el.Editable && !n.Password {
		id.Text = truncRunes(n.Text, maxIdentityText)
	} else {
		id.Label = ""
	}
	id.Texts = s.texts(node, !el.Editable && !n.Password)
	for p := n.Parent; p >= 0 && len(id.Ancestors) < MaxAncestors; p = s.Nodes[p].Parent {
		id.Ancestors = append(id.Ancestors, Ancestor{Class: s.Nodes[p].Class, ResourceID: s.Nodes[p].ResourceID, Sibling: sib[p]})
	}
	return id
}

// Texts returns the texts and descriptions shown in node i's subtree (at
// most MaxTexts), in document order: what names a panel or a dialog.
func (s *Screen) Texts(i int) []string {
	if i < 0 || i >= len(s.Nodes) {
		return nil
	}
	return s.texts(i, !s.Nodes[i].Password && !isEditable(&s.Nodes[i]))
}

// texts returns the texts and descriptions shown in node i's subtree, in
// document order, its own text only when own is set.
func (s *Screen) texts(i int, own bool) []string {
	var out []string
	add := func(t string) {
		if t = truncRunes(cleanLabel(t), maxIdentityText); t != "" && len(out) < MaxTexts && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	n := &s.Nodes[i]
	if own {
		add(n.Text)
	}
	add(n.Desc)
	for j := i + 1; j < len(s.Nodes) && j-i <= maxRowNodes && s.Nodes[j].Depth > n.Depth && len(out) < MaxTexts; j++ {
		c := &s.Nodes[j]
		if c.Hidden || c.Password || isEditable(c) {
			continue
		}
		add(c.Text)
		add(c.Desc)
	}
	return out
}

// name is what names the element above all: its own text, else its
// description, else the first text inside it (a row's title), else its
// hint, else its label; "" for an element without a name.
func (id Identity) name() string {
	for _, n := range []string{id.Text, id.Desc, first(id.Texts), id.Hint, id.Label} {
		if n != "" {
			return n
		}
	}
	return ""
}

// names are the texts a live element may be named by.
func (id Identity) names() []string {
	return []string{id.Text, id.Desc, first(id.Texts), id.Hint, id.Label}
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

// siblings returns each node's position among its parent's children (the
// roots count as siblings of each other).
func (s *Screen) siblings() []int {
	sib := make([]int, len(s.Nodes))
	next := make(map[int]int, len(s.Nodes)/2+1) // parent -> children seen
	for i := range s.Nodes {
		p := s.Nodes[i].Parent
		sib[i] = next[p]
		next[p]++
	}
	return sib
}

// Candidate is an element of a live screen scored against an Identity.
type Candidate struct {
	Element int     `json:"element"` // the element's index on the live screen
	Label   string  `json:"label"`
	Score   float64 `json:"score"` // 0 (nothing alike) to 1 (all the same)
	// Diffs are what differs from the identity, in the order of the
	// features' weight.
	Diffs []Diff `json:"diffs,omitempty"`
}

// Diff is one attribute of an element that differs between the identity
// and the live element.
type Diff struct {
	Field    Field  `json:"field"`
	Recorded string `json:"recorded"`
	Live     string `json:"live"`
}

// Field names an attribute of an element in a Diff.
type Field string

// The fields Match compares, heaviest first. FieldChecked is reported but
// not scored: a switch in the other state is the same switch.
const (
	FieldName       Field = "name"
	FieldResourceID Field = "resource-id"
	FieldTexts      Field = "texts"
	FieldLabel      Field = "label"
	FieldAncestors  Field = "ancestors"
	FieldClass      Field = "class"
	FieldPackage    Field = "package"
	FieldPlace      Field = "place"
	FieldPosition   Field = "position"
	FieldChecked    Field = "checked"
)

// The weight of each field in a Candidate's score. The name weighs most;
// the place among siblings and the position on the screen are the last
// resort, enough to tell identical rows apart and too little to make
// another element the target.
var fieldWeight = map[Field]float64{
	FieldName: 4, FieldResourceID: 3, FieldTexts: 1.5, FieldLabel: 1,
	FieldAncestors: 1.5, FieldClass: 1, FieldPackage: 1, FieldPlace: 0.75, FieldPosition: 0.75,
}

// unnamed bounds the score of an element whose name is not the recorded
// one's, whatever else it shares: the row below with the same id, class
// and parents is another row.
const unnamed = 0.5

// Match scores every element of s against id and returns them best
// first (ties in document order). The score is the weighted share of id's
// fields the element has (a field id lacks counts for nothing either way,
// so an identity from an older recording matches on what it has), scaled
// down to at most unnamed when id has a name the element does not.
func (s *Screen) Match(id Identity) []Candidate {
	if s == nil {
		return nil
	}
	sib := s.siblings()
	out := make([]Candidate, 0, len(s.Elements))
	for _, el := range s.Elements {
		live := s.identity(el.Node, el, sib)
		score, diffs := compare(id, live)
		out = append(out, Candidate{Element: el.Index, Label: el.Label, Score: score, Diffs: diffs})
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

// compare scores live against the recorded identity rec.
func compare(rec, live Identity) (float64, []Diff) {
	var total, got float64
	var diffs []Diff
	score := func(f Field, sim float64, recorded, liveVal string) {
		w := fieldWeight[f]
		total += w
		got += w * sim
		if sim < 1 {
			diffs = append(diffs, Diff{Field: f, Recorded: recorded, Live: liveVal})
		}
	}
	name, nameSim, liveName := rec.name(), 1.0, ""
	if name != "" {
		// The name may sit in another field on the live screen: a hand
		// written {"text": "Hotspot"} names a row labelled by it.
		nameSim = 0
		for _, n := range live.names() {
			if n == "" {
				continue
			}
			if sim := textSim(name, n); sim > nameSim || liveName == "" {
				nameSim, liveName = max(sim, nameSim), n
			}
		}
		score(FieldName, nameSim, name, liveName)
	}
	if rec.ResourceID != "" {
		score(FieldResourceID, same(rec.ResourceID, live.ResourceID), rec.ResourceID, live.ResourceID)
	}
	if len(rec.Texts) > 1 {
		score(FieldTexts, dice(rec.Texts, live.Texts), strings.Join(rec.Texts, " | "), strings.Join(live.Texts, " | "))
	}
	// The label, where the texts do not already say it (it is made of
	// them for a row).
	if rec.Label != "" && rec.Label != name && len(rec.Texts) <= 1 {
		score(FieldLabel, textSim(rec.Label, live.Label), rec.Label, live.Label)
	}
	if len(rec.Ancestors) > 0 {
		sim := ancestrySim(rec.Ancestors, live.Ancestors)
		score(FieldAncestors, sim, ancestryString(rec.Ancestors), ancestryString(live.Ancestors))
	}
	if rec.Class != "" {
		sim := same(rec.Class, live.Class)
		if sim == 0 && shortClass(rec.Class) == shortClass(live.Class) {
			sim = 0.5 // android.widget.Switch and a support library's Switch
		}
		score(FieldClass, sim, rec.Class, live.Class)
	}
	if rec.Package != "" {
		score(FieldPackage, same(rec.Package, live.Package), rec.Package, live.Package)
	}
	if len(rec.Ancestors) > 0 || rec.Sibling > 0 {
		sim := placeSim(rec, live)
		score(FieldPlace, sim, placeString(rec), placeString(live))
	}
	if rec.Screen[0] > 0 && rec.Screen[1] > 0 && live.Screen[0] > 0 && live.Screen[1] > 0 {
		sim := positionSim(rec, live)
		score(FieldPosition, sim, boundsString(rec.Bounds), boundsString(live.Bounds))
	}
	if rec.Checkable && live.Checkable && rec.Checked != live.Checked {
		diffs = append(diffs, Diff{Field: FieldChecked, Recorded: onOffWord(rec.Checked), Live: onOffWord(live.Checked)})
	}
	if total == 0 {
		return 0, diffs
	}
	// A name that differs counts in the share and bounds the whole: no
	// agreement elsewhere makes another row the recorded one.
	return got / total * max(nameSim, unnamed), diffs
}

// dice is the Dice coefficient of two lists of texts, compared
// normalised.
func dice(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	left := map[string]int{}
	for _, t := range b {
		left[normText(t)]++
	}
	common := 0
	for _, t := range a {
		if n := normText(t); left[n] > 0 {
			left[n]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

func same(a, b string) float64 {
	if a == b {
		return 1
	}
	return 0
}

// minTextSim is the lowest edit-distance ratio textSim counts as alike.
const minTextSim = 0.6

// maxCompare bounds the runes of a text compared by edit distance, so a
// screen of long texts costs a bounded time per element.
const maxCompare = 64

// textSim is 1 for texts that are the same up to case, spacing and churn
// (clock times, percentages), else their edit-distance ratio when it is at
// least minTextSim ("Network & internet" and "Network and internet"), else 0.
func textSim(a, b string) float64 {
	a, b = normText(a), normText(b)
	if a == b {
		return 1
	}
	if a == "" || b == "" {
		return 0
	}
	ra, rb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
	if ra > maxCompare || rb > maxCompare {
		a, b = truncRunes(a, maxCompare), truncRunes(b, maxCompare)
		ra, rb = min(ra, maxCompare), min(rb, maxCompare)
	}
	// The distance is at least the difference in length: texts far apart
	// in length are not compared further.
	if float64(min(ra, rb)) < minTextSim*float64(max(ra, rb)) {
		return 0
	}
	r := 1 - float64(editdist.Levenshtein(a, b))/float64(max(ra, rb))
	if r < minTextSim {
		return 0
	}
	return r
}

// normText folds what does not name a thing: case, runs of spaces, the
// non-breaking hyphens and spaces some apps use, and churn.
func normText(t string) string {
	t = strings.Map(func(r rune) rune {
		switch r {
		case '\u2011', '\u2010', '\u2012', '\u2013':
			return '-'
		case '\u00a0', '\u202f':
			return ' '
		case '\u2019':
			return '\''
		}
		return r
	}, t)
	return strings.ToLower(strings.Join(strings.Fields(stableText(t)), " "))
}

// ancestrySim is the share of the nearer ancestors (parent first) whose
// class and resource-id agree.
func ancestrySim(a, b []Ancestor) float64 {
	n := max(len(a), len(b))
	if n == 0 {
		return 1
	}
	same := 0
	for i := range min(len(a), len(b)) {
		if a[i].Class == b[i].Class && a[i].ResourceID == b[i].ResourceID {
			same++
		}
	}
	return float64(same) / float64(n)
}

// placeLevels is how many levels placeSim compares: the node and its
// three nearest ancestors (a row in a list and the list in its page).
const placeLevels = 4

// placeSim is the share of the node's and its nearest ancestors' sibling
// positions that agree.
func placeSim(a, b Identity) float64 {
	pa, pb := places(a), places(b)
	n := max(len(pa), len(pb))
	same := 0
	for i := range min(len(pa), len(pb)) {
		if pa[i] == pb[i] {
			same++
		}
	}
	return float64(same) / float64(n)
}

func places(id Identity) []int {
	p := []int{id.Sibling}
	for i := 0; i < len(id.Ancestors) && len(p) < placeLevels; i++ {
		p = append(p, id.Ancestors[i].Sibling)
	}
	return p
}

// positionSim compares the centres of the two bounds relative to their
// screens' sizes: 1 at the same place, 0 half a screen away or more.
func positionSim(a, b Identity) float64 {
	cx := func(id Identity) (float64, float64) {
		x := float64(id.Bounds[0]+id.Bounds[2]) / 2 / float64(id.Screen[0])
		y := float64(id.Bounds[1]+id.Bounds[3]) / 2 / float64(id.Screen[1])
		return x, y
	}
	ax, ay := cx(a)
	bx, by := cx(b)
	d := math.Hypot(ax-bx, ay-by)
	return max(0, 1-2*d)
}

func onOffWord(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func ancestryString(a []Ancestor) string {
	parts := make([]string, 0, min(len(a), 3))
	for i := 0; i < len(a) && i < 3; i++ {
		p := shortClass(a[i].Class)
		if a[i].ResourceID != "" {
			p += "#" + shortID(a[i].ResourceID)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " < ")
}

func placeString(id Identity) string {
	p := places(id)
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, "/")
}

func boundsString(b [4]int) string {
	return fmt.Sprintf("[%d,%d][%d,%d]", b[0], b[1], b[2], b[3])
}
