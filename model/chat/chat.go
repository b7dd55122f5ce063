// Package chat renders a conversation into Spark-X2.5's prompt text, byte
// for byte as the official chat template (spark2.5-chat-template.jinja)
// renders it with HF transformers' apply_chat_template. The renderer is
// native Go, tested against renders of the template by Python's jinja2
// (testdata/gen_renders.py).
//
// A model file carries its own template (ModelTemplate). When it is the
// official one (IsOfficial) the native renderer is exact. Otherwise droidgo
// still renders the official template and callers warn: no Go Jinja engine
// renders the official template exactly (gonja v2.9.1 cannot parse its
// inline "v if v is string else v | tojson" and, holding objects in Go maps,
// would lose the key order the output depends on), and a Spark model is
// trained on the official format anyway.
package chat

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
)

// OfficialTemplate is Spark-X2.5's official chat template, the one Render
// implements.
//
//go:embed spark2.5-chat-template.jinja
var OfficialTemplate string

// Options control rendering.
type Options struct {
	// Thinking is the template's enable_thinking: the generation prompt
	// opens a reasoning block (<think>) instead of closing it (</think>).
	Thinking bool
	// AddGenerationPrompt appends the assistant turn's opening.
	AddGenerationPrompt bool
}

// IsOfficial reports whether a template (e.g. a GGUF's
// tokenizer.chat_template) is the official one Render implements. Leading and
// trailing whitespace and line-ending style are ignored.
func IsOfficial(tmpl string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(tmpl) == norm(OfficialTemplate)
}

// Special strings of the template.
const (
	bos    = "<｜start▁of▁sentence｜>"
	eos    = "<｜end▁of▁sentence｜>"
	system = "<|System|>"
	user   = "<|User|>"
	bot    = "<|Bot|>"
	toolT  = "<|Tool|>"

	defaultSystem = "you are a helpful assistant."
)

// RenderValues renders messages and tools given as JSON values in the
// OpenAI chat shape (each message an Object with role, content,
// reasoning_content, tool_calls; each tool an Object {"type": "function",
// "function": {...}}), exactly as the template does. Values come from
// ParseJSON or are built in Go; tool-call arguments must be Objects (see
// NormalizeArguments).
func RenderValues(messages, tools []any, opts Options) (string, error) {
	if len(messages) == 0 {
		return "", errors.New("no messages provided")
	}
	msgs := make([]Object, len(messages))
	for i, m := range messages {
		o, ok := m.(Object)
		if !ok {
			return "", fmt.Errorf("message %d is not a JSON object", i)
		}
		msgs[i] = o
	}
	var b strings.Builder

	initialSystem := ""
	if role, _ := msgs[0].Get("role"); role == "system" {
		c, _ := msgs[0].Get("content")
		s, err := renderContent(c, "system")
		if err != nil {
			return "", fmt.Errorf("message 0: %w", err)
		}
		initialSystem = s
	}
	b.WriteString(bos + system + "\n" + defaultSystem)
	if len(tools) > 0 {
		b.WriteString("## Tools\nYou have access to the following functions:\n<tools>")
		for i, t := range tools {
			o, _ := t.(Object)
			fn, ok := o.Get("function")
			if !ok {
				return "", fmt.Errorf("tool %d has no \"function\" (tools are {\"type\": \"function\", \"function\": {...}})", i)
			}
			j, err := toJSON(fn)
			if err != nil {
				return "", fmt.Errorf("tool %d: %w", i, err)
			}
			b.WriteString("\n" + j)
		}
		b.WriteString("\n</tools>")
	}
	if initialSystem != "" {
		b.WriteString("\n\n" + initialSystem)
	}
	b.WriteString(eos)

	for i, m := range msgs {
		role, _ := m.Get("role")
		content, hasContent := m.Get("content")
		var err error
		switch role {
		case "system":
			if i > 0 {
				var s string
				if s, err = renderContent(content, "system"); err == nil {
					b.WriteString(bos + system + "\n" + s + eos)
				}
			}
		case "user":
			var s string
			if s, err = renderContent(content, "user"); err == nil {
				b.WriteString(bos + user + s + eos)
			}
		case "assistant":
			err = renderAssistant(&b, m, content)
		case "tool":
			prevRole, nextRole := any(nil), any(nil)
			if i > 0 {
				prevRole, _ = msgs[i-1].Get("role")
			}
			if i+1 < len(msgs) {
				nextRole, _ = msgs[i+1].Get("role")
			}
			if prevRole != "tool" {
				b.WriteString(bos + toolT)
			}
			s := ""
			if hasContent {
				if s, err = pyStr(content); err != nil {
					break
				}
			}
			b.WriteString("<tool_response>" + s + "</tool_response>")
			if nextRole != "tool" {
				b.WriteString(eos)
			}
		default:
			r, _ := pyStr(role)
			if role == nil {
				r = "(none)"
			}
			err = fmt.Errorf("unsupported message role %s", r)
		}
		if err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
	}

	if opts.AddGenerationPrompt {
		b.WriteString(bos + bot)
		if opts.Thinking {
			b.WriteString("<think>")
		} else {
			b.WriteString("</think>")
		}
	}
	return b.String(), nil
}

func renderAssistant(b *strings.Builder, m Object, content any) error {
	text, err := renderContent(content, "assistant")
	if err != nil {
		return err
	}
	reasoning := ""
	if r, ok := m.Get("reasoning_content"); ok && truthy(r) {
		s, isStr := r.(string)
		if !isStr {
			return errors.New("reasoning_content is not a string")
		}
		reasoning = s
	}
	b.WriteString(bos + bot)
	if reasoning != "" {
		b.WriteString("<think>" + reasoning + "</think>")
	} else {
		b.WriteString("</think>")
	}
	b.WriteString(text)
	calls, ok := m.Get("tool_calls")
	if !ok || calls == nil {
		b.WriteString(eos)
		return nil
	}
	list, ok := calls.([]any)
	if !ok {
		return errors.New("tool_calls is not a list")
	}
	for k, c := range list {
		co, _ := c.(Object)
		fnv, _ := co.Get("function")
		fn, _ := fnv.(Object)
		args, ok := fn.Get("arguments")
		argObj, isObj := args.(Object)
		if !ok || !isObj {
			return fmt.Errorf("tool call %d: arguments must be a JSON object", k)
		}
		name, _ := fn.Get("name")
		ns, isStr := name.(string)
		if !isStr {
			return fmt.Errorf("tool call %d: function name is not a string", k)
		}
		b.WriteString("<tool_call>" + ns)
		for _, a := range argObj {
			v, isStr := a.Value.(string)
			if !isStr {
				if v, err = toJSON(a.Value); err != nil {
					return fmt.Errorf("tool call %d: argument %q: %w", k, a.Key, err)
				}
			}
			b.WriteString("<arg_key>" + a.Key + "</arg_key><arg_value>" + v + "</arg_value>")
		}
		b.WriteString("</tool_call>")
	}
	b.WriteString(eos)
	return nil
}

// renderContent is the template's render_content macro: a string, nothing,
// or a list of {"type": "text", "text": ...} blocks.
func renderContent(c any, context string) (string, error) {
	switch x := c.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	case []any:
		var b strings.Builder
		for _, blk := range x {
			o, _ := blk.(Object)
			typ, _ := o.Get("type")
			if typ != "text" {
				t := ""
				if typ != nil {
					t, _ = pyStr(typ)
				}
				return "", fmt.Errorf("unsupported %s content block type %q", context, t)
			}
			if text, ok := o.Get("text"); ok {
				s, err := pyStr(text)
				if err != nil {
					return "", err
				}
				b.WriteString(s)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%s content must be a string or a list of text blocks", context)
}

// NormalizeArguments replaces tool-call arguments given as JSON strings (the
// OpenAI wire form) by the objects they encode, which the template needs.
func NormalizeArguments(messages []any) error {
	for i, m := range messages {
		o, _ := m.(Object)
		calls, _ := o.Get("tool_calls")
		list, _ := calls.([]any)
		for k, c := range list {
			co, _ := c.(Object)
			fnv, _ := co.Get("function")
			fn, _ := fnv.(Object)
			for j := range fn {
				if fn[j].Key != "arguments" {
					continue
				}
				s, ok := fn[j].Value.(string)
				if !ok {
					continue
				}
				v, err := ParseJSON([]byte(s))
				if err != nil {
					return fmt.Errorf("message %d tool call %d: arguments string is not JSON: %w", i, k, err)
				}
				if _, isObj := v.(Object); !isObj {
					return fmt.Errorf("message %d tool call %d: arguments string is not a JSON object", i, k)
				}
				fn[j].Value = v
			}
		}
	}
	return nil
}
