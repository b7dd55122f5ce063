// Package toolparse recovers tool calls from a model's raw output, whatever
// shape it comes in, and reports every repair it had to make.
//
// Parse splits the reasoning (<think>...</think>) from the answer, finds
// the calls in the answer — Spark's native <tool_call> tags first, else
// the earliest of the bracketed form, JSON call shapes, OpenAI tool_calls
// and function-call syntax — repairs broken JSON and tags, and coerces the
// arguments to the action space's types with Coerce. Nothing is repaired
// silently: every repair is a sentence in Result.Recoveries, and whatever
// could not be fixed is a sentence in Result.Errors that names the valid
// choices. ParseTurn does the same for an output a backend already split
// into reasoning and answer as it streamed (model/reasoning). ReadCall
// and FormatCall read and write the NAME(key=value) form a person edits;
// RenderNative writes a call the way Spark does.
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
// Slices are never nil, so the JSON form has [] rather than null.
type Result struct {
	// Reasoning is the text inside <think>...</think>, trimmed.
	Reasoning string `json:"reasoning"`
	// ReasoningClosed is false only when a reasoning was opened and the
	// output ended before </think>.
	ReasoningClosed bool `json:"reasoning_closed"`
	// Content is the answer after the reasoning with the calls' text cut
	// out, trimmed: what the model said besides its calls.
	Content string `json:"content"`
	// Calls are the valid calls, coerced to the schema, in order.
	Calls []action.Call `json:"calls"`
	// Refused are the calls of a known tool whose arguments the schema
	// refused (Errors says why), with the arguments that could be read:
	// a benchmark scores their tool, never their action. (Not part of
	// `droidgo parse`'s JSON, whose fields are a contract.)
	Refused []action.Call `json:"-"`
	// Format is the form of the first call found, valid or not, or
	// FormatNone. Function-call syntax and bare command lines count as
	// FormatBracket (the contract's formats are fixed).
	Format Format `json:"format"`
	// Recoveries describe each repair: what was wrong, what was done.
	Recoveries []string `json:"recoveries"`
	// Errors describe what could not be used, naming the valid choices.
	Errors []string `json:"errors"`
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
