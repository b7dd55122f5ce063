package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// The template sees JSON values the way Python's json module loads them:
// objects keep their key order, and integers and floats are distinct. Values
// here are nil, bool, string, json.Number (the number's text), Object and
// []any; Go numbers (int, int64, float64, ...) are accepted as well.

// Object is a JSON object that keeps its key order.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value of key.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// set replaces the value of key in place (where Python's dict keeps a
// repeated key) or appends it.
func (o Object) set(key string, v any) Object {
	for i := range o {
		if o[i].Key == key {
			o[i].Value = v
			return o
		}
	}
	return append(o, Member{key, v})
}

// MarshalJSON writes the object with its keys in order, so that a request
// built from Objects (ToolValue) reaches a server in the order the
// template renders.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseJSON decodes one JSON value, keeping object key order.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := Object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o = o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // nil, bool, string, json.Number
	}
}

// pyNumber classifies a number as Python would hold it: an int (text of its
// decimal digits) or a float.
func pyNumber(v any) (intText string, f float64, isInt bool, ok bool) {
	switch n := v.(type) {
	case json.Number:
		s := string(n)
		if !strings.ContainsAny(s, ".eE") {
			if strings.TrimLeft(strings.TrimPrefix(s, "-"), "0") == "" {
				return "0", 0, true, true // "-0" is int 0
			}
			return s, 0, true, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return "", 0, false, false
		}
		return "", f, false, true
	case int:
		return strconv.Itoa(n), 0, true, true
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(n), 0, true, true
	case float32:
		return pyNumber(float64(n))
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return "", n, false, true // no JSON text; the printers spell them
		}
		return pyNumber(goJSONNumber(n))
	}
	return "", 0, false, false
}

// goJSONNumber writes a Go float the way encoding/json does, so a value
// reaches the template as it would after a trip through an OpenAI request
// (2.0 becomes the integer 2). f must be finite.
func goJSONNumber(f float64) any {
	b, _ := json.Marshal(f)
	return json.Number(b)
}

// pyFloat formats f as Python's repr and json.dumps do; they differ only in
// how they spell infinities and NaN, which are inf and nan.
func pyFloat(f float64, inf, nan string) string {
	switch {
	case math.IsInf(f, 1):
		return inf
	case math.IsInf(f, -1):
		return "-" + inf
	case math.IsNaN(f):
		return nan
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // shortest digits, d.ddde±XX
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if decpt := exp + 1; decpt > 16 || decpt < -3 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// toJSON renders v as Python's json.dumps(v, ensure_ascii=False) does with
// its default separators, which is what the template's tojson filter is in
// HF transformers.
func toJSON(v any) (string, error) {
	var b strings.Builder
	if err := jsonPrinter.write(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// A printer is how one output form spells the leaves of a value; write walks
// the containers the same way for every form, so json.dumps and repr cannot
// disagree about which values they take.
type printer struct {
	null, yes, no string
	str           func(*strings.Builder, string)
	inf, nan      string // how floats that are not finite are spelled
	form          string // for errors: what the value is being written as
}

var (
	// jsonPrinter is Python's json.dumps.
	jsonPrinter = printer{null: "null", yes: "true", no: "false", str: writeJSONString, inf: "Infinity", nan: "NaN", form: "JSON"}
	// reprPrinter is Python's repr.
	reprPrinter = printer{null: "None", yes: "True", no: "False", str: writeReprString, inf: "inf", nan: "nan", form: "a Python value"}
)

// write renders v, which is one of the values the template takes (see the
// top of this file) or one goValue converts: []string, map[string]any (keys
// sorted) and *float64.
func (p *printer) write(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString(p.null)
	case bool:
		if x {
			b.WriteString(p.yes)
		} else {
			b.WriteString(p.no)
		}
	case string:
		p.str(b, x)
	case Object:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			p.str(b, m.Key)
			b.WriteString(": ")
			if err := p.write(b, m.Value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := p.write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case []string, map[string]any, *float64:
		return p.write(b, goValue(x))
	default:
		it, f, isInt, ok := pyNumber(v)
		if !ok {
			return fmt.Errorf("value of type %T cannot be written as %s", v, p.form)
		}
		if isInt {
			b.WriteString(it)
		} else {
			b.WriteString(pyFloat(f, p.inf, p.nan))
		}
	}
	return nil
}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyStr renders v as Python's str() does, which is what Jinja's ~ operator
// and {{ }} apply to non-strings: None, True/False, and repr for lists and
// dicts. Undefined values print as "" and are handled by callers.
func pyStr(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var b strings.Builder
	if err := reprPrinter.write(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeReprString writes Python's repr of a str.
func writeReprString(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x7F && r >= 0x20, r > 0x7F && unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
}

// truthy is Python's truth value of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case Object:
		return len(x) > 0
	case []any:
		return len(x) > 0
	case []string:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case *float64:
		return x != nil && *x != 0
	}
	it, f, isInt, ok := pyNumber(v)
	if !ok {
		return true
	}
	if isInt {
		return it != "0"
	}
	return f != 0
}
