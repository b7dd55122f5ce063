package toolparse

import (
	"fmt"
	"regexp"
	"strings"
)

// reactAction matches the ReAct layout (LangChain agents and the many
// models tuned on their traces):
//
//	Thought: ...
//	Action: tap
//	Action Input: {"index": 3}
//
// The Action line holds only a tool name; the arguments follow on the
// Action Input line as JSON, a bare value, or key=value.
var reactAction = regexp.MustCompile(`(?im)^[ \t*]*action[ \t*]*:[ \t*]*` + "`?" + `([A-Za-z_][\w.-]*)` + "`?" + `[ \t*]*\r?\n[ \t*]*action[ \t_]*input[ \t*]*:[ \t*]*`)

// findReAct reads every Action / Action Input pair of text. The tool name
// is checked later, like every other form's.
func findReAct(text string) []candidate {
	var out []candidate
	for _, m := range reactAction.FindAllStringSubmatchIndex(text, maxCalls) {
		name := text[m[2]:m[3]]
		c := candidate{name: name, args: map[string]any{}, format: FormatBracket, start: m[0]}
		c.notes = []string{fmt.Sprintf("the call was written as \"Action: %s\" with an \"Action Input:\" line (ReAct style); read it as a call", name)}
		p := m[1]
		lineEnd := strings.IndexByte(text[p:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text) - p
		}
		rest := strings.TrimSpace(text[p : p+lineEnd])
		c.end = p + lineEnd
		switch {
		case strings.HasPrefix(rest, "{"):
			v, end, notes, err := readJSON(text, p+strings.IndexByte(text[p:], '{'))
			obj, ok := v.(map[string]any)
			if err != nil || !ok {
				c.problem = fmt.Sprintf("%s: the Action Input is not a readable JSON object", name)
				break
			}
			c.args, c.end = obj, end
			c.notes = append(c.notes, notes...)
		case rest == "" || rest == "None" || rest == "null" || rest == "{}":
		default:
			rest = strings.Trim(rest, "`")
			key := ""
			if kv := keyValue.FindStringSubmatch(rest); kv != nil {
				key, rest = kv[1], kv[2]
			}
			rest = strings.Trim(rest, `"'`)
			if v, ok := readJSONExact(rest); ok {
				c.args[key] = v
			} else {
				c.args[key] = rest
			}
		}
		out = append(out, c)
	}
	return out
}
