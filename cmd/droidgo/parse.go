package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/toolparse"
	"github.com/spf13/cobra"
)

// maxParseInput bounds what `droidgo parse` reads: a model turn is a few
// thousand tokens, so anything near this size is not model output.
const maxParseInput = 16 << 20

func newParseCmd(d *deps) *cobra.Command {
	var asJSON, inThinking bool
	c := &cobra.Command{
		Use:   "parse [flags] < OUTPUT",
		Short: "Recover the tool calls from raw model output read on stdin",
		Long: `Parse reads one raw model output on stdin — reasoning, answer and tool calls,
exactly as the model wrote them — and prints the tool calls droidgo recovers
from it, with every repair it had to make and every problem it could not fix.

It understands Spark's native <tool_call> tags, the bracketed form
([tap] {"tool": "tap", ...}), bare JSON calls in their common shapes (also in
code fences or prose), OpenAI-style tool_calls and function-call syntax
(tap(index=3)), and repairs broken JSON, missing closing tags and arguments of
the wrong type according to the action space.

Exit status: 0 when at least one valid call was found, 1 when none was,
2 on a usage error.`,
		Example: `  printf '</think><tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>' | droidgo parse
  droidgo parse --json --in-thinking < turn.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(fmt.Errorf("parse takes no arguments; pipe the model output to its standard input"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := io.ReadAll(io.LimitReader(d.stdin, maxParseInput+1))
			if err != nil {
				return fmt.Errorf("read model output from stdin: %w", err)
			}
			if len(data) > maxParseInput {
				return usageErr(errors.New("the input is larger than 16 MiB; that is not one model output"))
			}
			res := toolparse.Parse(string(data), toolparse.Options{InThinking: inThinking})
			if asJSON {
				enc := json.NewEncoder(d.jsonOut())
				enc.SetEscapeHTML(false)
				if err := enc.Encode(res); err != nil {
					return fmt.Errorf("write result: %w", err)
				}
			} else {
				writeParseSummary(termsafe.NewWriter(d.stdout), res)
			}
			if len(res.Calls) == 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the full result as one JSON object")
	c.Flags().BoolVar(&inThinking, "in-thinking", false, "the output starts inside the reasoning (the prompt ended with <think>)")
	return c
}

// writeParseSummary prints the calls one per line, then the repairs and
// problems, for a person reading a terminal.
func writeParseSummary(w io.Writer, res toolparse.Result) {
	for _, c := range res.Calls {
		fmt.Fprintln(w, c.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s", res.Format)
	switch {
	case res.Reasoning == "" && res.ReasoningClosed:
		b.WriteString("; no reasoning")
	case res.ReasoningClosed:
		fmt.Fprintf(&b, "; reasoning: %d characters", len([]rune(res.Reasoning)))
	default:
		fmt.Fprintf(&b, "; reasoning: %d characters, never closed", len([]rune(res.Reasoning)))
	}
	if res.Content != "" {
		fmt.Fprintf(&b, "; other answer text: %d characters", len([]rune(res.Content)))
	}
	fmt.Fprintln(w, b.String())
	for _, r := range res.Recoveries {
		fmt.Fprintf(w, "recovered: %s\n", r)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	if len(res.Calls) == 0 {
		fmt.Fprintln(w, "no valid tool call")
	}
}
