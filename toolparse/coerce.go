package toolparse

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/droidgo/droidgo/action"
)

// Coerce converts a call's arguments to the types tools declare (int64 for
// integers, float64 for numbers, string for strings) and checks it. It
// repairs what has one obvious reading — a tool name in another case or
// spelling (Tap, long-press, longPress), a number written as a string, 3.0
// for an integer, a key name in another form (KEYCODE_BACK), an argument
// under a known synonym (element for index), unknown extra arguments — and
// describes each repair in recoveries. err, when not nil, says in one
// sentence what could not be fixed and names the valid choices; the
// returned call is then only partly usable.
//
// A nil tools means action.Tools. Calls that an HTTP server parsed itself
// can go through Coerce as well as calls found by Parse.
func Coerce(call action.Call, tools []action.Tool) (action.Call, []string, error) {
	if tools == nil {
		tools = action.Tools
	}
	var rec []string
	name, ok := resolveName(call.Name, tools)
	if !ok {
		return call, nil, unknownTool(call.Name, tools)
	}
	if name != call.Name {
		rec = append(rec, fmt.Sprintf("tool name %q is not exact; read it as %q", call.Name, name))
	}
	t, _ := action.Lookup(tools, name)
	out := action.Call{Name: name, Arguments: map[string]any{}}

	// Arguments the tool does not declare: a synonym of a missing
	// parameter is moved to it; the rest are dropped.
	given := map[string]any{}
	var unknown []string
	for k, v := range call.Arguments {
		if _, ok := t.Param(k); ok {
			given[k] = v
		} else {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, p := range t.Params {
		if _, ok := given[p.Name]; ok {
			continue
		}
		if from := synonymFor(p, unknown); from != "" {
			given[p.Name] = call.Arguments[from]
			unknown = slices.DeleteFunc(unknown, func(s string) bool { return s == from })
			rec = append(rec, fmt.Sprintf("%s has no argument %q; used it as %q", name, from, p.Name))
		}
	}
	// A single leftover argument for a single missing required parameter
	// is taken as that parameter when its value fits.
	if missing := missingRequired(t, given); len(missing) == 1 && len(unknown) == 1 {
		p := missing[0]
		if _, _, msg := coerceValue(p, call.Arguments[unknown[0]]); msg == "" {
			given[p.Name] = call.Arguments[unknown[0]]
			rec = append(rec, fmt.Sprintf("%s has no argument %q; used it as the missing %q", name, unknown[0], p.Name))
			unknown = nil
		}
	}
	if len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(u)
		}
		rec = append(rec, fmt.Sprintf("%s does not take %s; dropped %s (it takes %s)", name, strings.Join(quoted, ", "), plural(len(unknown), "it", "them"), t.ParamList()))
	}

	var problems []string
	for _, p := range t.Params {
		v, ok := given[p.Name]
		if !ok || v == nil {
			switch {
			case p.Required && p.Default != nil:
				out.Arguments[p.Name] = p.Default
				rec = append(rec, fmt.Sprintf("%s has no %s; took %s", name, p.Name, defaultText(p.Default)))
			case p.Required:
				problems = append(problems, action.MissingMessage(t, p))
			case ok:
				rec = append(rec, fmt.Sprintf("%s: %s was null; left it out", name, p.Name))
			}
			continue
		}
		cv, note, msg := coerceValue(p, v)
		if msg != "" {
			problems = append(problems, msg)
			continue
		}
		if note != "" {
			rec = append(rec, name+": "+note)
		}
		if msg := p.Check(cv); msg != "" {
			problems = append(problems, msg)
			continue
		}
		out.Arguments[p.Name] = cv
	}
	if len(problems) > 0 {
		return out, rec, fmt.Errorf("%s: %s", name, strings.Join(problems, "; "))
	}
	return out, rec, nil
}

// defaultText says what an argument left out was taken as.
func defaultText(v any) string {
	if v == "" {
		return "it as empty"
	}
	return fmt.Sprintf("%v", v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func unknownTool(name string, tools []action.Tool) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("tool call has no tool name; valid tools: %s", strings.Join(action.Names(tools), ", "))
	}
	return fmt.Errorf("unknown tool %q; valid tools: %s", name, strings.Join(action.Names(tools), ", "))
}

func missingRequired(t action.Tool, given map[string]any) []action.Param {
	var out []action.Param
	for _, p := range t.Params {
		if v, ok := given[p.Name]; p.Required && (!ok || v == nil) {
			out = append(out, p)
		}
	}
	return out
}

// paramSynonyms are other names small models give the action space's
// parameters.
var paramSynonyms = map[string][]string{
	"index":     {"idx", "element", "element_id", "element_index", "elementindex", "elem", "id", "target", "node", "item", "number", "num", "i"},
	"text":      {"value", "content", "input", "string", "query", "input_text", "txt", "message"},
	"direction": {"dir", "swipe_direction", "scroll_direction", "way"},
	"key":       {"keycode", "key_code", "key_name", "keyname", "button", "name"},
	"name":      {"app", "app_name", "appname", "package", "package_name", "application", "app_label", "label"},
	"seconds":   {"time", "duration", "secs", "sec", "s", "second", "timeout", "delay"},
	"summary":   {"message", "result", "answer", "text", "reason", "description", "status", "output"},
}

func synonymFor(p action.Param, unknown []string) string {
	for _, syn := range paramSynonyms[p.Name] {
		for _, u := range unknown {
			if strings.EqualFold(u, syn) {
				return u
			}
		}
	}
	return ""
}

// resolveName finds the tool a name means, forgiving case, separators,
// camelCase and a dotted namespace (functions.tap).
func resolveName(name string, tools []action.Tool) (string, bool) {
	if _, ok := action.Lookup(tools, name); ok {
		return name, true
	}
	n := normalizeName(name)
	if _, ok := action.Lookup(tools, n); ok {
		return n, true
	}
	// Separators dropped entirely: longpress, typetext.
	flat := strings.ReplaceAll(n, "_", "")
	for _, t := range tools {
		if strings.ReplaceAll(t.Name, "_", "") == flat {
			return t.Name, true
		}
	}
	return "", false
}

func normalizeName(name string) string {
	s := strings.TrimSpace(name)
	s = strings.Trim(s, "`'\"*[]()<>:.,;")
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r == '-' || r == ' ' || r == '_':
			b.WriteByte('_')
			prevLower = false
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		default:
			b.WriteRune(r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		}
	}
	return b.String()
}

var (
	// An integer in light wrapping: "#3", "[3]", "(3)", "3.".
	wrappedInt = regexp.MustCompile(`^[#\[(]?\s*(-?\d+)\s*[\]).]?$`)
	// An element number with the element's line or name after it, as a
	// model copies it from the prompt: "[3] Wi-Fi", "[3] switch \"Wi-Fi\"",
	// "3 (Wi-Fi)", "3: Wi-Fi", "3 - Wi-Fi", or a word before it:
	// "element 3", "index 3", "item #3". A number inside a name
	// ("Wi-Fi 6", "Results (89)") is not taken: it may be part of the name.
	indexWithLabel = regexp.MustCompile(`^(?:\[\s*(\d+)\s*\]\s*\S.*|(\d+)(?:\s*[(:]|\s+[-–]\s).*|(?i:element|index|item|button|number|no\.?)\s*#?\s*(\d+)(?:(?:\s*[(:]|\s+[-–]\s).*)?)$`)
	// A number with a unit of time: "2s", "1.5 seconds".
	withUnit = regexp.MustCompile(`^(-?\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)\.?$`)
)

// coerceValue converts v to p's type. note describes a repair; msg, when
// not empty, says why v cannot be used.
func coerceValue(p action.Param, v any) (out any, note, msg string) {
	switch p.Type {
	case action.Integer:
		return coerceInt(p, v)
	case action.Number:
		return coerceNumber(p, v)
	default:
		return coerceString(p, v)
	}
}

func coerceInt(p action.Param, v any) (any, string, string) {
	bad := func() (any, string, string) {
		return nil, "", fmt.Sprintf("%s must be an integer, got %s", p.Name, describe(v))
	}
	fromFloat := func(f float64, how string) (any, string, string) {
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
			return nil, "", fmt.Sprintf("%s must be an integer, got %s", p.Name, describe(v))
		}
		note := ""
		if how != "" {
			note = fmt.Sprintf("%s was %s; used the integer %d", p.Name, how, int64(f))
		}
		return int64(f), note, ""
	}
	switch x := v.(type) {
	case int64:
		return x, "", ""
	case int:
		return int64(x), "", ""
	case int32:
		return int64(x), "", ""
	case float64:
		// A float64 here comes from a standard JSON decoder, which
		// turns every number into one; an integral value is fine.
		return fromFloat(x, "")
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, "", ""
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return bad()
		}
		return fromFloat(f, "the number "+string(x))
	case string:
		s := strings.TrimSpace(x)
		if m := wrappedInt.FindStringSubmatch(s); m != nil {
			i, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return bad()
			}
			return i, fmt.Sprintf("%s was the string %s; used the integer %d", p.Name, strconv.Quote(x), i), ""
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
			return fromFloat(f, "the string "+strconv.Quote(x))
		}
		if p.Name == "index" {
			if m := indexWithLabel.FindStringSubmatch(s); m != nil {
				if i, err := strconv.ParseInt(m[1]+m[2]+m[3], 10, 64); err == nil {
					return i, fmt.Sprintf("%s was %s, an element number with text around it; used the integer %d", p.Name, strconv.Quote(x), i), ""
				}
			}
		}
		if p.Name == "index" && strings.IndexFunc(s, unicode.IsLetter) >= 0 {
			// A small model often names the element ("Wi-Fi") instead of
			// numbering it. Guessing which element a label means could
			// tap the wrong one, so say what is wanted instead.
			return nil, "", fmt.Sprintf("index must be an integer, the element's number N from [N] in the screen list, not a label; got %s", describe(v))
		}
		return bad()
	case []any:
		if len(x) == 1 {
			if _, isList := x[0].([]any); !isList {
				out, _, msg := coerceInt(p, x[0])
				if msg == "" {
					return out, fmt.Sprintf("%s was a list of one value; used %d", p.Name, out), ""
				}
			}
		}
		return bad()
	default:
		return bad()
	}
}

func coerceNumber(p action.Param, v any) (any, string, string) {
	bad := func() (any, string, string) {
		return nil, "", fmt.Sprintf("%s must be a number, got %s", p.Name, describe(v))
	}
	switch x := v.(type) {
	case float64:
		return x, "", ""
	case int64:
		return float64(x), "", ""
	case int:
		return float64(x), "", ""
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return bad()
		}
		return f, "", ""
	case string:
		s := strings.TrimSpace(x)
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, fmt.Sprintf("%s was the string %s; used the number %s", p.Name, strconv.Quote(x), fnum(f)), ""
		}
		if m := withUnit.FindStringSubmatch(strings.ToLower(s)); m != nil {
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return bad()
			}
			return f, fmt.Sprintf("%s was the string %s; used the number %s", p.Name, strconv.Quote(x), fnum(f)), ""
		}
		return bad()
	case []any:
		if len(x) == 1 {
			if _, isList := x[0].([]any); !isList {
				out, _, msg := coerceNumber(p, x[0])
				if msg == "" {
					return out, fmt.Sprintf("%s was a list of one value; used %s", p.Name, fnum(out.(float64))), ""
				}
			}
		}
		return bad()
	default:
		return bad()
	}
}

func coerceString(p action.Param, v any) (any, string, string) {
	var s, note string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = string(x)
		note = fmt.Sprintf("%s was the number %s; used the text %q", p.Name, x, s)
	case int64, int, float64:
		s = describe(x)
		note = fmt.Sprintf("%s was the number %s; used the text %q", p.Name, s, s)
	case bool:
		s = strconv.FormatBool(x)
		note = fmt.Sprintf("%s was the boolean %s; used the text %q", p.Name, s, s)
	case []any:
		if len(x) == 1 {
			if inner, ok := x[0].(string); ok {
				return coerceEnum(p, inner, fmt.Sprintf("%s was a list of one string; used %q", p.Name, inner))
			}
		}
		return nil, "", fmt.Sprintf("%s must be a string, got %s", p.Name, describe(v))
	default:
		return nil, "", fmt.Sprintf("%s must be a string, got %s", p.Name, describe(v))
	}
	if p.Verbatim {
		// Line breaks around typed text are the model's layout (a value
		// on its own line between tags), not text to type.
		if t := strings.Trim(s, "\r\n"); t != s {
			note = joinNotes(note, fmt.Sprintf("removed line breaks around the %s value", p.Name))
			s = t
		}
	} else if len(p.Enum) == 0 {
		if t := strings.TrimSpace(s); t != s {
			note = joinNotes(note, fmt.Sprintf("removed whitespace around the %s value %q", p.Name, t))
			s = t
		}
		// A name written as a JSON string in a tag that holds strings
		// verbatim: "Settings" means Settings.
		if len(s) >= 2 && (s[0] == '"' || s[0] == '\'' || s[0] == '`') && s[len(s)-1] == s[0] {
			t := s[1 : len(s)-1]
			note = joinNotes(note, fmt.Sprintf("removed the quotes around the %s value %q", p.Name, t))
			s = t
		}
	}
	return coerceEnum(p, s, note)
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// coerceEnum matches s against p's allowed values, forgiving case, spaces,
// a KEYCODE_ prefix and known aliases.
func coerceEnum(p action.Param, s, note string) (any, string, string) {
	if len(p.Enum) == 0 || slices.Contains(p.Enum, s) {
		return s, note, ""
	}
	n := strings.ToLower(strings.TrimSpace(s))
	n = strings.Trim(n, "`'\".")
	n = strings.NewReplacer(" ", "_", "-", "_").Replace(n)
	n = strings.TrimPrefix(n, "keycode_")
	if p.Name == "key" {
		if a, ok := action.KeyAliases[n]; ok {
			n = a
		}
	}
	if slices.Contains(p.Enum, n) {
		return n, joinNotes(note, fmt.Sprintf("%s %q is not one of the exact values; read it as %q", p.Name, s, n)), ""
	}
	return nil, "", fmt.Sprintf("%s %s is not valid; valid values: %s", p.Name, describe(s), strings.Join(p.Enum, ", "))
}

func fnum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func describe(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return action.Describe(v)
}
