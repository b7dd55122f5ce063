// Package constrain decides whether a piece of model output can still grow
// into a well-formed Spark tool call for the tools offered. An in-process
// engine uses it after the reasoning to let through only tokens that keep
// the answer valid, which makes an invalid call impossible.
//
// The accepted language is: optional leading white space, then exactly one
//
//	<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call>
//
// where NAME is an offered tool, each KEY one of its parameters (at most
// once, all required ones present), and VALUE fits the parameter's type:
// digits for integers (for "index" only the indices on the screen), a
// decimal number within bounds for numbers, one of the enum values, or any
// text not containing "<" for strings. Then the end of the turn.
package constrain

import (
	"strconv"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// Constraint checks answers against a set of tools.
type Constraint struct {
	tools   []action.Tool
	indices map[int]bool // valid values of "index"; nil = any non-negative
	maxText int
}

// New returns a constraint for tools. validIndices lists the element
// indices an "index" argument may take (nil allows any).
func New(tools []action.Tool, validIndices []int) *Constraint {
	c := &Constraint{tools: tools, maxText: 512}
	if validIndices != nil {
		c.indices = make(map[int]bool, len(validIndices))
		for _, i := range validIndices {
			c.indices[i] = true
		}
	}
	return c
}

const (
	openCall  = "<tool_call>"
	closeCall = "</tool_call>"
	openKey   = "<arg_key>"
	closeKey  = "</arg_key>"
	openVal   = "<arg_value>"
	closeVal  = "</arg_value>"
	maxLead   = 4
)

// Check reports whether answer is a prefix of some accepted text (viable)
// and whether it is accepted as it stands (complete), i.e. the turn may end
// now.
func (c *Constraint) Check(answer string) (viable, complete bool) {
	s := answer
	lead := len(s) - len(strings.TrimLeft(s, " \n"))
	if lead > maxLead {
		return false, false
	}
	s = s[lead:]
	if ok, whole := prefixOf(s, openCall); !whole {
		return ok, false
	}
	s = s[len(openCall):]

	// NAME, up to the first '<'.
	name, rest, closed := strings.Cut(s, "<")
	tool, nameOK := c.tool(name, closed)
	if !nameOK {
		return false, false
	}
	if !closed {
		return true, false
	}
	s = "<" + rest
	seen := map[string]bool{}
	for {
		// Either another argument or the end of the call.
		if strings.HasPrefix(s, openKey) {
			s = s[len(openKey):]
			key, rest, closed := strings.Cut(s, "<")
			p, ok := c.param(tool, key, closed, seen)
			if !ok {
				return false, false
			}
			if !closed {
				return true, false
			}
			s = "<" + rest
			if ok, whole := prefixOf(s, closeKey+openVal); !whole {
				return ok, false
			}
			s = s[len(closeKey+openVal):]
			seen[key] = true
			val, rest, closed := strings.Cut(s, "<")
			if !c.value(p, val, closed) {
				return false, false
			}
			if !closed {
				return true, false
			}
			s = "<" + rest
			if ok, whole := prefixOf(s, closeVal); !whole {
				return ok, false
			}
			s = s[len(closeVal):]
			continue
		}
		// Otherwise only the start of another argument or the end of the
		// call may follow, and nothing after the end.
		keyOK, _ := prefixOf(s, openKey)
		keyOK = keyOK && hasFreeParam(tool, seen)
		callOK, whole := prefixOf(s, closeCall)
		callOK = callOK && requiredPresent(tool, seen)
		if whole && callOK {
			return s == closeCall, s == closeCall
		}
		return keyOK || callOK, false
	}
}

// prefixOf reports whether s and lit agree on their common length (ok) and
// whether s starts with all of lit (whole).
func prefixOf(s, lit string) (ok, whole bool) {
	if len(s) >= len(lit) {
		return s[:len(lit)] == lit, s[:len(lit)] == lit
	}
	return lit[:len(s)] == s, false
}

func (c *Constraint) tool(name string, closed bool) (action.Tool, bool) {
	for _, t := range c.tools {
		if closed && t.Name == name {
			return t, true
		}
		if !closed && strings.HasPrefix(t.Name, name) {
			return t, true
		}
	}
	return action.Tool{}, false
}

func (c *Constraint) param(t action.Tool, key string, closed bool, seen map[string]bool) (action.Param, bool) {
	for _, p := range t.Params {
		if seen[p.Name] {
			continue
		}
		if closed && p.Name == key {
			return p, true
		}
		if !closed && strings.HasPrefix(p.Name, key) {
			return p, true
		}
	}
	return action.Param{}, false
}

func hasFreeParam(t action.Tool, seen map[string]bool) bool {
	for _, p := range t.Params {
		if !seen[p.Name] {
			return true
		}
	}
	return false
}

func requiredPresent(t action.Tool, seen map[string]bool) bool {
	for _, p := range t.Params {
		if p.Required && !seen[p.Name] {
			return false
		}
	}
	return true
}

// value reports whether v can be (closed: is) a value of p.
func (c *Constraint) value(p action.Param, v string, closed bool) bool {
	if closed && v == "" {
		return false
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if (closed && v == e) || (!closed && strings.HasPrefix(e, v)) {
				return true
			}
		}
		return false
	}
	switch p.Type {
	case action.Integer:
		if len(v) > 6 || strings.Trim(v, "0123456789") != "" || (len(v) > 1 && v[0] == '0') {
			return false
		}
		if p.Name == "index" && c.indices != nil {
			for i := range c.indices {
				s := strconv.Itoa(i)
				if (closed && s == v) || (!closed && strings.HasPrefix(s, v)) {
					return true
				}
			}
			return false
		}
		if v == "" {
			return true
		}
		n, _ := strconv.Atoi(v)
		return inRange(p, float64(n))
	case action.Number:
		if len(v) > 8 || strings.Trim(v, "0123456789.") != "" || strings.Count(v, ".") > 1 || strings.HasPrefix(v, ".") {
			return false
		}
		if closed && strings.HasSuffix(v, ".") {
			return false
		}
		if v == "" {
			return true
		}
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "."), 64)
		return err == nil && inRange(p, f)
	default:
		if len(v) > c.maxText || strings.ContainsAny(v, "\x00") {
			return false
		}
		// Only typed text keeps its white space; the parser trims other
		// strings (and reports it), so the model may not pad them.
		if !p.Verbatim {
			padded := strings.TrimRight(v, " \t\n") != v
			// Trailing space is viable only while a word can still follow it.
			if strings.TrimLeft(v, " \t\n") != v || padded && (closed || len(v) >= c.maxText) {
				return false
			}
		}
		return true
	}
}

// inRange checks bounds. Digits appended to a prefix only make it larger,
// so a prefix above the maximum is already lost.
func inRange(p action.Param, f float64) bool {
	if p.Min != nil && f < *p.Min {
		return false
	}
	if p.Max != nil && f > *p.Max {
		return false
	}
	return true
}
