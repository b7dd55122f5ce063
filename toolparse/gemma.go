package toolparse

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// FunctionGemma's call form (the 270M Gemma 3 tuned for on-device
// actions):
//
//	<start_function_call>call:tap{index:3}<end_function_call>
//	<start_function_call>call:type_text{text:<escape>hi<escape>}<end_function_call>
//
// Every string value sits between two <escape> tokens.
const (
	tagGemmaCall    = "<start_function_call>"
	tagGemmaCallEnd = "<end_function_call>"
	tagGemmaEscape  = "<escape>"
)

// findGemmaCalls reads every <start_function_call> block of text.
func findGemmaCalls(text string, tools []action.Tool) []candidate {
	var out []candidate
	pos := 0
	for len(out) < maxCalls {
		i := strings.Index(text[pos:], tagGemmaCall)
		if i < 0 {
			break
		}
		start := pos + i
		body := start + len(tagGemmaCall)
		var notes []string
		bodyEnd, end := len(text), len(text)
		closeAt := strings.Index(text[body:], tagGemmaCallEnd)
		nextAt := strings.Index(text[body:], tagGemmaCall)
		switch {
		case closeAt >= 0 && (nextAt < 0 || closeAt < nextAt):
			bodyEnd, end = body+closeAt, body+closeAt+len(tagGemmaCallEnd)
		case nextAt >= 0:
			bodyEnd, end = body+nextAt, body+nextAt
			notes = append(notes, "a <start_function_call> was not closed before the next one began; closed it there")
		default:
			notes = append(notes, "the last <start_function_call> was not closed with <end_function_call>; took the call to run to the end of the output")
		}
		c := gemmaBody(text[body:bodyEnd], tools)
		c.start, c.end = start, end
		c.notes = append([]string{"the call was written in FunctionGemma's form (<start_function_call>call:NAME{...}); read it as a call"}, append(notes, c.notes...)...)
		out = append(out, c)
		pos = end
		if pos <= start {
			pos = start + len(tagGemmaCall)
		}
	}
	return out
}

// gemmaBody reads call:NAME{key:value,...}.
func gemmaBody(s string, tools []action.Tool) candidate {
	c := candidate{format: FormatBracket, args: map[string]any{}}
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "call:")
	j := 0
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	c.name = s[:j]
	if c.name == "" {
		c.problem = "a <start_function_call> held no tool name; expected call:NAME{...}"
		return c
	}
	rest := strings.TrimSpace(s[j:])
	if rest == "" {
		return c
	}
	if rest[0] != '{' {
		c.notes = append(c.notes, fmt.Sprintf("ignored text after the tool name %q", c.name))
		return c
	}
	v, _, notes, err := readJSON(unescapeGemma(rest), 0)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		c.problem = fmt.Sprintf("%s: the arguments in the <start_function_call> could not be read", c.name)
		return c
	}
	c.args = m
	for _, n := range notes {
		// Unquoted keys are how FunctionGemma writes arguments, not a slip.
		if !strings.Contains(n, "unquoted keys") {
			c.notes = append(c.notes, n)
		}
	}
	return c
}

// unescapeGemma turns each <escape>...<escape> string into a JSON string,
// so the (otherwise JSON-like, keys unquoted) arguments read as JSON. An
// unpaired <escape> runs to the end.
func unescapeGemma(s string) string {
	if !strings.Contains(s, tagGemmaEscape) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, tagGemmaEscape)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len(tagGemmaEscape):]
		j := strings.Index(s, tagGemmaEscape)
		if j < 0 {
			j = len(s)
		}
		q, _ := json.Marshal(s[:j])
		b.Write(q)
		if j == len(s) {
			return b.String()
		}
		s = s[j+len(tagGemmaEscape):]
	}
}
