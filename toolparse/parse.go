package toolparse

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// endMarkerInfo is a marker after which the output is not the model's
// answer any more; turn says it opens a turn the model wrote itself rather
// than ending the output.
type endMarkerInfo struct {
	tag, why string
	turn     bool
}

// endMarkers are the markers of the templates droidgo meets: end tokens,
// and the tags that open the next turn.
var endMarkers = []endMarkerInfo{
	{"<｜end▁of▁sentence｜>", "the end-of-sentence token", false},
	{"<|end_of_sentence|>", "the end-of-sentence token", false},
	{"<|end▁of▁sentence|>", "the end-of-sentence token", false},
	{"<|im_end|>", "an end-of-turn token", false},
	{"<|endoftext|>", "an end-of-text token", false},
	{"<|eot_id|>", "an end-of-turn token", false},
	{"<end_of_turn>", "an end-of-turn token", false},
	{"<start_function_response>", "a function response the model wrote itself", true},
	{"<|eom_id|>", "an end-of-message token", false},
	{"<tool_response>", "a <tool_response> the model wrote itself", true},
	{"<|Tool|>", "a tool turn the model wrote itself", true},
	{"<|User|>", "a user turn the model wrote itself", true},
	{"<|System|>", "a system turn the model wrote itself", true},
	// GLM-4.5-style templates (whose <tool_call>/<arg_key> form Spark
	// shares) name their turns in lower case and give tool results an
	// <|observation|> turn.
	{"<|observation|>", "a tool-result turn the model wrote itself", true},
	{"<|user|>", "a user turn the model wrote itself", true},
	{"<|assistant|>", "a new assistant turn the model began itself", true},
	{"<|system|>", "a system turn the model wrote itself", true},
	{"<｜start▁of▁sentence｜>", "a new turn the model began itself", true},
}

const (
	tagThink    = "<think>"
	tagThinkEnd = "</think>"
	spaces      = " \t\r\n"
)

// Parse recovers the reasoning, the answer and the tool calls from one
// model output. It never fails: what it cannot use is described in
// Errors, every repair in Recoveries. Calls holds only calls that passed
// Coerce; an invalid call is reported in Errors with the valid choices.
// Slices in the result are never nil.
func Parse(text string, opts Options) Result {
	res := newResult()
	text = stripHeader(text, &res)
	reasoning, content, closed := splitTurn(text, opts.InThinking, &res)
	return parseParts(reasoning, content, closed, opts.Tools, res)
}

// ParseTurn is Parse for an output a backend has already split into its
// reasoning and its answer as it streamed (closed: the reasoning ended;
// an answer implies it). The parts are taken as they are, with no tags
// looked for between them; Options.InThinking is not used. An end token
// or a turn the model wrote itself inside the reasoning ends the
// reasoning, and the answer still counts.
func ParseTurn(reasoning, answer string, closed bool, opts Options) Result {
	res := newResult()
	if strings.TrimSpace(reasoning) != "" {
		reasoning = stripHeader(reasoning, &res)
	} else {
		answer = stripHeader(answer, &res)
	}
	closed = closed || answer != ""
	reasoning, answer, closed = cutTurn(reasoning, answer, closed, &res)
	return parseParts(reasoning, answer, closed, opts.Tools, res)
}

func newResult() Result {
	return Result{Calls: []action.Call{}, Recoveries: []string{}, Errors: []string{}, Format: FormatNone}
}

// parseParts finds, checks and reports the calls of a split output.
func parseParts(reasoning, content string, closed bool, tools []action.Tool, res Result) Result {
	if tools == nil {
		tools = action.Tools
	}
	res.Reasoning = strings.TrimSpace(reasoning)
	res.ReasoningClosed = closed

	cands := findCalls(content, tools)
	res.Content = strings.TrimSpace(stripSpans(content, cands))

	if len(cands) == 0 && reasoning != "" {
		// No call in the answer: look in the reasoning. When there is no
		// answer at all, any call form counts; next to an answer in prose,
		// only Spark's own tags do.
		var inner []candidate
		switch {
		case !closed || strings.TrimSpace(content) == "":
			// Nothing was answered: the reasoning's last call is the
			// decision the model did not get to write out.
			inner = findCalls(reasoning, tools)
		case hasNativeTags(reasoning):
			inner = parseNative(reasoning, tools)
		}
		if c, ok := lastUsable(inner, tools); ok {
			if closed {
				c.notes = append([]string{"the answer had no tool call but the reasoning did; used the last call written in the reasoning"}, c.notes...)
			} else {
				c.notes = append([]string{"the reasoning never closed (no </think>) and there was no answer; used the last tool call written in the reasoning"}, c.notes...)
				c.inReasoning = true
			}
			cands = []candidate{c}
		}
	}
	if !closed && len(cands) > 0 && !cands[0].inReasoning {
		// The call stood in the answer text before a <think> that then
		// ran to the end of the output.
		res.Recoveries = append(res.Recoveries, "the reasoning never closed (no </think>); used the call written before it")
	}
	if !closed && len(cands) == 0 {
		res.Errors = append(res.Errors, "the reasoning never closed (no </think>): the output ended while the model was still thinking, with no tool call")
	}

	if len(cands) >= maxCalls {
		// The finders stop there: counts below are of the calls read.
		res.Recoveries = append(res.Recoveries, fmt.Sprintf("the output holds %d calls or more; read the first %d", maxCalls, maxCalls))
	}
	for i, c := range cands {
		if i == 0 {
			res.Format = c.format
		}
		call, rec, err := finish(c, tools)
		res.Recoveries = append(res.Recoveries, rec...)
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
			if _, known := action.Lookup(tools, call.Name); known {
				res.Refused = append(res.Refused, call)
			}
			continue
		}
		res.Calls = append(res.Calls, call)
	}
	if len(cands) == 0 && closed {
		res.Errors = append(res.Errors, "no tool call found in the answer; expected <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>")
	}
	res.Recoveries = counted(res.Recoveries)
	res.Errors = counted(res.Errors)
	return res
}

// counted reports each distinct sentence of list once, in the order of
// first appearance, with how often it came when more than once: output
// repeating one broken call a million times gives one line, not a million.
func counted(list []string) []string {
	if len(list) < 2 {
		return list
	}
	n := make(map[string]int, len(list))
	out := list[:0:0]
	for _, s := range list {
		if n[s] == 0 {
			out = append(out, s)
		}
		n[s]++
	}
	for i, s := range out {
		if c := n[s]; c > 1 {
			out[i] = fmt.Sprintf("%s (%d times)", s, c)
		}
	}
	return out
}

// turnHeaders are the template's tokens that open an assistant turn; an
// engine that echoes them puts them before the output.
var turnHeaders = []string{"<｜start▁of▁sentence｜>", "<|start_of_sentence|>", "<|Bot|>", "<|assistant|>"}

// stripHeader removes an echoed turn header from the start of the output.
func stripHeader(text string, res *Result) string {
	rest := strings.TrimLeft(text, spaces)
	found := false
	for again := true; again; {
		again = false
		for _, h := range turnHeaders {
			if strings.HasPrefix(rest, h) {
				rest = strings.TrimLeft(rest[len(h):], spaces)
				found, again = true, true
			}
		}
	}
	if !found {
		return text
	}
	res.Recoveries = append(res.Recoveries, "ignored the assistant turn header at the start of the output")
	return rest
}

// cutAtEnd drops what follows an end marker.
func cutAtEnd(text string, res *Result) string {
	cut, tag, ok := endMarker(text)
	if !ok {
		return text
	}
	// A marker that ends the output is how the turn normally stops (GLM's
	// templates stop a tool-calling turn at <|observation|>); only text
	// after it was dropped.
	if rest := strings.TrimSpace(text[cut+len(tag):]); rest != "" && !isOnlyEndTokens(rest) {
		res.Recoveries = append(res.Recoveries, fmt.Sprintf("ignored the text from %s on", markers[tag].why))
	}
	return text[:cut]
}

// endMarker finds the first end marker in text.
func endMarker(text string) (at int, tag string, ok bool) {
	at = len(text)
	for _, m := range endMarkers {
		if i := strings.Index(text, m.tag); i >= 0 && i < at {
			at, tag = i, m.tag
		}
	}
	return at, tag, tag != ""
}

// markers finds an end marker's entry by its tag.
var markers = func() map[string]endMarkerInfo {
	m := make(map[string]endMarkerInfo, len(endMarkers))
	for _, e := range endMarkers {
		m[e.tag] = e
	}
	return m
}()

func isOnlyEndTokens(s string) bool {
	for _, t := range []string{"<｜end▁of▁sentence｜>", "<|end_of_sentence|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>"} {
		s = strings.ReplaceAll(s, t, "")
	}
	return strings.TrimSpace(s) == ""
}

// splitTurn separates the reasoning from the answer and drops what
// follows an end marker (cutTurn). closed is false only when a reasoning
// was opened and never closed.
func splitTurn(text string, inThinking bool, res *Result) (reasoning, content string, closed bool) {
	// As serving stacks' reasoning parsers do: a leading <think> opens the
	// reasoning (a repeat of the prompt's is harmless), and a </think>
	// with no <think> before it closes a reasoning the prompt opened.
	body := strings.TrimLeft(text, " \t\r\n")
	if strings.HasPrefix(body, tagThink) {
		body = body[len(tagThink):]
		inThinking = true
	}
	if inThinking {
		i := strings.Index(body, tagThinkEnd)
		if i < 0 {
			return cutTurn(body, "", false, res)
		}
		return cutTurn(body[:i], body[i+len(tagThinkEnd):], true, res)
	}
	open := strings.Index(text, tagThink)
	end := strings.Index(text, tagThinkEnd)
	switch {
	case end >= 0 && (open < 0 || end < open):
		return cutTurn(text[:end], text[end+len(tagThinkEnd):], true, res)
	case open >= 0:
		prefix := text[:open]
		if _, _, ok := endMarker(prefix); ok {
			// The output ended before the reasoning began.
			return "", cutAtEnd(text, res), true
		}
		// Text, then a reasoning: the text before <think> is kept as
		// part of the answer.
		res.Recoveries = append(res.Recoveries, "the output wrote text before opening <think>; kept that text as part of the answer")
		r, c, closed := splitTurn(text[open:], false, res)
		return r, prefix + c, closed
	}
	return "", cutAtEnd(text, res), true
}

// cutTurn applies the end markers to a split output. A turn the model
// wrote itself inside a reasoning that then closed (it imagined the
// user's reply while thinking) ends only the reasoning: the answer after
// </think> is still the model's. An end token, or any marker in a
// reasoning that never closed, ends the output there; a marker in the
// answer ends the answer.
func cutTurn(reasoning, answer string, closed bool, res *Result) (string, string, bool) {
	at, tag, ok := endMarker(reasoning)
	if !ok {
		return reasoning, cutAtEnd(answer, res), closed
	}
	rest := strings.TrimSpace(reasoning[at+len(tag):])
	if closed && markers[tag].turn {
		if rest != "" && !isOnlyEndTokens(rest) {
			res.Recoveries = append(res.Recoveries, fmt.Sprintf("ignored the reasoning from %s on, up to </think>", markers[tag].why))
		}
		return reasoning[:at], cutAtEnd(answer, res), true
	}
	if closed {
		rest += tagThinkEnd + answer // nothing after the marker is kept
	}
	if rest != "" && !isOnlyEndTokens(rest) {
		res.Recoveries = append(res.Recoveries, fmt.Sprintf("ignored the text from %s on", markers[tag].why))
	}
	return reasoning[:at], "", false
}

// findCalls finds the calls in an answer. Spark's own tags win when
// present; otherwise the earliest call found in any other form decides the
// format, and only calls of that format are kept (a JSON call followed by
// a prose mention of tap(3) is one call, not two).
func findCalls(text string, tools []action.Tool) []candidate {
	if hasNativeTags(text) {
		if cs := parseNative(text, tools); len(cs) > 0 {
			return cs
		}
	}
	var all []candidate
	if strings.Contains(text, tagGemmaCall) {
		all = append(all, findGemmaCalls(text, tools)...)
	}
	brackets := outside(findBrackets(text, tools), all)
	all = append(all, brackets...)
	all = append(all, outside(findReAct(text), all)...)
	all = append(all, outside(findJSON(text, tools), all)...)
	if hasFuncTags(text) {
		var tags []candidate
		for _, c := range findFuncTags(text, tools) {
			c.notes = append([]string{"the call was written as <function=NAME><parameter=KEY> tags without <tool_call>; read it from them"}, c.notes...)
			// Qwen3-Coder's known slip: everything but the opening
			// <tool_call>, so its </tool_call> follows the call.
			if rest := strings.TrimLeft(text[c.end:], spaces); strings.HasPrefix(rest, tagCallEnd) {
				c.end = len(text) - len(rest) + len(tagCallEnd)
				c.notes = append(c.notes, "the </tool_call> after it had no opening <tool_call>; ignored it")
			}
			tags = append(tags, c)
		}
		all = append(all, outside(tags, all)...)
	}
	all = append(all, outside(findFuncCalls(text, tools), all)...)
	if len(all) == 0 {
		if c, ok := commandLine(text, tools); ok {
			return []candidate{c}
		}
		if c, ok := unknownFuncLine(text, tools); ok {
			return []candidate{c}
		}
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].start < all[j].start })
	var out []candidate
	for _, c := range all {
		if c.format == all[0].format {
			out = append(out, c)
		}
	}
	return out
}

// outside keeps the candidates of cs that do not overlap any of taken.
func outside(cs, taken []candidate) []candidate {
	var out []candidate
	for _, c := range cs {
		overlap := false
		for _, t := range taken {
			if c.start < t.end && t.start < c.end {
				overlap = true
				break
			}
		}
		if !overlap {
			out = append(out, c)
		}
	}
	return out
}

// findJSON finds JSON objects that describe calls, anywhere in the text
// (fenced or in prose).
func findJSON(text string, tools []action.Tool) []candidate {
	var out []candidate
	for i := 0; i < len(text) && len(out) < maxCalls; i++ {
		if text[i] != '{' && (text[i] != '[' || !strings.HasPrefix(strings.TrimLeft(text[i+1:], spaces), "{")) {
			continue
		}
		v, end, notes, err := readJSON(text, i)
		if err != nil {
			continue
		}
		cs := callsFromJSON(v, FormatJSON, tools, 0)
		if len(cs) == 0 {
			continue
		}
		end, notes = extraClosers(text, end, notes)
		for n := range cs {
			cs[n].start, cs[n].end = i, end
			cs[n].notes = append(cs[n].notes, notes...)
		}
		out = append(out, cs...)
		i = end - 1
	}
	return out
}

// extraClosers takes in closing brackets that follow a JSON value on the
// same line ({"name": "tap", ...}}), which models add when they lose count.
func extraClosers(text string, end int, notes []string) (int, []string) {
	n, k := 0, end
	for k < len(text) {
		switch text[k] {
		case ' ', '\t':
			k++
			continue
		case '}':
			n++
			k++
			end = k
			continue
		}
		break
	}
	if n > 0 {
		notes = append(notes, fmt.Sprintf("the JSON was followed by %d extra closing brace(s); ignored them", n))
	}
	return end, notes
}

// commandLine reads an answer that is nothing but a tool name and perhaps
// one value: "tap", "tap 3", "press_key back", "open_app Settings".
func commandLine(text string, tools []action.Tool) (candidate, bool) {
	s := strings.TrimSpace(text)
	s = strings.Trim(s, "`*\"' \t\r\n")
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(s, "Action:"), "action:"))
	if s == "" || strings.ContainsAny(s, "\n{}<>") {
		return candidate{}, false
	}
	name, rest, _ := strings.Cut(s, " ")
	name = strings.TrimRight(name, ":.")
	if _, ok := resolveName(name, tools); !ok {
		return candidate{}, false
	}
	c := candidate{name: name, args: map[string]any{}, format: FormatBracket, start: strings.Index(text, name), end: len(text)}
	rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "."))
	if rest != "" {
		key := ""
		if m := keyValue.FindStringSubmatch(rest); m != nil {
			key, rest = m[1], strings.Trim(m[2], `"'`)
		}
		if v, ok := readJSONExact(rest); ok {
			c.args[key] = v
		} else {
			c.args[key] = rest
		}
		c.notes = []string{fmt.Sprintf("the answer was a bare command line %q; read it as a call", s)}
	} else {
		c.notes = []string{fmt.Sprintf("the answer was only the tool name %q, with no arguments", name)}
	}
	if c.start < 0 {
		c.start = 0
	}
	return c, true
}

var (
	keyValue = regexp.MustCompile(`^([A-Za-z_]\w*)\s*[=:]\s*(.+)$`)
)

// unknownFuncLine finds a line that starts with a call of a tool that does
// not exist (click(3)), so the error can name the valid tools instead of
// saying nothing was found.
func unknownFuncLine(text string, tools []action.Tool) (candidate, bool) {
	lineStart := 0
	for lineStart < len(text) {
		lineEnd := strings.IndexByte(text[lineStart:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text)
		} else {
			lineEnd += lineStart
		}
		p := lineStart
		for p < lineEnd && strings.IndexByte(" \t>*`-", text[p]) >= 0 {
			p++
		}
		for _, prefix := range []string{"Action:", "action:"} {
			if strings.HasPrefix(text[p:lineEnd], prefix) {
				p += len(prefix)
				for p < lineEnd && (text[p] == ' ' || text[p] == '`') {
					p++
				}
			}
		}
		e := p
		for e < lineEnd && isIdentChar(text[e]) {
			e++
		}
		if e > p && isIdentStart(text[p]) && e < lineEnd && text[e] == '(' {
			return readFuncCall(text, p, tools)
		}
		lineStart = lineEnd + 1
	}
	return candidate{}, false
}

// lastUsable returns the last candidate that coerces without error, or
// else the last one.
func lastUsable(cs []candidate, tools []action.Tool) (candidate, bool) {
	for i := len(cs) - 1; i >= 0; i-- {
		if _, _, err := finish(cs[i], tools); err == nil {
			return cs[i], true
		}
	}
	if len(cs) > 0 {
		return cs[len(cs)-1], true
	}
	return candidate{}, false
}

// finish binds positional arguments and coerces the candidate. Its
// recoveries include those made while reading it.
func finish(c candidate, tools []action.Tool) (action.Call, []string, error) {
	rec := append([]string(nil), c.notes...)
	if c.problem != "" {
		return action.Call{}, rec, fmt.Errorf("%s", c.problem)
	}
	args, notes := bindPositional(c.name, c.args, tools)
	rec = append(rec, notes...)
	call, more, err := Coerce(action.Call{Name: c.name, Arguments: args}, tools)
	return call, append(rec, more...), err
}

// bindPositional gives unnamed arguments (keys "", "\x00", ...) the names
// of the tool's parameters that were not given by name, in declared order.
func bindPositional(name string, args map[string]any, tools []action.Tool) (map[string]any, []string) {
	var pos []string
	for k := range args {
		if strings.Trim(k, "\x00") == "" {
			pos = append(pos, k)
		}
	}
	if len(pos) == 0 {
		return args, nil
	}
	sort.Slice(pos, func(i, j int) bool { return len(pos[i]) < len(pos[j]) })
	out := map[string]any{}
	for k, v := range args {
		if strings.Trim(k, "\x00") != "" {
			out[k] = v
		}
	}
	t, ok := lookupLoose(name, tools)
	if !ok {
		return out, nil
	}
	var free []action.Param
	for _, p := range t.Params {
		if _, given := out[p.Name]; !given {
			free = append(free, p)
		}
	}
	var notes []string
	for i, k := range pos {
		if i >= len(free) {
			notes = append(notes, fmt.Sprintf("%s takes %s; dropped the extra unnamed value %s", t.Name, t.ParamList(), describe(args[k])))
			continue
		}
		out[free[i].Name] = args[k]
		notes = append(notes, fmt.Sprintf("took the unnamed value %s as %q", describe(args[k]), free[i].Name))
	}
	return out, notes
}

// emptyFence matches what is left of a code fence or inline code span
// whose call was cut out ("```tool_code\n```", "`tap(5)`"), and the
// Llama python tag that announced a call.
var emptyFence = regexp.MustCompile("```[\\w-]*\\s*```|``|<\\|python_tag\\|>")

// stripSpans removes the calls' text from the answer so Content is what
// the model said besides its calls.
func stripSpans(text string, cs []candidate) string {
	if len(cs) == 0 {
		return text
	}
	spans := make([][2]int, 0, len(cs))
	for _, c := range cs {
		if c.start >= 0 && c.end <= len(text) && c.start < c.end {
			spans = append(spans, [2]int{c.start, c.end})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var b strings.Builder
	pos := 0
	for _, s := range spans {
		if s[0] < pos {
			if s[1] > pos {
				pos = s[1]
			}
			continue
		}
		before := text[pos:s[0]]
		b.WriteString(before)
		pos = s[1]
		// "I will tap(3) now" reads "I will now", not "I will  now".
		if strings.HasSuffix(before, " ") && pos < len(text) && text[pos] == ' ' {
			pos++
		}
	}
	b.WriteString(text[pos:])
	return emptyFence.ReplaceAllString(b.String(), "")
}
