package toolparse

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
)

// FormatCall writes a call as NAME(key=value, ...), the form ReadCall reads
// back exactly: keys in the order tools declares them, strings as JSON
// strings, numbers as written. A person edits calls in this form.
func FormatCall(c action.Call, tools []action.Tool) string {
	if tools == nil {
		tools = action.Tools
	}
	return c.Format(tools, jsonString)
}

// jsonString quotes s as JSON does, without escaping <, > and &, which a
// person reads better as they are.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ReadCall reads one call a person wrote: NAME(key=value, ...) (values
// quoted, bare words or numbers; values without a key taken as the tool's
// parameters in declared order), NAME alone, or a JSON object such as
// {"name": ..., "arguments": {...}}. The call is then coerced and checked
// with Coerce, whose repairs (a number written as a string, an argument
// the tool does not take) are returned as recoveries.
//
// Unlike Parse, ReadCall repairs no syntax: the whole text must be the
// call, and an unclosed string, bracket or parenthesis, an argument given
// twice or text after the call is an error.
func ReadCall(s string, tools []action.Tool) (action.Call, []string, error) {
	if tools == nil {
		tools = action.Tools
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return action.Call{}, nil, errors.New("the call is empty")
	case !utf8.ValidString(s):
		return action.Call{}, nil, errors.New("the call is not UTF-8 text")
	case strings.HasPrefix(s, "{"):
		return readJSONCall(s, tools)
	}
	if !isIdentStart(s[0]) {
		return action.Call{}, nil, errors.New(`write the call as name(key=value, ...), e.g. tap(index=3)`)
	}
	fc, ok := scanFuncCall(s, 0)
	if !ok {
		if isIdentWord(s) { // a call without arguments: Coerce says what is missing
			return finishRead(candidate{name: s, args: map[string]any{}}, tools)
		}
		return action.Call{}, nil, errors.New(`write the call as name(key=value, ...), e.g. tap(index=3)`)
	}
	switch {
	case fc.rep.stringCut:
		return action.Call{}, nil, errors.New("a quoted value is not closed")
	case fc.rep.closedAtEnd > 0 || fc.rep.closedEarly > 0 || fc.rep.mismatched:
		return action.Call{}, nil, errors.New("a bracket in a value is not closed")
	case fc.rep.innerQuote:
		return action.Call{}, nil, errors.New(`a quoted value holds an unescaped quote; write it as \"`)
	case !fc.closed && fc.c.end >= len(s):
		return action.Call{}, nil, errors.New("missing ) at the end")
	case fc.c.end < len(s):
		return action.Call{}, nil, fmt.Errorf("cannot read the call from %q on", cut(s[fc.c.end:], 20))
	case fc.dup != "":
		if strings.Trim(fc.dup, "\x00") == "" {
			return action.Call{}, nil, errors.New("a value without a key was read twice")
		}
		return action.Call{}, nil, fmt.Errorf("argument %s given twice", fc.dup)
	}
	return finishRead(fc.c, tools)
}

func readJSONCall(s string, tools []action.Tool) (action.Call, []string, error) {
	r := &jsonReader{s: s}
	v, err := r.value()
	if err != nil {
		return action.Call{}, nil, fmt.Errorf("bad JSON: %v", err)
	}
	if r.rep.stringCut || r.rep.closedAtEnd > 0 || r.rep.closedEarly > 0 || r.rep.mismatched || r.rep.innerQuote {
		return action.Call{}, nil, fmt.Errorf("bad JSON: %s", r.rep.notes()[0])
	}
	r.ws()
	if !r.eof() {
		return action.Call{}, nil, errors.New("bad JSON: text after the object")
	}
	cs := callsFromJSON(v, FormatJSON, tools, 0)
	if len(cs) != 1 {
		return action.Call{}, nil, errors.New(`bad JSON: write one call as {"name": ..., "arguments": {...}}`)
	}
	return finishRead(cs[0], tools)
}

func finishRead(c candidate, tools []action.Tool) (action.Call, []string, error) {
	// The reading notes describe the syntax used, which a person chose.
	c.notes = nil
	call, rec, err := finish(c, tools)
	if err != nil {
		return action.Call{}, nil, err
	}
	return call, rec, nil
}

func isIdentWord(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// cut shortens s to n runes for an error message.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
