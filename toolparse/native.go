package toolparse

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
)

// Spark's tool-call tags.
const (
	tagCall     = "<tool_call>"
	tagCallEnd  = "</tool_call>"
	tagKey      = "<arg_key>"
	tagKeyEnd   = "</arg_key>"
	tagValue    = "<arg_value>"
	tagValueEnd = "</arg_value>"
)

// candidate is a call found in the text before coercion: where it is, what
// it says and what had to be repaired to read it.
type candidate struct {
	name       string
	args       map[string]any
	format     Format
	start, end int
	notes      []string
	// problem, when set, makes the candidate unusable whatever its name.
	problem string
	// inReasoning marks a call taken from the reasoning of an output
	// whose reasoning never closed (its notes say so already).
	inReasoning bool
}

// hasNativeTags reports whether text uses Spark's call tags at all.
func hasNativeTags(text string) bool {
	return strings.Contains(text, tagCall) || strings.Contains(text, tagCallEnd) || strings.Contains(text, tagKey)
}

// parseNative reads every <tool_call> block of text.
func parseNative(text string, tools []action.Tool) []candidate {
	var out []candidate
	pos := 0
	f := newFinder(text)
	first := strings.Index(text, tagCall)
	if first < 0 || strings.Contains(text[:first], tagKey) {
		// The opening tag is missing (a detokenizer may drop it, or the
		// model skipped it): the call starts at the tool name before the
		// first <arg_key> or </tool_call>.
		if c, end, ok := headlessNative(text, tools); ok {
			out = append(out, c)
			pos = end
		}
	}
	for len(out) < maxCalls {
		start := f.index(tagCall, pos)
		if start < 0 {
			break
		}
		bodyStart := start + len(tagCall)
		// The block ends at </tool_call>, or, when that is missing, at
		// the next <tool_call> or the end of the text.
		var notes []string
		end, bodyEnd := 0, 0
		closeAt := f.index(tagCallEnd, bodyStart)
		nextAt := f.index(tagCall, bodyStart)
		switch {
		case closeAt >= 0 && (nextAt < 0 || closeAt < nextAt):
			bodyEnd = closeAt
			end = bodyEnd + len(tagCallEnd)
		case nextAt >= 0:
			bodyEnd = nextAt
			end = bodyEnd
			notes = append(notes, "a <tool_call> was not closed before the next one began; closed it there")
		default:
			bodyEnd = len(text)
			end = len(text)
			notes = append(notes, "the last <tool_call> was not closed with </tool_call>; took the call to run to the end of the output")
		}
		c := nativeBody(f, bodyStart, bodyEnd, tools)
		c.start, c.end = start, end
		c.notes = append(notes, c.notes...)
		out = append(out, c)
		pos = end
	}
	return out
}

// headlessNative reads a call whose <tool_call> is missing: NAME<arg_key>...
func headlessNative(text string, tools []action.Tool) (candidate, int, bool) {
	stop := len(text)
	for _, t := range []string{tagKey, tagCallEnd, tagCall} {
		if i := strings.Index(text, t); i >= 0 && i < stop {
			stop = i
		}
	}
	if stop == len(text) || strings.HasPrefix(text[stop:], tagCall) {
		return candidate{}, 0, false
	}
	// The name is the last word before the first tag.
	before := strings.TrimRight(text[:stop], " \t\r\n")
	j := len(before)
	for j > 0 && (isIdentChar(before[j-1])) {
		j--
	}
	name := before[j:]
	if name == "" {
		return candidate{}, 0, false
	}
	bodyEnd := len(text)
	end := len(text)
	var notes []string
	closeAt := strings.Index(text[stop:], tagCallEnd)
	nextAt := strings.Index(text[stop:], tagCall)
	switch {
	case closeAt >= 0 && (nextAt < 0 || closeAt < nextAt):
		bodyEnd = stop + closeAt
		end = bodyEnd + len(tagCallEnd)
	case nextAt >= 0:
		bodyEnd = stop + nextAt
		end = bodyEnd
	default:
		notes = append(notes, "the call was not closed with </tool_call>; took it to run to the end of the output")
	}
	c := nativeBody(newFinder(text), j, bodyEnd, tools)
	c.start, c.end = j, end
	c.notes = append([]string{fmt.Sprintf("the call to %q had no opening <tool_call>; read it from the tool name", name)}, append(notes, c.notes...)...)
	return c, end, true
}

// finder finds tags in one text at non-decreasing positions, remembering
// where each was found, so that a text full of unclosed tags is still read
// in linear time.
type finder struct {
	text string
	next map[string]int // tag -> absolute index of its next occurrence, or -1 for none
}

func newFinder(text string) *finder { return &finder{text: text, next: map[string]int{}} }

// index returns the absolute index of the first tag at or after from, or
// -1. Calls for the same tag must not go backwards.
func (f *finder) index(tag string, from int) int {
	if at, ok := f.next[tag]; ok && (at < 0 || at >= from) {
		return at
	}
	i := strings.Index(f.text[from:], tag)
	if i >= 0 {
		i += from
	}
	f.next[tag] = i
	return i
}

// within returns the index of tag in [from, end), or -1.
func (f *finder) within(tag string, from, end int) int {
	if i := f.index(tag, from); i >= 0 && i+len(tag) <= end {
		return i
	}
	return -1
}

// nativeBody reads NAME<arg_key>K</arg_key><arg_value>V</arg_value>... in
// f.text[from:end]. Bodies in another shape are read too: a JSON object
// (Hermes style), the name followed by JSON arguments, or a function call.
func nativeBody(f *finder, from, end int, tools []action.Tool) candidate {
	text := f.text
	c := candidate{format: FormatNative}
	k := f.within(tagKey, from, end)
	if k < 0 {
		k = f.within(tagKeyEnd, from, end)
	}
	head := text[from:end]
	if k >= 0 {
		head = text[from:k]
	}
	trimmed := strings.TrimSpace(head)
	if k < 0 && trimmed != "" {
		if alt, ok := nativeAltBody(trimmed, tools); ok {
			return alt
		}
	}
	// The name is the first line of the head; anything else is stray text.
	name := trimmed
	if nl := strings.IndexAny(name, "\r\n"); nl >= 0 {
		c.notes = append(c.notes, fmt.Sprintf("ignored text after the tool name %q inside <tool_call>", strings.TrimSpace(name[:nl])))
		name = strings.TrimSpace(name[:nl])
	}
	c.name = name
	c.args = map[string]any{}
	if k < 0 {
		return c
	}
	t, _ := lookupLoose(c.name, tools)
	skipSpace := func(p int) int {
		for p < end && strings.IndexByte(spaces, text[p]) >= 0 {
			p++
		}
		return p
	}
	missingKeyEnd, missingValueEnd, stray, late := false, false, false, false
	// Keys still waiting for their values: a model sometimes writes all the
	// <arg_key>s first and then all the <arg_value>s.
	var pending []string
	readValue := func(pos int) (raw string, next int) {
		pos += len(tagValue)
		// Value: up to </arg_value>, or, when that is missing, to the next
		// <arg_key> or <arg_value>, or the end of the body.
		ve := f.within(tagValueEnd, pos, end)
		nk := f.within(tagKey, pos, end)
		if len(pending) > 0 {
			if nv := f.within(tagValue, pos, end); nv >= 0 && (nk < 0 || nv < nk) {
				nk = nv
			}
		}
		switch {
		case ve >= 0 && (nk < 0 || ve < nk):
			return text[pos:ve], ve + len(tagValueEnd)
		case nk >= 0:
			missingValueEnd = true
			return strings.TrimRight(text[pos:nk], spaces), nk
		}
		missingValueEnd = true
		return strings.TrimRight(text[pos:end], spaces), end
	}
	setArg := func(key, raw string) {
		if _, dup := c.args[key]; dup {
			c.notes = append(c.notes, fmt.Sprintf("argument %q was given twice; kept the last value", key))
		}
		c.args[key] = nativeValue(t, key, raw)
	}
	pos := k
	for {
		pos = skipSpace(pos)
		if pos >= end {
			break
		}
		if len(pending) > 0 && strings.HasPrefix(text[pos:end], tagValue) {
			var raw string
			raw, pos = readValue(pos)
			setArg(pending[0], raw)
			pending = pending[1:]
			late = true
			continue
		}
		if !strings.HasPrefix(text[pos:end], tagKey) {
			// Stray text between pairs: skip to the next key.
			stray = true
			next := f.within(tagKey, pos, end)
			if next < 0 {
				break
			}
			pos = next
		}
		pos += len(tagKey)
		// Key: up to </arg_key>, or to <arg_value> when the close is missing.
		var key string
		ke := f.within(tagKeyEnd, pos, end)
		va := f.within(tagValue, pos, end)
		nk := f.within(tagKey, pos, end)
		switch {
		case ke >= 0 && (va < 0 || ke < va) && (nk < 0 || ke < nk):
			key = text[pos:ke]
			pos = ke + len(tagKeyEnd)
		case va >= 0 && (nk < 0 || va < nk):
			key = text[pos:va]
			pos = va
			missingKeyEnd = true
		default:
			stop := end
			if nk >= 0 {
				stop = nk
			}
			if key = strings.TrimSpace(text[pos:stop]); key != "" {
				c.notes = append(c.notes, fmt.Sprintf("argument %q had no <arg_value>; ignored it", key))
			}
			pos = stop
			continue
		}
		key = strings.TrimSpace(key)
		pos = skipSpace(pos)
		if !strings.HasPrefix(text[pos:end], tagValue) || len(pending) > 0 {
			if key != "" {
				pending = append(pending, key)
			}
			continue
		}
		var raw string
		raw, pos = readValue(pos)
		setArg(key, raw)
	}
	for _, key := range pending {
		c.notes = append(c.notes, fmt.Sprintf("argument %q had no <arg_value>; ignored it", key))
	}
	if late {
		c.notes = append(c.notes, "the <arg_key>s came before their <arg_value>s; paired them in order")
	}
	if missingKeyEnd {
		c.notes = append(c.notes, "an <arg_key> was not closed with </arg_key>; ended it at <arg_value>")
	}
	if missingValueEnd {
		c.notes = append(c.notes, "an <arg_value> was not closed with </arg_value>; ended it at the next tag")
	}
	if stray {
		c.notes = append(c.notes, "ignored stray text between the arguments of a <tool_call>")
	}
	return c
}

// nativeAltBody reads a <tool_call> body that does not use arg tags.
func nativeAltBody(body string, tools []action.Tool) (candidate, bool) {
	if strings.HasPrefix(body, tagFunc) {
		if cs := findFuncTags(body, tools); len(cs) > 0 && cs[0].name != "" {
			c := cs[0]
			c.notes = append([]string{"the <tool_call> held <function=NAME><parameter=KEY> tags instead of <arg_key>/<arg_value> pairs; read the call from them"}, c.notes...)
			if rest := strings.TrimSpace(body[cs[0].end:]); rest != "" {
				// Qwen3.x drifts into stray closers (</function>,
				// </function_invocation>) or a second call in one block.
				c.notes = append(c.notes, fmt.Sprintf("ignored %s after the call inside the same <tool_call>", quoteStray(rest)))
			}
			return c, true
		}
		return candidate{}, false
	}
	if body[0] == '{' {
		if v, _, notes, err := readJSON(body, 0); err == nil {
			if cs := callsFromJSON(v, FormatNative, tools, 0); len(cs) > 0 && cs[0].name != "" {
				c := cs[0]
				c.format = FormatNative
				c.notes = append([]string{"the <tool_call> held a JSON object instead of <arg_key>/<arg_value> pairs; read the call from it"}, append(notes, c.notes...)...)
				return c, true
			}
		}
		return candidate{}, false
	}
	// NAME then JSON arguments, or NAME(...)
	j := 0
	for j < len(body) && isIdentChar(body[j]) {
		j++
	}
	if j == 0 {
		return candidate{}, false
	}
	rest := strings.TrimSpace(body[j:])
	switch {
	case rest == "":
		return candidate{}, false
	case rest[0] == '{':
		v, _, notes, err := readJSON(rest, 0)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return candidate{}, false
		}
		return candidate{name: body[:j], args: m, format: FormatNative,
			notes: append([]string{"the <tool_call> gave its arguments as JSON instead of <arg_key>/<arg_value> pairs; read them from it"}, notes...)}, true
	case rest[0] == '(':
		if fc, ok := readFuncCall(body, 0, tools); ok {
			fc.format = FormatNative
			fc.notes = append([]string{"the <tool_call> held a function call instead of <arg_key>/<arg_value> pairs; read the call from it"}, fc.notes...)
			return fc, true
		}
	}
	return candidate{}, false
}

// nativeValue types a raw <arg_value> by the schema: strings verbatim (as
// the chat template writes them), other types as JSON. A value that is not
// valid JSON stays a string for coercion to judge.
func nativeValue(t action.Tool, key, raw string) any {
	if p, ok := t.Param(key); ok && p.Type == action.String {
		return raw
	}
	if v, ok := readJSONExact(raw); ok {
		return v
	}
	return raw
}

func lookupLoose(name string, tools []action.Tool) (action.Tool, bool) {
	n, ok := resolveName(name, tools)
	if !ok {
		return action.Tool{}, false
	}
	return action.Lookup(tools, n)
}

// quoteStray quotes stray text for a recovery note, shortened.
func quoteStray(s string) string {
	const max = 40
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
