package simulator

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// env resolves the names a condition or a template may mention: state
// variables, fields of the list item being rendered or tapped (item.NAME),
// and the text of the tapped element (text).
type env interface {
	lookup(name string) (string, bool)
}

// cond is one parsed condition: "name", "!name", or "name OP value".
// OP "~=" is a search match: every word of the variable's value starts a
// word of value, ignoring case, and the variable is not blank.
type cond struct {
	src   string
	name  string
	neg   bool   // "!name"
	op    string // "", "==", "!=", "~=", "<", "<=", ">", ">="
	value string
}

var condOps = []string{"==", "!=", "~=", "<=", ">=", "<", ">"}

// parseCond parses one condition. Values may be quoted with single or double
// quotes; bare values run to the end of the string.
func parseCond(s string) (cond, error) {
	c := cond{src: s}
	t := strings.TrimSpace(s)
	if t == "" {
		return c, fmt.Errorf("empty condition")
	}
	for _, op := range condOps {
		i := strings.Index(t, op)
		if i < 0 {
			continue
		}
		c.name = strings.TrimSpace(t[:i])
		c.op = op
		v := strings.TrimSpace(t[i+len(op):])
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		c.value = v
		if (op != "==" && op != "!=" && op != "~=") && !isNumber(v) {
			return c, fmt.Errorf("condition %q: %s needs a number on the right", s, op)
		}
		break
	}
	if c.op == "" {
		c.name = t
		if strings.HasPrefix(t, "!") {
			c.neg = true
			c.name = strings.TrimSpace(t[1:])
		}
	}
	if !isName(c.name) {
		return c, fmt.Errorf("condition %q: %q is not a variable name", s, c.name)
	}
	return c, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// isName accepts identifiers with dots (item.time) and dashes.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (unicode.IsDigit(r) || r == '.' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// truthy is how a bare variable name reads as a condition.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "0", "off", "no":
		return false
	}
	return true
}

func (c cond) eval(e env) bool {
	v, _ := e.lookup(c.name)
	switch c.op {
	case "":
		return truthy(v) != c.neg
	case "==":
		return v == c.value
	case "!=":
		return v != c.value
	case "~=":
		return searchMatch(v, c.value)
	}
	a, err1 := strconv.ParseFloat(strings.TrimSpace(v), 64)
	b, err2 := strconv.ParseFloat(c.value, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	switch c.op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	}
	return false
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// searchMatch reports whether query finds title the way a settings search
// does: each query word is the start of some title word.
func searchMatch(query, title string) bool {
	q := words(query)
	if len(q) == 0 {
		return false
	}
	tw := words(title)
	for _, w := range q {
		found := false
		for _, t := range tw {
			found = found || strings.HasPrefix(t, w)
		}
		if !found {
			return false
		}
	}
	return true
}

func parseConds(src []string) ([]cond, error) {
	out := make([]cond, 0, len(src))
	for _, s := range src {
		c, err := parseCond(s)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func allHold(cs []cond, e env) bool {
	for _, c := range cs {
		if !c.eval(e) {
			return false
		}
	}
	return true
}

// tmpl is a string with ${name} or ${name|filter} references.
type tmpl struct {
	parts []tmplPart
}

type tmplPart struct {
	lit    string
	name   string // reference when non-empty
	filter string
}

// filters transform a substituted value.
var filters = map[string]func(string) string{
	"pad2": func(s string) string {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 && n < 10 {
			return "0" + strconv.Itoa(n)
		}
		return s
	},
	"int": func(s string) string {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			return strconv.Itoa(n)
		}
		return s
	},
	"onoff": func(s string) string {
		if truthy(s) {
			return "On"
		}
		return "Off"
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
}

func parseTmpl(s string) (tmpl, error) {
	var t tmpl
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			if s != "" {
				t.parts = append(t.parts, tmplPart{lit: s})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: s[:i]})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return t, fmt.Errorf("unclosed ${ in %q", s)
		}
		ref := s[i+2 : i+j]
		name, filter, _ := strings.Cut(ref, "|")
		name, filter = strings.TrimSpace(name), strings.TrimSpace(filter)
		if !isName(name) {
			return t, fmt.Errorf("%q in %q is not a variable name", ref, s)
		}
		if filter != "" && filters[filter] == nil {
			return t, fmt.Errorf("unknown filter %q in %q (known: int, lower, onoff, pad2, trim, upper)", filter, s)
		}
		t.parts = append(t.parts, tmplPart{name: name, filter: filter})
		s = s[i+j+1:]
	}
}

func (t tmpl) isConst() bool {
	for _, p := range t.parts {
		if p.name != "" {
			return false
		}
	}
	return true
}

func (t tmpl) refs() []string {
	var out []string
	for _, p := range t.parts {
		if p.name != "" {
			out = append(out, p.name)
		}
	}
	return out
}

func (t tmpl) expand(e env) string {
	if len(t.parts) == 1 && t.parts[0].name == "" {
		return t.parts[0].lit
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.lit)
			continue
		}
		v, _ := e.lookup(p.name)
		if p.filter != "" {
			v = filters[p.filter](v)
		}
		b.WriteString(v)
	}
	return b.String()
}
