// Package toolparse recovers tool calls from a model's raw output, whatever
// shape it comes in, and reports every repair it had to make.
package toolparse

import "github.com/droidgo/droidgo/action"

// Format names the form a call was found in.
type Format string

// Formats of model output.
const (
	FormatNative  Format = "native"  // <tool_call>NAME<arg_key>..</arg_key><arg_value>..</arg_value></tool_call>
	FormatBracket Format = "bracket" // [tap] {"tool": ...}
	FormatJSON    Format = "json"    // bare JSON object
	FormatOpenAI  Format = "openai"  // {"tool_calls": [...]}
	FormatNone    Format = "none"
)

// Result is what was recovered from one model output.
type Result struct {
	Reasoning       string        `json:"reasoning"`
	ReasoningClosed bool          `json:"reasoning_closed"`
	Content         string        `json:"content"`
	Calls           []action.Call `json:"calls"`
	Format          Format        `json:"format"`
	Recoveries      []string      `json:"recoveries"`
	Errors          []string      `json:"errors"`
}

// Options tune parsing.
type Options struct {
	// InThinking says the prompt already opened <think>, so the output
	// starts inside the reasoning.
	InThinking bool
	// Tools is the schema calls are checked and coerced against; nil means
	// action.Tools.
	Tools []action.Tool
}
