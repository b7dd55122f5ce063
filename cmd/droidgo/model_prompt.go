package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/chat"
)

func newModelPromptCmd(d *deps) *cobra.Command {
	var messagesPath, toolsPath string
	var noThink bool
	c := &cobra.Command{
		Use:   "prompt FILE --messages M.json [--tools T.json] [--no-think]",
		Short: "Print the exact prompt a model's chat template renders for a conversation",
		Long: `Render a conversation with the chat template of FILE (a Spark GGUF or an HF
model directory) and print the prompt exactly, byte for byte, with the
generation prompt appended and no newline added.

M.json holds the messages in the OpenAI chat format: a JSON array of
{"role", "content", "reasoning_content", "tool_calls"}, or an object with a
"messages" array (and optionally "tools"). Tool-call arguments may be a JSON
object or a JSON string holding one. T.json holds the tools: an array of
{"type": "function", "function": {...}} (or an object with a "tools" array).
Object key order is kept. "-" reads a file from standard input.

The template is Spark-X2.5's official one, rendered natively. When FILE
carries a different template (or none), droidgo warns on standard error and
renders the official template anyway.`,
		Example: `  droidgo model prompt Spark-X2.5-1.7B-Q4_K_M.gguf --messages conv.json --tools tools.json
  droidgo model prompt ./Spark-X2.5-1.7B --messages conv.json --no-think`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if messagesPath == "" {
				return usageErr(errors.New("--messages is required"))
			}
			if messagesPath == "-" && toolsPath == "-" {
				return usageErr(errors.New("--messages and --tools cannot both read standard input"))
			}
			tmpl, found, err := chat.ModelTemplate(args[0])
			if err != nil {
				return fmt.Errorf("read chat template: %w", err)
			}
			switch {
			case !found:
				fmt.Fprintf(d.stderr, "droidgo: warning: %s has no chat template; using Spark-X2.5's official one\n", args[0])
			case !chat.IsOfficial(tmpl):
				fmt.Fprintf(d.stderr, "droidgo: warning: %s has a chat template that differs from Spark-X2.5's official one; rendering the official one\n", args[0])
			}

			msgs, tools, err := readConversation(d, messagesPath, "messages")
			if err != nil {
				return err
			}
			if toolsPath != "" {
				if tools, _, err = readConversation(d, toolsPath, "tools"); err != nil {
					return err
				}
			}
			if err := chat.NormalizeArguments(msgs); err != nil {
				return fmt.Errorf("%s: %w", messagesPath, err)
			}
			out, err := chat.RenderValues(msgs, tools, chat.Options{Thinking: !noThink, AddGenerationPrompt: true})
			if err != nil {
				return fmt.Errorf("render prompt: %w", err)
			}
			_, err = io.WriteString(d.stdout, out)
			return err
		},
	}
	c.Flags().StringVar(&messagesPath, "messages", "", "JSON file with the messages (OpenAI chat format; - for stdin)")
	c.Flags().StringVar(&toolsPath, "tools", "", "JSON file with the tools (OpenAI format; - for stdin)")
	c.Flags().BoolVar(&noThink, "no-think", false, "render with thinking off (enable_thinking=false)")
	return c
}

// readConversation reads a JSON file holding either an array (the list named
// key) or an object with that key; for messages, an object's "tools" come
// back as the second list.
func readConversation(d *deps, path, key string) (list, tools []any, err error) {
	var data []byte
	if path == "-" {
		data, err = io.ReadAll(d.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", key, err)
	}
	v, err := chat.ParseJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	switch x := v.(type) {
	case []any:
		return x, nil, nil
	case chat.Object:
		lv, ok := x.Get(key)
		l, isList := lv.([]any)
		if !ok || !isList {
			return nil, nil, fmt.Errorf("%s has no %q array", path, key)
		}
		if key == "messages" {
			if tv, ok := x.Get("tools"); ok && tv != nil {
				if tools, ok = tv.([]any); !ok {
					return nil, nil, fmt.Errorf("%s: \"tools\" is not an array", path)
				}
			}
		}
		return l, tools, nil
	}
	return nil, nil, fmt.Errorf("%s holds neither a JSON array nor an object with %q", path, key)
}
