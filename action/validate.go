package action

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Validate checks a call whose arguments are already coerced (int64 for
// integers, float64 for numbers, string for strings) against tools: the
// tool exists, required arguments are present (or have a Default), no unknown argument is
// given, types match, strings are among the allowed values and numbers are
// within bounds. It does not convert anything (toolparse.Coerce does); checks
// that depend on the screen, such as whether an index exists, are the
// loop's. The error names the valid choices.
func Validate(call Call, tools []Tool) error {
	t, ok := Lookup(tools, call.Name)
	if !ok {
		return fmt.Errorf("unknown tool %q; valid tools: %s", call.Name, strings.Join(Names(tools), ", "))
	}
	var problems []string
	for _, p := range t.Params {
		v, ok := call.Arguments[p.Name]
		if !ok || v == nil {
			if p.Required && p.Default == nil {
				problems = append(problems, MissingMessage(t, p))
			}
			continue
		}
		if msg := p.Check(v); msg != "" {
			problems = append(problems, msg)
		}
	}
	for _, k := range call.OrderedKeys(tools) {
		if _, ok := t.Param(k); !ok {
			problems = append(problems, fmt.Sprintf("unknown argument %q; %s takes %s", k, t.Name, t.ParamList()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}

// MissingMessage says that required parameter p of t is missing.
func MissingMessage(t Tool, p Param) string {
	return fmt.Sprintf("missing required argument %q (%s)", p.Name, p.TypeText())
}

// ParamList describes the tool's parameters, e.g. "direction (up|down|left|right), index (integer, optional)",
// or "no arguments".
func (t Tool) ParamList() string {
	if len(t.Params) == 0 {
		return "no arguments"
	}
	parts := make([]string, len(t.Params))
	for i, p := range t.Params {
		s := p.TypeText()
		if !p.Required {
			s += ", optional"
		}
		parts[i] = fmt.Sprintf("%s (%s)", p.Name, s)
	}
	return strings.Join(parts, ", ")
}

// TypeText describes the values p accepts: its allowed values joined by
// "|", or its type.
func (p Param) TypeText() string {
	if len(p.Enum) > 0 {
		return strings.Join(p.Enum, "|")
	}
	return string(p.Type)
}

// Check checks one coerced value against the parameter and returns a
// problem sentence, or "" when the value is acceptable.
func (p Param) Check(v any) string {
	switch p.Type {
	case Integer:
		n, ok := v.(int64)
		if !ok {
			return fmt.Sprintf("%s must be an integer, got %s", p.Name, Describe(v))
		}
		return p.CheckRange(float64(n))
	case Number:
		n, ok := v.(float64)
		if !ok {
			return fmt.Sprintf("%s must be a number, got %s", p.Name, Describe(v))
		}
		return p.CheckRange(n)
	case String:
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s must be a string, got %s", p.Name, Describe(v))
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return fmt.Sprintf("%s %q is not valid; valid values: %s", p.Name, s, strings.Join(p.Enum, ", "))
		}
	}
	return ""
}

// CheckRange checks a numeric value against the parameter's bounds.
func (p Param) CheckRange(n float64) string {
	switch {
	case p.Min != nil && p.Max != nil && (n < *p.Min || n > *p.Max):
		return fmt.Sprintf("%s %s is out of range; it must be between %s and %s", p.Name, num(n), num(*p.Min), num(*p.Max))
	case p.Min != nil && n < *p.Min:
		return fmt.Sprintf("%s %s is out of range; it must be at least %s", p.Name, num(n), num(*p.Min))
	case p.Max != nil && n > *p.Max:
		return fmt.Sprintf("%s %s is out of range; it must be at most %s", p.Name, num(n), num(*p.Max))
	}
	return ""
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Describe renders a value for an error message: strings quoted, numbers as
// written, other kinds by their JSON name.
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if r := []rune(x); len(r) > 40 {
			x = string(r[:37]) + "..."
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return num(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return fmt.Sprint(x)
	}
}
