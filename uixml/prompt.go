package uixml

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prompt renders the element list as the model reads it: a header line
// with the app and the screen size, then one line per element, e.g.
//
//	[3] switch "Wi-Fi" off
//	[5] field "Search settings" (editable, focused)
//
// The same screen always gives byte-identical text.
func (s *Screen) Prompt() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.Grow(64 + 48*len(s.Elements))
	b.WriteString("Screen")
	if app := s.App(); app != "" {
		b.WriteString(" of ")
		b.WriteString(app)
	}
	fmt.Fprintf(&b, ", %dx%d", s.Width, s.Height)
	if s.Rotation != 0 {
		fmt.Fprintf(&b, ", rotated %d°", 90*s.Rotation)
	}
	b.WriteString(":\n")
	for i := range s.Elements {
		s.writeElement(&b, &s.Elements[i])
		b.WriteByte('\n')
	}
	if len(s.Elements) == 0 {
		b.WriteString("(no elements on this screen)\n")
	}
	if s.Keyboard {
		b.WriteString("(an on-screen keyboard is open; its keys are not listed)\n")
	}
	if s.Cut > 0 {
		fmt.Fprintf(&b, "(%d more elements not shown: the list was cut for length)\n", s.Cut)
	}
	if s.Truncated {
		b.WriteString("(the screen dump was incomplete: elements may be missing)\n")
	}
	return b.String()
}

func (s *Screen) writeElement(b *strings.Builder, e *Element) {
	n := &s.Nodes[e.Node]
	b.WriteByte('[')
	b.WriteString(strconv.Itoa(e.Index))
	b.WriteString("] ")
	b.WriteString(e.Kind)
	if e.Label != "" {
		switch e.LabelFrom {
		case LabelID:
			b.WriteString(" id:")
			b.WriteString(e.Label)
		case LabelClass:
			b.WriteString(" class:")
			b.WriteString(e.Label)
		default:
			b.WriteString(` "`)
			b.WriteString(e.Label)
			b.WriteByte('"')
		}
	}
	if e.Checkable {
		switch {
		case e.Kind == "switch" && e.Checked:
			b.WriteString(" on")
		case e.Kind == "switch":
			b.WriteString(" off")
		case e.Checked:
			b.WriteString(" checked")
		default:
			b.WriteString(" unchecked")
		}
	}
	var flags []string
	if e.Editable {
		flags = append(flags, "editable")
	}
	if n.Password {
		flags = append(flags, "password")
	}
	if n.Focused {
		flags = append(flags, "focused")
	}
	if n.Selected {
		flags = append(flags, "selected")
	}
	if n.Scrollable {
		flags = append(flags, "scrollable")
	}
	if n.LongClickable && !n.Clickable {
		flags = append(flags, "long-press")
	}
	if !n.Enabled {
		flags = append(flags, "disabled")
	}
	if e.Kind == "webview" {
		flags = append(flags, "web content may be incomplete")
	}
	if len(flags) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(flags, ", "))
		b.WriteByte(')')
	}
}

// App returns the package the screen mostly shows: the one with the most
// visible nodes, preferring any app over the system UI (status bar,
// navigation bar) that shares the screen with it.
func (s *Screen) App() string {
	count := map[string]int{}
	var order []string
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Package == "" || area(s.clip(n.Bounds)) == 0 || s.Keyboard && isIMEPackage(n.Package) {
			continue
		}
		if count[n.Package] == 0 {
			order = append(order, n.Package)
		}
		count[n.Package]++
	}
	best := ""
	for _, p := range order {
		if best == "" ||
			best == "com.android.systemui" && p != best ||
			p != "com.android.systemui" && count[p] > count[best] {
			best = p
		}
	}
	return best
}

// EstimateTokens estimates how many tokens s costs a BPE tokenizer: about
// four bytes per token for ASCII text, one token per character for other
// scripts (CJK, Hangul, emoji), which such vocabularies split finely.
func EstimateTokens(s string) int {
	ascii, other := 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+3)/4 + other
}

// ElementByIndex returns element i and its node, or ok=false when i names
// no element.
func (s *Screen) ElementByIndex(i int) (Element, Node, bool) {
	if s == nil || i < 0 || i >= len(s.Elements) {
		return Element{}, Node{}, false
	}
	e := s.Elements[i]
	return e, s.Nodes[e.Node], true
}

// IndexRange names the valid element indices for error messages:
// "0-41", "0" or "none (the screen has no elements)".
func (s *Screen) IndexRange() string {
	if s == nil {
		return "none (the screen has no elements)"
	}
	switch len(s.Elements) {
	case 0:
		return "none (the screen has no elements)"
	case 1:
		return "0"
	}
	return fmt.Sprintf("0-%d", len(s.Elements)-1)
}
