package toolparse

import (
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// The XML-ish call form of Qwen3-Coder's chat template (also written by
// other models that saw it in training):
//
//	<function=tap>
//	<parameter=index>
//	3
//	</parameter>
//	</function>
//
// usually inside <tool_call> tags, sometimes bare.
const (
	tagFunc     = "<function="
	tagFuncEnd  = "</function>"
	tagParam    = "<parameter="
	tagParamEnd = "</parameter>"
)

// hasFuncTags reports whether text uses <function=NAME> tags.
func hasFuncTags(text string) bool { return strings.Contains(text, tagFunc) }

// findFuncTags reads every <function=NAME>...</function> call of text.
// The candidates' notes do not say where the call stood (inside
// <tool_call> or bare); callers add that.
func findFuncTags(text string, tools []action.Tool) []candidate {
	var out []candidate
	pos := 0
	for len(out) < maxCalls {
		i := strings.Index(text[pos:], tagFunc)
		if i < 0 {
			break
		}
		start := pos + i
		c, end := readFuncTag(text, start, tools)
		c.start, c.end = start, end
		out = append(out, c)
		pos = end
		if pos <= start {
			pos = start + len(tagFunc)
		}
	}
	return out
}

// maxCalls bounds how many calls one output may hold, so a pathological
// output stays cheap to read.
const maxCalls = 64

// readFuncTag reads the call whose <function= tag starts at start; end is
// where the call's text ends.
func readFuncTag(text string, start int, tools []action.Tool) (c candidate, end int) {
	c = candidate{format: FormatNative, args: map[string]any{}}
	p := start + len(tagFunc)
	gt := strings.IndexAny(text[p:], ">\n")
	if gt < 0 || text[p+gt] != '>' {
		// <function=tap with no '>': the name runs to the line's end.
		nl := strings.IndexByte(text[p:], '\n')
		if nl < 0 {
			nl = len(text) - p
		}
		c.name = cleanTagName(text[p : p+nl])
		c.notes = append(c.notes, fmt.Sprintf("the <function=%s tag was not closed with '>'", c.name))
		p += nl
	} else {
		c.name = cleanTagName(text[p : p+gt])
		p += gt + 1
	}
	// The call ends at </function>, else at the next <function=, else at
	// the end of the text.
	bodyEnd, end := len(text), len(text)
	closeAt := strings.Index(text[p:], tagFuncEnd)
	nextAt := strings.Index(text[p:], tagFunc)
	switch {
	case closeAt >= 0 && (nextAt < 0 || closeAt < nextAt):
		bodyEnd, end = p+closeAt, p+closeAt+len(tagFuncEnd)
	case nextAt >= 0:
		bodyEnd, end = p+nextAt, p+nextAt
		c.notes = append(c.notes, "a <function=...> was not closed with </function> before the next one began; closed it there")
	default:
		c.notes = append(c.notes, "the last <function=...> was not closed with </function>; took the call to run to the end of the output")
	}
	t, _ := lookupLoose(c.name, tools)
	body := text[p:bodyEnd]
	missingEnd, stray := false, false
	for q, n := 0, 0; q < len(body); n++ {
		if n == maxCalls {
			// Every parameter costs a search of the rest of the call; a
			// flood of unclosed tags must not make that quadratic.
			c.notes = append(c.notes, fmt.Sprintf("the call had more than %d <parameter=...> tags; ignored the rest", maxCalls))
			break
		}
		i := strings.Index(body[q:], tagParam)
		if i < 0 {
			if strings.TrimSpace(body[q:]) != "" {
				stray = true
			}
			break
		}
		if strings.TrimSpace(body[q:q+i]) != "" {
			stray = true
		}
		q += i + len(tagParam)
		gt := strings.IndexByte(body[q:], '>')
		nextParam := strings.Index(body[q:], tagParam)
		if gt < 0 || nextParam >= 0 && nextParam < gt {
			c.notes = append(c.notes, "a <parameter= tag was not closed with '>'; ignored it")
			continue
		}
		key := cleanTagName(body[q : q+gt])
		q += gt + 1
		// The value runs to </parameter>, else to the next <parameter=.
		var raw string
		ve := strings.Index(body[q:], tagParamEnd)
		np := strings.Index(body[q:], tagParam)
		switch {
		case ve >= 0 && (np < 0 || ve < np):
			raw = body[q : q+ve]
			q += ve + len(tagParamEnd)
		case np >= 0:
			raw = body[q : q+np]
			q += np
			missingEnd = true
		default:
			raw = body[q:]
			q = len(body)
			missingEnd = true
		}
		// The template puts the value on its own line between the tags;
		// those line breaks are layout, not part of the value.
		raw = strings.TrimSuffix(strings.TrimPrefix(raw, "\n"), "\n")
		raw = strings.TrimSuffix(raw, "\r")
		if _, dup := c.args[key]; dup {
			c.notes = append(c.notes, fmt.Sprintf("argument %q was given twice; kept the last value", key))
		}
		c.args[key] = nativeValue(t, key, raw)
	}
	if missingEnd {
		c.notes = append(c.notes, "a <parameter=...> was not closed with </parameter>; ended it at the next tag")
	}
	if stray {
		c.notes = append(c.notes, "ignored stray text between the <parameter=...> tags of a call")
	}
	return c, end
}

// cleanTagName reads the name in <function=NAME> or <parameter=NAME>,
// also when quoted (<function="tap">).
func cleanTagName(s string) string {
	return strings.Trim(strings.TrimSpace(s), `"'`)
}
