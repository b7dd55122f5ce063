package adbd

import (
	"fmt"
	"strings"
)

// SyntaxError is a command line the strict splitter refuses.
type SyntaxError struct {
	Offset int
	Reason string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("offset %d: %s", e.Offset, e.Reason) }

// reserved are the shell's reserved words, which would start compound
// commands if they came first.
var reserved = map[string]bool{
	"!": true, "{": true, "}": true, "case": true, "do": true, "done": true, "elif": true, "else": true,
	"esac": true, "fi": true, "for": true, "function": true, "if": true, "in": true, "select": true,
	"then": true, "time": true, "until": true, "while": true, "[[": true, "]]": true,
}

// Split parses line the way mksh parses one simple command whose words are
// all literal, and returns the words. It refuses, with a *SyntaxError,
// everything else a real shell would give a meaning to: command separators
// and operators (; & | newline), redirections (< >), subshells and groups
// ( ( ) { } ), parameter, command and arithmetic substitution ($ and `),
// globbing (* ? [), brace expansion, tilde expansion, comments (#),
// variable assignments, reserved words, line continuations and NUL bytes.
// Quoting follows POSIX: '...' is literal; "..." is literal except that \
// escapes $ ` " \ (a $ or ` inside "..." is refused); \c outside quotes is c.
func Split(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false    // a word has started (quotes may make it empty)
	quotedAny := false // the current word had a quoted part
	assign := false    // an unquoted = came before any quoting: NAME=value
	fail := func(i int, format string, a ...any) ([]string, error) {
		return nil, &SyntaxError{Offset: i, Reason: fmt.Sprintf(format, a...)}
	}
	end := func(i int) error {
		if !inWord {
			return nil
		}
		w := cur.String()
		if len(words) == 0 {
			if !quotedAny && reserved[w] {
				return &SyntaxError{Offset: i, Reason: fmt.Sprintf("reserved word %q", w)}
			}
			if assign {
				return &SyntaxError{Offset: i, Reason: "variable assignment"}
			}
		}
		words = append(words, w)
		cur.Reset()
		inWord, quotedAny, assign = false, false, false
		return nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == 0:
			return fail(i, "NUL byte")
		case c == ' ' || c == '\t':
			if err := end(i); err != nil {
				return nil, err
			}
		case c == '\n' || c == '\r':
			return fail(i, "unquoted newline (command separator)")
		case c == ';':
			return fail(i, "unquoted ; (command separator)")
		case c == '&':
			return fail(i, "unquoted & (background or &&)")
		case c == '|':
			return fail(i, "unquoted | (pipe or ||)")
		case c == '<' || c == '>':
			return fail(i, "unquoted %c (redirection)", c)
		case c == '(' || c == ')':
			return fail(i, "unquoted %c (subshell)", c)
		case c == '{' || c == '}':
			return fail(i, "unquoted %c (group or brace expansion)", c)
		case c == '$':
			return fail(i, "unquoted $ (expansion or substitution)")
		case c == '`':
			return fail(i, "unquoted ` (command substitution)")
		case c == '*' || c == '?' || c == '[' || c == ']':
			return fail(i, "unquoted %c (glob)", c)
		case c == '#' && !inWord:
			return fail(i, "unquoted # (comment)")
		case c == '~' && !inWord:
			return fail(i, "unquoted ~ (tilde expansion)")
		case c == '\\':
			if i+1 >= len(line) {
				return fail(i, "trailing backslash")
			}
			if line[i+1] == '\n' {
				return fail(i, "line continuation")
			}
			if line[i+1] == 0 {
				return fail(i+1, "NUL byte")
			}
			i++
			cur.WriteByte(line[i])
			inWord, quotedAny = true, true
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return fail(i, "unterminated single quote")
			}
			body := line[i+1 : i+1+j]
			if strings.IndexByte(body, 0) >= 0 {
				return fail(i, "NUL byte")
			}
			cur.WriteString(body)
			inWord, quotedAny = true, true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch line[i] {
				case 0:
					return fail(i, "NUL byte")
				case '$':
					return fail(i, "$ inside double quotes (expansion)")
				case '`':
					return fail(i, "` inside double quotes (command substitution)")
				case '\\':
					if i+1 < len(line) && strings.IndexByte("$`\"\\", line[i+1]) >= 0 {
						i++
						cur.WriteByte(line[i])
					} else if i+1 < len(line) && line[i+1] == '\n' {
						return fail(i, "line continuation")
					} else {
						cur.WriteByte('\\')
					}
				default:
					cur.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return fail(len(line), "unterminated double quote")
			}
			inWord, quotedAny = true, true
		default:
			if c < 0x20 || c == 0x7f {
				return fail(i, "control character 0x%02x", c)
			}
			if c == '=' && !quotedAny {
				assign = true
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	if err := end(len(line)); err != nil {
		return nil, err
	}
	return words, nil
}
