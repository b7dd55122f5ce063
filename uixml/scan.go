package uixml

import (
	"bytes"
	"encoding/xml"
	"strings"
	"unicode/utf8"
)

// scan reads a well-formed uiautomator document with a purpose-built
// scanner, about ten times faster than encoding/xml (which xmlquery is
// built on) and fast enough for the per-step budget. It reports false,
// leaving b in an undefined state, as soon as it meets anything outside the
// simple shape uiautomator writes (a DOCTYPE, CDATA, an unquoted attribute,
// a stray end tag, the end of input inside an element), so that the general
// parser decides those. For the documents it accepts it gives the same nodes
// as the xmlquery path; the tests check this on every real dump.
func (b *builder) scan(doc []byte) bool {
	type frame struct {
		node, depth, parent int
		tag                 []byte
	}
	stack := make([]frame, 0, 64)
	if b.nodes == nil {
		b.nodes = make([]Node, 0, bytes.Count(doc, []byte("<node "))+1)
	}
	attrs := make([]attr, 0, 24)
	parent, depth := -1, 0
	intern := map[string]string{}
	internB := func(v []byte) string {
		if s, ok := intern[string(v)]; ok {
			return s
		}
		s := string(v)
		intern[s] = s
		return s
	}
	i := 0
	for {
		lt := bytes.IndexByte(doc[i:], '<')
		text := doc[i:]
		if lt >= 0 {
			text = doc[i : i+lt]
		}
		// uiautomator writes no text between tags; entities there are the
		// general parser's business.
		if bytes.IndexByte(text, '&') >= 0 {
			return false
		}
		if lt < 0 {
			return len(stack) == 0 && b.sawHierarchy
		}
		i += lt + 1
		if i >= len(doc) {
			return false
		}
		switch doc[i] {
		case '?':
			end := bytes.Index(doc[i:], []byte("?>"))
			if end < 0 {
				return false
			}
			i += end + 2
			continue
		case '!':
			if !bytes.HasPrefix(doc[i:], []byte("!--")) {
				return false
			}
			end := bytes.Index(doc[i+3:], []byte("-->"))
			if end < 0 {
				return false
			}
			i += 3 + end + 3
			continue
		case '/':
			gt := bytes.IndexByte(doc[i:], '>')
			if gt < 0 || len(stack) == 0 {
				return false
			}
			f := stack[len(stack)-1]
			// Only "</tag>" closing the open tag; the general parser
			// decides anything else.
			if name := bytes.TrimRight(doc[i+1:i+gt], " \t\r\n"); !bytes.Equal(name, f.tag) {
				return false
			}
			i += gt + 1
			stack = stack[:len(stack)-1]
			parent, depth = f.parent, f.depth
			continue
		}
		// Start tag.
		if len(stack) > MaxDepth {
			b.tooDeep = true
			return true
		}
		j := i
		for j < len(doc) && !isSpace(doc[j]) && doc[j] != '/' && doc[j] != '>' {
			j++
		}
		if j >= len(doc) || !isName(doc[i:j]) {
			return false
		}
		rawTag := doc[i:j]
		tag := localName(rawTag)
		attrs = attrs[:0]
		i = j
		selfClose := false
		// Nodes get their attributes set directly; the hierarchy element
		// (once per dump) goes through builder.element.
		isNode := string(tag) != "hierarchy"
		var n Node
		if isNode {
			n = Node{Enabled: true, Parent: parent, Depth: depth, Index: -1}
			if string(tag) != "node" {
				n.Class = internB(tag)
			}
		}
		for {
			for i < len(doc) && isSpace(doc[i]) {
				i++
			}
			if i >= len(doc) {
				return false
			}
			if doc[i] == '>' {
				i++
				break
			}
			if doc[i] == '/' {
				if i+1 >= len(doc) || doc[i+1] != '>' {
					return false
				}
				i += 2
				selfClose = true
				break
			}
			// The attribute name, checked as isName does, in one pass.
			k, colon := i, -1
			for ; k < len(doc); k++ {
				c := doc[k]
				if c >= 'a' && c <= 'z' || c == '-' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && k > i || c == '_' || c == '.' && k > i {
					continue
				}
				if c == ':' && colon < 0 && k > i {
					colon = k
					continue
				}
				break
			}
			if k == i || colon == k-1 || doc[i] == '-' {
				return false
			}
			name := doc[i:k]
			if colon >= 0 {
				name = doc[colon+1 : k]
			}
			for k < len(doc) && isSpace(doc[k]) {
				k++
			}
			if k >= len(doc) || doc[k] != '=' || len(name) == 0 {
				return false
			}
			k++
			for k < len(doc) && isSpace(doc[k]) {
				k++
			}
			if k >= len(doc) || doc[k] != '"' && doc[k] != '\'' {
				return false
			}
			// One pass over the value finds its end and whether it needs
			// unescaping; values are short, so this beats several
			// bytes.IndexByte calls.
			q := doc[k]
			e, special := k+1, false
			for e < len(doc) && doc[e] != q {
				if c := doc[e]; c == '&' || c == '\r' || c == '<' {
					special = true
				}
				e++
			}
			if e >= len(doc) {
				return false
			}
			raw := doc[k+1 : e]
			i = e + 1
			if special {
				if bytes.IndexByte(raw, '<') >= 0 {
					return false
				}
				v, ok := unescape(raw)
				if !ok {
					return false
				}
				if isNode {
					setAttr(&n, attrName(name, internB), v)
				} else {
					attrs = append(attrs, attr{string(name), v})
				}
				continue
			}
			if !isNode {
				attrs = append(attrs, attr{string(name), string(raw)})
				continue
			}
			// The same assignments as setAttr, without making strings of
			// the values that are not kept.
			switch string(name) {
			case "text":
				n.Text = string(raw)
			case "content-desc":
				n.Desc = string(raw)
			case "resource-id":
				n.ResourceID = internB(raw)
			case "class":
				n.Class = internB(raw)
			case "package":
				n.Package = internB(raw)
			case "hint":
				n.Hint = string(raw)
			case "bounds":
				n.Bounds, n.BadBounds = parseBounds(raw)
			case "checkable":
				n.Checkable = isTrueB(raw)
			case "checked":
				n.Checked = isTrueB(raw)
			case "clickable":
				n.Clickable = isTrueB(raw)
			case "long-clickable":
				n.LongClickable = isTrueB(raw)
			case "scrollable":
				n.Scrollable = isTrueB(raw)
			case "focusable":
				n.Focusable = isTrueB(raw)
			case "focused":
				n.Focused = isTrueB(raw)
			case "enabled":
				n.Enabled = isTrueB(raw)
			case "selected":
				n.Selected = isTrueB(raw)
			case "password":
				n.Password = isTrueB(raw)
			case "visible-to-user", "displayed":
				n.Hidden = !isTrueB(raw)
			}
		}
		idx := -1
		if isNode {
			b.sawHierarchy = true
			b.nodes = append(b.nodes, n)
			idx = len(b.nodes) - 1
		} else {
			b.element("hierarchy", attrs, parent, depth)
		}
		if selfClose {
			continue
		}
		stack = append(stack, frame{idx, depth, parent, rawTag})
		if idx >= 0 {
			parent, depth = idx, depth+1
		}
	}
}

// attrName returns the attribute name as a string without allocating for
// the names uiautomator writes.
func attrName(b []byte, other func([]byte) string) string {
	switch string(b) {
	case "index":
		return "index"
	case "text":
		return "text"
	case "resource-id":
		return "resource-id"
	case "class":
		return "class"
	case "package":
		return "package"
	case "content-desc":
		return "content-desc"
	case "checkable":
		return "checkable"
	case "checked":
		return "checked"
	case "clickable":
		return "clickable"
	case "enabled":
		return "enabled"
	case "focusable":
		return "focusable"
	case "focused":
		return "focused"
	case "scrollable":
		return "scrollable"
	case "long-clickable":
		return "long-clickable"
	case "password":
		return "password"
	case "selected":
		return "selected"
	case "bounds":
		return "bounds"
	}
	return other(b)
}

// isName reports a plain XML name: ASCII letters, digits, '_', '-', '.'
// and one ':' not at either end; other names go to the general
// parser.
func isName(b []byte) bool {
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' || b[0] == '-' || b[0] == '.' || b[0] == ':' || b[len(b)-1] == ':' {
		return false
	}
	colons := 0
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		case c == ':':
			colons++
		default:
			return false
		}
	}
	return colons <= 1
}

// isTrueB is isTrue for a value still in the document's bytes.
func isTrueB(v []byte) bool {
	switch string(v) {
	case "true":
		return true
	case "false", "":
		return false
	}
	return isTrue(string(v))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// localName drops a namespace prefix, as the xmlquery path does.
func localName(b []byte) []byte {
	if i := bytes.IndexByte(b, ':'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// unescape decodes entities and line ends in an attribute value the way
// encoding/xml does in non-strict mode with HTML entities: the five XML
// entities, numeric references, HTML names, "\r\n" and "\r" to "\n".
// Anything else it reports as not ok.
func unescape(raw []byte) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '\r':
			sb.WriteByte('\n')
			i++
			if i < len(raw) && raw[i] == '\n' {
				i++
			}
			continue
		case '&':
		default:
			sb.WriteByte(c)
			i++
			continue
		}
		semi := bytes.IndexByte(raw[i:], ';')
		if semi < 2 {
			return "", false
		}
		ent := string(raw[i+1 : i+semi])
		switch ent {
		case "lt":
			sb.WriteByte('<')
		case "gt":
			sb.WriteByte('>')
		case "amp":
			sb.WriteByte('&')
		case "quot":
			sb.WriteByte('"')
		case "apos":
			sb.WriteByte('\'')
		default:
			if ent[0] == '#' {
				r, n := charRef(raw[i:])
				if n != semi+1 || !validXMLRune(r) {
					return "", false
				}
				sb.WriteRune(r)
			} else if h, ok := xml.HTMLEntity[ent]; ok {
				sb.WriteString(h)
			} else {
				return "", false
			}
		}
		i += semi + 1
	}
	s := sb.String()
	if !utf8.ValidString(s) {
		return "", false
	}
	return s, true
}
