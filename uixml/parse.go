package uixml

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Options tune how a dump becomes an element list. The zero value means the
// defaults.
type Options struct {
	// MaxElements caps the element list the model sees (default 80). The
	// rest is counted in Screen.Cut and named in the prompt.
	MaxElements int
	// MaxLabel caps a label's length in runes (default 80).
	MaxLabel int
}

// DefaultMaxElements is the element cap used when Options.MaxElements is 0.
// 80 elements at ~10 tokens each keeps a screen under ~1k tokens, a fair
// share of a small model's context.
const DefaultMaxElements = 80

// DefaultMaxLabel is the label cap used when Options.MaxLabel is 0.
const DefaultMaxLabel = 80

func (o Options) withDefaults() Options {
	if o.MaxElements <= 0 {
		o.MaxElements = DefaultMaxElements
	}
	if o.MaxLabel <= 0 {
		o.MaxLabel = DefaultMaxLabel
	}
	return o
}

// ErrTruncated is wrapped by the error Parse returns when the document ended
// before it was complete; the Screen returned with it holds what parsed.
var ErrTruncated = errors.New("uiautomator dump is truncated")

// ErrNotDump is wrapped by the error Parse returns when the input holds no
// uiautomator hierarchy at all.
var ErrNotDump = errors.New("not a uiautomator dump")

// Parse parses uiautomator dump output with the default Options.
func Parse(data []byte) (*Screen, error) { return ParseWithOptions(data, Options{}) }

// ParseWithOptions parses uiautomator dump output: the XML that
// `uiautomator dump` writes, with whatever noise real devices and shells add
// around it. On a truncated document it returns the Screen built from the
// nodes that parsed, with Truncated set, and an error wrapping ErrTruncated.
func ParseWithOptions(data []byte, opts Options) (*Screen, error) {
	doc, err := clean(data)
	if err != nil {
		return nil, err
	}
	b, perr := parseDoc(doc, true)
	if len(b.nodes) == 0 {
		if !b.sawHierarchy {
			return nil, fmt.Errorf("%w: no readable <hierarchy> or <node> element", ErrNotDump)
		}
		if perr != nil && !b.open {
			return nil, fmt.Errorf("uiautomator dump is not valid XML: %s", xmlErrText(perr))
		}
	}
	s := &Screen{Nodes: b.nodes, Rotation: b.rotation, opts: opts.withDefaults()}
	var retErr error
	if perr != nil {
		s.Truncated = true
		switch {
		case b.tooDeep:
			retErr = fmt.Errorf("%w (%w): kept the %d nodes before the first one deeper than %d levels", ErrTruncated, ErrTooDeep, len(b.nodes), MaxDepth)
		case b.open:
			retErr = fmt.Errorf("%w: the document ends inside an element; kept the %d nodes before it", ErrTruncated, len(b.nodes))
		default:
			retErr = fmt.Errorf("%w: the XML breaks off after %d nodes (%s)", ErrTruncated, len(b.nodes), xmlErrText(perr))
		}
	}
	s.size(b.width, b.height)
	s.build()
	return s, retErr
}

// MaxDepth is how deeply nodes may nest. Real dumps stay under a hundred
// levels; a deeper one is hostile or broken, and reading it on would make
// the parse stack, and every printout indented by depth, grow with it.
// Parsing stops at the first node deeper than this: the Screen holds the
// nodes before it, with Truncated set, and the error wraps ErrTruncated and
// ErrTooDeep.
const MaxDepth = 512

// ErrTooDeep is wrapped, with ErrTruncated, by the error Parse returns when
// the dump nests deeper than MaxDepth.
var ErrTooDeep = errors.New("uiautomator dump nests too deeply")

// parseDoc builds the nodes of a cleaned document. With fast, the
// purpose-built scanner reads it when it can (well-formed uiautomator
// output); anything it does not handle goes to a token stream of
// encoding/xml, the general parser, which keeps every node that came before
// any damage and returns the error. Both hold only the nodes and a stack
// at most MaxDepth deep, so memory stays a small multiple of the input
// (a tree of the whole document, as xmlquery builds, took sixteen times it).
func parseDoc(doc []byte, fast bool) (*builder, error) {
	if fast {
		b := &builder{}
		if b.scan(doc) {
			if b.tooDeep {
				return b, errTooDeep
			}
			return b, nil
		}
	}
	b := &builder{}
	return b, b.stream(doc)
}

// errTooDeep is the parse error of a document nesting deeper than MaxDepth.
var errTooDeep = fmt.Errorf("%w: nodes nest deeper than %d levels", ErrTooDeep, MaxDepth)

// xmlErrText gives a parse error's message without the package prefixes.
func xmlErrText(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "XML syntax error on ")
	return msg
}

// clean turns raw dump bytes into UTF-8 XML that starts at the hierarchy
// and ends after it, whatever the device or the shell wrapped around it.
func clean(data []byte) ([]byte, error) {
	switch {
	case len(data) >= 2 && data[0] == 0xFF && data[1] == 0xFE:
		data = decodeUTF16(data[2:], false)
	case len(data) >= 2 && data[0] == 0xFE && data[1] == 0xFF:
		data = decodeUTF16(data[2:], true)
	default:
		switch utf16Guess(data) {
		case 1:
			data = decodeUTF16(data, false)
		case 2:
			data = decodeUTF16(data, true)
		}
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))

	// Leading noise ("ERROR: could not get idle state.", the XML declaration
	// whose encoding label may lie after a UTF-16 conversion) goes; the
	// hierarchy itself is where the dump starts.
	start := bytes.Index(data, []byte("<hierarchy"))
	if start < 0 {
		start = bytes.Index(data, []byte("<node"))
	}
	if start < 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, fmt.Errorf("%w: the input is empty", ErrNotDump)
		}
		return nil, fmt.Errorf("%w: no <hierarchy> or <node> element", ErrNotDump)
	}
	data = data[start:]
	// Trailing noise: "UI hierchary dumped to: /dev/tty" and anything else
	// after the closing tag.
	if end := bytes.LastIndex(data, []byte("</hierarchy>")); end >= 0 {
		data = data[:end+len("</hierarchy>")]
	} else if gt := bytes.LastIndexByte(data, '>'); gt >= 0 {
		if i := bytes.Index(data[gt:], []byte("UI hierchary dumped to")); i >= 0 {
			data = data[:gt+i]
		} else if i := bytes.Index(data[gt:], []byte("UI hierarchy dumped to")); i >= 0 {
			data = data[:gt+i]
		}
	}
	return sanitize(data), nil
}

// utf16Guess recognises UTF-16 without a byte order mark from the zero
// bytes of ASCII text in its first bytes: 1 for little endian, 2 for big
// endian, 0 for neither.
func utf16Guess(data []byte) int {
	n := min(len(data), 256) &^ 1
	if n < 4 {
		return 0
	}
	zeroEven, zeroOdd := 0, 0
	for i := 0; i < n; i += 2 {
		if data[i] == 0 {
			zeroEven++
		}
		if data[i+1] == 0 {
			zeroOdd++
		}
	}
	half := n / 2
	switch {
	case zeroOdd*10 >= half*9 && zeroEven*10 <= half:
		return 1
	case zeroEven*10 >= half*9 && zeroOdd*10 <= half:
		return 2
	}
	return 0
}

// decodeUTF16 converts UTF-16 bytes to UTF-8. An odd trailing byte (a cut
// file) is dropped; broken surrogates become U+FFFD.
func decodeUTF16(b []byte, bigEndian bool) []byte {
	u := make([]uint16, len(b)/2)
	for i := range u {
		if bigEndian {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	out := make([]byte, 0, len(u)+len(u)/4)
	for _, r := range utf16.Decode(u) {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// sanitize makes data acceptable to encoding/xml without losing text:
// invalid UTF-8 becomes U+FFFD, control characters XML forbids become
// spaces, and surrogate character references (written by old uiautomator
// versions for emoji) become the characters they encode.
func sanitize(data []byte) []byte {
	if utf8.Valid(data) && !bytes.Contains(data, []byte("&#")) && !hasControl(data) {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '&' && i+1 < len(data) && data[i+1] == '#':
			r, n := charRef(data[i:])
			if n == 0 {
				out = append(out, c)
				i++
				continue
			}
			if r >= 0xD800 && r <= 0xDBFF {
				if r2, n2 := charRef(data[i+n:]); n2 > 0 && r2 >= 0xDC00 && r2 <= 0xDFFF {
					out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
					i += n + n2
					continue
				}
			}
			if r >= 0xD800 && r <= 0xDFFF || !validXMLRune(r) {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, data[i:i+n]...)
			}
			i += n
		case c < 0x80:
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				c = ' '
			}
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 || !validXMLRune(r) {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			i += n
		}
	}
	return out
}

// hasControl reports a control character XML does not allow. It tests
// eight bytes at a time: dumps are large and almost never have one.
func hasControl(data []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		// Some byte is below 0x20 (for ASCII bytes; others are checked below).
		if (x-ones*0x20)&^x&highs == 0 {
			continue
		}
		for _, c := range data[i : i+8] {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return true
			}
		}
	}
	for _, c := range data[i:] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

// charRef reads a numeric character reference "&#123;" or "&#x7B;" at the
// start of b and returns its rune and length, or n == 0 if there is none.
func charRef(b []byte) (r rune, n int) {
	if len(b) < 4 || b[0] != '&' || b[1] != '#' {
		return 0, 0
	}
	i, base := 2, 10
	if b[2] == 'x' || b[2] == 'X' {
		i, base = 3, 16
	}
	j := i
	for j < len(b) && j-i < 8 && b[j] != ';' {
		j++
	}
	if j >= len(b) || b[j] != ';' || j == i {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(b[i:j]), base, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, 0
	}
	return rune(v), j + 1
}

func validXMLRune(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// builder collects nodes from either the scanner or the token stream.
type builder struct {
	nodes         []Node
	rotation      int
	width, height int
	sawHierarchy  bool
	open          bool // the stream ended inside an element or tag
	tooDeep       bool // parsing stopped at a node deeper than MaxDepth
}

type attr struct{ name, value string }

// element handles one start tag; it returns the index of the new node, or
// -1 when the tag is not a node.
func (b *builder) element(tag string, attrs []attr, parent, depth int) int {
	if tag == "hierarchy" {
		b.sawHierarchy = true
		for _, a := range attrs {
			switch a.name {
			case "rotation":
				if v, err := strconv.Atoi(strings.TrimSpace(a.value)); err == nil && v >= 0 && v <= 3 {
					b.rotation = v
				}
			case "width":
				b.width = atoiClamp(a.value)
			case "height":
				b.height = atoiClamp(a.value)
			}
		}
		return -1
	}
	b.sawHierarchy = true
	n := Node{Enabled: true, Parent: parent, Depth: depth, Index: -1}
	if tag != "node" {
		// Appium-style page sources name the element after its class.
		n.Class = tag
	}
	for _, a := range attrs {
		setAttr(&n, a.name, a.value)
	}
	b.nodes = append(b.nodes, n)
	return len(b.nodes) - 1
}

// setAttr sets the attribute name of n from its value v.
func setAttr(n *Node, name, v string) {
	switch name {
	case "text":
		n.Text = v
	case "content-desc":
		n.Desc = v
	case "resource-id":
		n.ResourceID = v
	case "class":
		n.Class = v
	case "package":
		n.Package = v
	case "hint":
		n.Hint = v
	case "bounds":
		n.Bounds, n.BadBounds = parseBounds(v)
	case "checkable":
		n.Checkable = isTrue(v)
	case "checked":
		n.Checked = isTrue(v)
	case "clickable":
		n.Clickable = isTrue(v)
	case "long-clickable":
		n.LongClickable = isTrue(v)
	case "scrollable":
		n.Scrollable = isTrue(v)
	case "focusable":
		n.Focusable = isTrue(v)
	case "focused":
		n.Focused = isTrue(v)
	case "enabled":
		n.Enabled = isTrue(v)
	case "selected":
		n.Selected = isTrue(v)
	case "password":
		n.Password = isTrue(v)
	case "visible-to-user", "displayed":
		n.Hidden = !isTrue(v)
	}
}

func isTrue(v string) bool { return v == "true" || strings.EqualFold(strings.TrimSpace(v), "true") }

// stream reads doc token by token and keeps every node seen before the
// first error, which it returns (nil when the document was complete).
func (b *builder) stream(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	type frame struct{ node, depth, parent int }
	var stack []frame
	parent, depth := -1, 0
	for {
		tok, err := d.RawToken()
		if err != nil {
			if err == io.EOF {
				if len(stack) == 0 {
					return nil
				}
				b.open = true
				return io.ErrUnexpectedEOF
			}
			// A syntax error at the very end is a cut-off tag; one before
			// it is damage in the middle.
			b.open = b.looksCut(doc, d.InputOffset())
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > MaxDepth {
				b.tooDeep = true
				return errTooDeep
			}
			attrs := make([]attr, len(t.Attr))
			for i, a := range t.Attr {
				attrs[i] = attr{a.Name.Local, a.Value}
			}
			idx := b.element(t.Name.Local, attrs, parent, depth)
			stack = append(stack, frame{idx, depth, parent})
			if idx >= 0 {
				parent, depth = idx, depth+1
			}
		case xml.EndElement:
			if len(stack) == 0 {
				continue
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			parent, depth = f.parent, f.depth
		}
	}
}

// looksCut reports whether a decode error at off is the end of the input,
// which is how a cut-off tag shows up.
func (b *builder) looksCut(doc []byte, off int64) bool {
	return int(off) >= len(bytes.TrimRight(doc, " \t\r\n"))
}

// parseBounds reads "[x1,y1][x2,y2]"; bad text gives a zero Rect and ok=false
// reported as BadBounds.
func parseBounds[T string | []byte](s T) (Rect, bool) {
	var v [4]int
	k := 0
	i := 0
	for k < 4 {
		for i < len(s) && (s[i] == '[' || s[i] == ']' || s[i] == ',' || s[i] == ' ') {
			i++
		}
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			return Rect{}, true
		}
		v[k] = atoiDigits(s[i:j])
		k++
		i = j
	}
	return Rect{v[0], v[1], v[2], v[3]}, false
}

// atoiDigits parses an optionally signed run of digits, clamping it to
// ±1e7 like atoiClamp.
func atoiDigits[T string | []byte](s T) int {
	neg := false
	i := 0
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		i = 1
	}
	n := 0
	for ; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > 10_000_000 {
			n = 10_000_000
		}
	}
	if neg {
		return -n
	}
	return n
}

// atoiClamp parses an integer, clamping it to ±1e7 so that later area and
// centre arithmetic cannot overflow; bad text gives 0.
func atoiClamp(s string) int {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0
		}
		if strings.HasPrefix(s, "-") {
			return -1e7
		}
		return 1e7
	}
	const lim = 10_000_000
	return int(max(-lim, min(lim, n)))
}
