package uixml

import "slices"

// systemUIPackage is the package of Android's system UI: the status and
// navigation bars, the notification shade and quick settings.
const systemUIPackage = "com.android.systemui"

// Signature is what Similarity compares of a screen: the app in front and
// the names of the elements the model is shown (a text field by its hint,
// not by what was typed into it). It is small enough for a macro to keep
// for every step.
type Signature struct {
	App    string   `json:"app,omitempty" toml:"app,omitempty"`
	Labels []string `json:"labels,omitempty" toml:"labels,omitempty"`
}

// Empty reports a signature of no screen (a step whose screen is not
// known).
func (sig Signature) Empty() bool { return sig.App == "" && len(sig.Labels) == 0 }

// Signature returns the screen's signature.
func (s *Screen) Signature() Signature {
	if s == nil {
		return Signature{}
	}
	sig := Signature{App: s.App(), Labels: make([]string, 0, len(s.Elements))}
	for _, e := range s.Elements {
		if l := s.signatureLabel(e); l != "" {
			sig.Labels = append(sig.Labels, l)
		}
	}
	return sig
}

// signatureLabel names an element in a Signature.
func (s *Screen) signatureLabel(e Element) string {
	if !e.Editable {
		return e.Label
	}
	n := &s.Nodes[e.Node]
	if n.Hint != "" {
		return n.Hint
	}
	if n.ResourceID != "" {
		return shortID(n.ResourceID)
	}
	return e.Kind
}

// appWeight is how many labels the app in front counts for in Similarity.
const appWeight = 2

// Similarity says how recognisably a and b are the same screen, from 0
// (nothing in common) to 1 (the same): the Dice coefficient of the two
// screens' element names, ignoring case, spacing and churn (clock times,
// percentages), with the app in front counting for appWeight names.
// Positions, sizes and states do not count, so a list scrolled or with
// one more row, a larger screen or a switch in the other state are still
// the same screen, while another page of the same app is not.
func Similarity(a, b *Screen) float64 {
	if a == nil || b == nil {
		return 0
	}
	return a.Signature().Similarity(b.Signature())
}

// Similarity is Similarity of the screens sig and o were taken from.
func (sig Signature) Similarity(o Signature) float64 {
	ta, tb := sig.bag(), o.bag()
	var common, sum int
	for t, n := range ta {
		common += min(n, tb[t])
		sum += n
	}
	for _, n := range tb {
		sum += n
	}
	if sum == 0 {
		return 1
	}
	return 2 * float64(common) / float64(sum)
}

// bag counts the signature's normalised names.
func (sig Signature) bag() map[string]int {
	out := make(map[string]int, len(sig.Labels)+1)
	if sig.App != "" {
		out["\x00app\x00"+sig.App] = appWeight
	}
	for _, l := range sig.Labels {
		if n := normText(l); n != "" {
			out[n]++
		}
	}
	return out
}

// Changes names what one screen shows that the other does not: the names
// only in sig (missing from o) and only in o (added), at most limit of
// each, in screen order.
func (sig Signature) Changes(o Signature, limit int) (missing, added []string) {
	only := func(x, y []string) []string {
		left := map[string]int{}
		for _, l := range y {
			left[normText(l)]++
		}
		var out []string
		for _, l := range x {
			if n := normText(l); left[n] > 0 {
				left[n]--
				continue
			}
			if len(out) < limit && !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
		return out
	}
	return only(sig.Labels, o.Labels), only(o.Labels, sig.Labels)
}

// SystemUI reports whether the system UI fills the screen with no app
// beside it: the notification shade or quick settings pulled down over
// the app, or the lock screen.
func (sig Signature) SystemUI() bool { return sig.App == systemUIPackage }

// TouchTarget returns the node a tap at (x, y) reaches on a phone, or -1:
// Android hands a touch to the topmost view under the finger that takes
// it (a clickable one, long-clickable for a long press, enabled or not),
// trying later windows and later siblings first as they are drawn on top,
// and a view's children before the view.
func (s *Screen) TouchTarget(x, y int, long bool) int {
	if s == nil || len(s.Nodes) == 0 {
		return -1
	}
	children := make([][]int, len(s.Nodes))
	var roots []int
	for i := range s.Nodes {
		if p := s.Nodes[i].Parent; p >= 0 {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	in := func(r Rect) bool { return x >= r.X1 && x < r.X2 && y >= r.Y1 && y < r.Y2 }
	var hit func(i int) int
	hit = func(i int) int {
		n := &s.Nodes[i]
		if n.Hidden || !in(n.Bounds) {
			return -1
		}
		for k := len(children[i]) - 1; k >= 0; k-- {
			if t := hit(children[i][k]); t >= 0 {
				return t
			}
		}
		if long && n.LongClickable || !long && n.Clickable {
			return i
		}
		return -1
	}
	for k := len(roots) - 1; k >= 0; k-- {
		if t := hit(roots[k]); t >= 0 {
			return t
		}
	}
	return -1
}

// Reaches reports whether a tap at (x, y) reaches node i: the node that
// takes the touch is i, inside i, or a container of i (a row that takes
// the taps of its label). A dialog or a panel drawn over i reaches
// something else.
func (s *Screen) Reaches(x, y, i int, long bool) bool {
	t := s.TouchTarget(x, y, long)
	if t < 0 || i < 0 || i >= len(s.Nodes) {
		return false
	}
	return t == i || s.within(t, i) || s.within(i, t)
}

// within reports whether node a is inside node b.
func (s *Screen) within(a, b int) bool {
	for p := s.Nodes[a].Parent; p >= 0; p = s.Nodes[p].Parent {
		if p == b {
			return true
		}
	}
	return false
}
