package toolparse

import (
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// readFuncCall reads NAME(args) starting at text[start], where args are
// key=value, key: value or positional values (tap(index=3), tap(3),
// swipe("up"), type_text(text="hi", index=2)). The name need not be a known
// tool; callers decide.
func readFuncCall(text string, start int, tools []action.Tool) (candidate, bool) {
	fc, ok := scanFuncCall(text, start)
	return fc.c, ok
}

// funcCall is a call read by scanFuncCall, with what ReadCall needs to
// refuse repaired syntax.
type funcCall struct {
	c      candidate
	closed bool        // the ')' was there
	rep    jsonRepairs // what the value reader repaired
	dup    string      // an argument given twice (the last value is kept)
}

func scanFuncCall(text string, start int) (funcCall, bool) {
	j := start
	for j < len(text) && isIdentChar(text[j]) {
		j++
	}
	name := text[start:j]
	k := j
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if name == "" || k >= len(text) || text[k] != '(' {
		return funcCall{}, false
	}
	r := &jsonReader{s: text, pos: k + 1, bareStop: ",)\n\r"}
	c := candidate{name: name, format: FormatBracket, start: start, args: map[string]any{}}
	npos := 0
	closed := false
	dup := ""
	for {
		r.ws()
		if r.eof() {
			break
		}
		if text[r.pos] == ')' {
			r.pos++
			closed = true
			break
		}
		if text[r.pos] == ',' {
			r.pos++
			continue
		}
		key := ""
		if isIdentStart(text[r.pos]) {
			save, saveRep := r.pos, r.rep
			e := r.pos
			for e < len(text) && isIdentChar(text[e]) {
				e++
			}
			r.pos = e
			r.ws()
			if !r.eof() && (text[r.pos] == '=' || text[r.pos] == ':') {
				key = text[save:e]
				r.pos++
			} else {
				r.pos, r.rep = save, saveRep
			}
		}
		save := r.pos
		v, err := r.value()
		if err != nil {
			if r.eof() {
				break
			}
			// Something that is not a value: the call ends here.
			r.pos = save
			break
		}
		if key == "" {
			key = strings.Repeat("\x00", npos)
			npos++
		}
		if _, seen := c.args[key]; seen && dup == "" {
			dup = key
		}
		c.args[key] = v
		r.ws()
		if !r.eof() && text[r.pos] != ',' && text[r.pos] != ')' {
			break
		}
	}
	c.end = r.pos
	if m, ok := c.args[""].(map[string]any); ok && len(c.args) == 1 {
		// tap({"index": 3}): the arguments as one object.
		c.args = m
	}
	c.notes = append(c.notes, fmt.Sprintf("the call was written in function-call syntax (%s(...)); read it as a call", name))
	if !closed {
		c.notes = append(c.notes, fmt.Sprintf("the function call %s( was not closed with ')'; took the arguments up to where it stopped", name))
	}
	c.notes = append(c.notes, r.rep.notes()...)
	return funcCall{c: c, closed: closed, rep: r.rep, dup: dup}, true
}

// findFuncCalls finds NAME(...) where NAME is a tool of tools (in any
// spelling resolveName accepts).
func findFuncCalls(text string, tools []action.Tool) []candidate {
	var out []candidate
	for i := 0; i < len(text) && len(out) < maxCalls; i++ {
		if text[i] != '(' {
			continue
		}
		j := i
		for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
			j--
		}
		s := j
		for s > 0 && isIdentChar(text[s-1]) {
			s--
		}
		if s == j {
			continue
		}
		if _, ok := resolveName(text[s:j], tools); !ok {
			continue
		}
		// "tap (the blue button)" is prose; tap(3) is a call.
		if j != i {
			continue
		}
		if c, ok := readFuncCall(text, s, tools); ok {
			out = append(out, c)
			if c.end > i {
				i = c.end - 1
			}
		}
	}
	return out
}

// findBrackets finds [NAME] followed by JSON ([tap] {"tool": "tap", ...}
// or [tap] {"index": 1}), [NAME(args)] and a lone [NAME].
func findBrackets(text string, tools []action.Tool) []candidate {
	var out []candidate
	for i := 0; i < len(text) && len(out) < maxCalls; i++ {
		if text[i] != '[' {
			continue
		}
		j := i + 1
		for j < len(text) && j-i < 80 && text[j] != ']' && text[j] != '\n' && text[j] != '[' {
			j++
		}
		if j >= len(text) || text[j] != ']' {
			continue
		}
		inner := strings.TrimSpace(text[i+1 : j])
		if inner == "" || !isIdentStart(inner[0]) {
			continue
		}
		if p := strings.IndexByte(inner, '('); p > 0 {
			off := i + 1 + strings.Index(text[i+1:j], inner)
			// [tap(3)], or a Python list of calls, the form Llama 3.2's
			// template asks for: [tap(index=3), press_key(key="back")].
			var list []candidate
			for off < j {
				c, ok := readFuncCall(text, off, tools)
				if !ok {
					break
				}
				list = append(list, c)
				off = c.end
				for off < j && strings.IndexByte(" \t,", text[off]) >= 0 {
					off++
				}
			}
			for n, c := range list {
				if len(list) == 1 {
					c.notes[0] = fmt.Sprintf("the call was written as [%s]; read it as a call", inner)
				} else {
					c.notes[0] = fmt.Sprintf("the calls were written as a list [%s, ...]; read each as a call", list[0].name+"(...)")
				}
				if n == 0 {
					c.start = i
				}
				if n == len(list)-1 {
					c.end = j + 1
				} else {
					c.end = list[n+1].start
				}
				out = append(out, c)
			}
			if len(list) > 0 {
				i = j
			}
			continue
		}
		name := inner
		for k := 0; k < len(name); k++ {
			if !isIdentChar(name[k]) {
				name = ""
				break
			}
		}
		if name == "" {
			continue
		}
		_, known := resolveName(name, tools)
		// What follows: JSON, or nothing.
		k := j + 1
		for k < len(text) && strings.IndexByte(" \t\r\n:", text[k]) >= 0 {
			k++
		}
		if k < len(text) && (text[k] == '{' || (text[k] == '[' && !known)) {
			v, end, notes, err := readJSON(text, k)
			if err == nil {
				end, notes = extraClosers(text, end, notes)
				if cs := bracketJSON(name, known, v, tools); len(cs) > 0 {
					for n := range cs {
						cs[n].start, cs[n].end = i, end
						cs[n].notes = append(cs[n].notes, notes...)
					}
					out = append(out, cs...)
					i = end - 1
					continue
				}
			}
		}
		if known {
			out = append(out, candidate{name: name, args: map[string]any{}, format: FormatBracket, start: i, end: j + 1,
				notes: []string{fmt.Sprintf("the call was written as [%s] with no arguments after it", name)}})
			i = j
		}
	}
	return out
}

// bracketJSON reads the JSON after [NAME]: either a whole call or just the
// arguments.
func bracketJSON(name string, known bool, v any, tools []action.Tool) []candidate {
	cs := callsFromJSON(v, FormatBracket, tools, 0)
	if len(cs) > 0 {
		for n := range cs {
			cs[n].format = FormatBracket
			if cs[n].name != name && known {
				if a, _ := resolveName(cs[n].name, tools); a != "" {
					if b, _ := resolveName(name, tools); a != b {
						cs[n].notes = append(cs[n].notes, fmt.Sprintf("the bracket said [%s] but the JSON names %q; used the JSON's tool", name, cs[n].name))
					}
				}
			}
			cs[n].notes = append([]string{fmt.Sprintf("the call was written as [%s] followed by JSON; read the call from the JSON", name)}, cs[n].notes...)
		}
		return cs
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	// Only the arguments: the bracket names the tool (an unknown name is
	// reported as such, with the valid tools).
	return []candidate{{name: name, args: m, format: FormatBracket,
		notes: []string{fmt.Sprintf("the call was written as [%s] followed by its arguments as JSON", name)}}}
}
