package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/droidgo/droidgo/action"
)

// formatCall renders a call for editing, in the form parseCall reads back.
func formatCall(c action.Call) string { return c.String() }

// parseCall reads a call the user typed while editing, either as
// NAME(key=value, ...) (strings quoted or bare words, numbers plain), or as
// JSON {"name": ..., "arguments": {...}}. Arguments are checked and coerced
// against the action space, so what it returns can be run as it is.
func parseCall(s string) (action.Call, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return action.Call{}, errors.New("the call is empty")
	}
	var (
		name string
		args map[string]any
		err  error
	)
	if strings.HasPrefix(s, "{") {
		name, args, err = parseJSONCall(s)
	} else {
		name, args, err = parseFuncCall(s)
	}
	if err != nil {
		return action.Call{}, err
	}
	return coerceCall(name, args)
}

func parseJSONCall(s string) (string, map[string]any, error) {
	var raw struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&raw); err != nil {
		return "", nil, fmt.Errorf("bad JSON: %v", err)
	}
	if dec.More() {
		return "", nil, errors.New("bad JSON: text after the object")
	}
	args := map[string]any{}
	a := bytes.TrimSpace(raw.Arguments)
	if len(a) > 0 && a[0] == '"' { // arguments given as a JSON string, as OpenAI does
		var inner string
		if err := json.Unmarshal(a, &inner); err != nil {
			return "", nil, fmt.Errorf("bad arguments: %v", err)
		}
		a = []byte(inner)
	}
	if len(a) > 0 && string(a) != "null" {
		d := json.NewDecoder(bytes.NewReader(a))
		d.UseNumber()
		if err := d.Decode(&args); err != nil {
			return "", nil, fmt.Errorf("bad arguments: %v", err)
		}
	}
	return raw.Name, args, nil
}

func parseFuncCall(s string) (string, map[string]any, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if isIdent(s) { // a call without arguments, e.g. "wait" is caught by coercion
			return s, map[string]any{}, nil
		}
		return "", nil, errors.New(`write the call as name(key=value, ...), e.g. tap(index=3)`)
	}
	name := strings.TrimSpace(s[:open])
	if !isIdent(name) {
		return "", nil, fmt.Errorf("%q is not a tool name", name)
	}
	if !strings.HasSuffix(s, ")") {
		return "", nil, errors.New("missing ) at the end")
	}
	body := s[open+1 : len(s)-1]
	args := map[string]any{}
	p := argScanner{s: body}
	for {
		p.skipSpace()
		if p.done() {
			break
		}
		k := p.ident()
		if k == "" {
			return "", nil, fmt.Errorf("expected an argument name at %q", p.rest())
		}
		p.skipSpace()
		if !p.eat('=') && !p.eat(':') {
			return "", nil, fmt.Errorf("expected = after %s", k)
		}
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return "", nil, fmt.Errorf("argument %s: %w", k, err)
		}
		if _, dup := args[k]; dup {
			return "", nil, fmt.Errorf("argument %s given twice", k)
		}
		args[k] = v
		p.skipSpace()
		if p.done() {
			break
		}
		if !p.eat(',') {
			return "", nil, fmt.Errorf("expected , or ) at %q", p.rest())
		}
	}
	return name, args, nil
}

type argScanner struct {
	s string
	i int
}

func (p *argScanner) done() bool   { return p.i >= len(p.s) }
func (p *argScanner) rest() string { return p.s[p.i:] }

func (p *argScanner) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *argScanner) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *argScanner) ident() string {
	start := p.i
	for p.i < len(p.s) && isIdentByte(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// value reads a quoted string ("..." with Go escapes, or '...' verbatim),
// or a bare token up to the next comma: a number if it reads as one, else a
// word such as up or back.
func (p *argScanner) value() (any, error) {
	if p.done() {
		return nil, errors.New("missing value")
	}
	switch p.s[p.i] {
	case '"':
		j := p.i + 1
		for j < len(p.s) && p.s[j] != '"' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(p.s) {
			return nil, errors.New("unterminated string")
		}
		v, err := strconv.Unquote(p.s[p.i : j+1])
		if err != nil {
			return nil, fmt.Errorf("bad string %s", p.s[p.i:j+1])
		}
		p.i = j + 1
		return v, nil
	case '\'':
		j := strings.IndexByte(p.s[p.i+1:], '\'')
		if j < 0 {
			return nil, errors.New("unterminated string")
		}
		v := p.s[p.i+1 : p.i+1+j]
		p.i += j + 2
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ',' {
		p.i++
	}
	tok := strings.TrimSpace(p.s[start:p.i])
	if tok == "" {
		return nil, errors.New("missing value")
	}
	if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(tok, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f, nil
	}
	return tok, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(s string) bool {
	if s == "" || unicode.IsDigit(rune(s[0])) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// coerceCall checks a call against the action space and converts its
// arguments to the schema's types (int64, float64, string).
func coerceCall(name string, args map[string]any) (action.Call, error) {
	tool, ok := action.Lookup(action.Tools, name)
	if !ok {
		return action.Call{}, fmt.Errorf("unknown tool %q; the tools are %s", name, strings.Join(action.Names(action.Tools), ", "))
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		p, ok := tool.Param(k)
		if !ok {
			return action.Call{}, fmt.Errorf("%s has no argument %q", name, k)
		}
		cv, err := coerceValue(p, v)
		if err != nil {
			return action.Call{}, fmt.Errorf("argument %s: %w", k, err)
		}
		out[k] = cv
	}
	for _, p := range tool.Params {
		if _, ok := out[p.Name]; p.Required && !ok {
			return action.Call{}, fmt.Errorf("%s needs the argument %s", name, p.Name)
		}
	}
	return action.Call{Name: name, Arguments: out}, nil
}

func coerceValue(p action.Param, v any) (any, error) {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		} else {
			return nil, fmt.Errorf("bad number %s", n)
		}
	}
	var num float64
	switch p.Type {
	case action.Integer:
		switch x := v.(type) {
		case int64:
			num = float64(x)
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, fmt.Errorf("want a whole number, got %v", x)
			}
			num = x
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("want a whole number, got %q", x)
			}
			num = float64(i)
		default:
			return nil, fmt.Errorf("want a whole number, got %v", x)
		}
		if err := checkRange(p, num); err != nil {
			return nil, err
		}
		return int64(num), nil
	case action.Number:
		switch x := v.(type) {
		case int64:
			num = float64(x)
		case float64:
			num = x
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("want a number, got %q", x)
			}
			num = f
		default:
			return nil, fmt.Errorf("want a number, got %v", x)
		}
		if err := checkRange(p, num); err != nil {
			return nil, err
		}
		return num, nil
	default:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case int64:
			s = strconv.FormatInt(x, 10)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return nil, fmt.Errorf("want text, got %v", x)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(p.Enum, ", "))
		}
		return s, nil
	}
}

func checkRange(p action.Param, v float64) error {
	if p.Min != nil && v < *p.Min {
		return fmt.Errorf("%v is below %v", v, *p.Min)
	}
	if p.Max != nil && v > *p.Max {
		return fmt.Errorf("%v is above %v", v, *p.Max)
	}
	return nil
}
