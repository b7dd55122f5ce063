// Package model defines the interface the agent loop uses to talk to a
// language model, whatever runs it: the in-process Spark engine
// (model/spark), an OpenAI-compatible server (model/openai) or a script
// (model/script).
package model

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droidgo/droidgo/action"
)

// Role of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in the OpenAI chat shape.
type Message struct {
	Role      string        `json:"role"`
	Content   string        `json:"content"`
	Reasoning string        `json:"reasoning_content,omitempty"`
	ToolCalls []action.Call `json:"tool_calls,omitempty"`
}

// Sampling controls token selection. The zero value means greedy decoding.
type Sampling struct {
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	TopK        int     `json:"top_k"`
	// MinP drops tokens less probable than MinP times the best one.
	MinP float64 `json:"min_p,omitempty"`
	Seed uint64  `json:"seed"`
}

// ScreenHeader starts the line of a user message after which the loop lists
// the screen's elements. It is defined here, below both, because the loop
// writes it and a backend that reads the screen (model/script) looks for it.
const ScreenHeader = "Current screen"

// ChatRequest is one assistant turn to generate.
type ChatRequest struct {
	Messages []Message
	Tools    []action.Tool
	// Think enables the reasoning phase.
	Think bool
	// MaxTokens bounds the whole turn (reasoning and answer); 0 means the
	// backend's default.
	MaxTokens int
	Sampling  Sampling
	// Constraint, when set and supported, limits the answer after the
	// reasoning to a valid call of Tools; ValidIndices lists the element
	// indices an "index" argument may take.
	Constrain    bool
	ValidIndices []int
	// Prompt, when not empty, is the conversation already rendered with
	// the chat template, generation prompt included (droidgo serve renders
	// its client's JSON exactly as sent). A backend that renders prompts
	// itself uses it instead of rendering Messages and Tools; Tools still
	// define the constraint. Other backends read Messages.
	Prompt string
	// Prefix, when not empty, is the leading part of Prompt that every
	// request with the same system message and tools shares: the part a
	// backend keeps computed between requests.
	Prefix string
}

// Delta is one piece of streamed output. At most one of Reasoning and
// Content is set in a delta from the built-in backends.
type Delta struct {
	Reasoning string
	Content   string
	// ToolCalls are calls the backend parsed itself (e.g. an HTTP server's
	// tool parser). When empty, the loop parses Content.
	ToolCalls []action.Call
	// ReasoningClosed is set on the delta that ends the reasoning phase.
	ReasoningClosed bool
}

// Stats describes the cost of one turn.
type Stats struct {
	PromptTokens    int           `json:"prompt_tokens"`
	CachedTokens    int           `json:"cached_tokens"`
	GeneratedTokens int           `json:"generated_tokens"`
	Prefill         time.Duration `json:"prefill_ns"`
	Decode          time.Duration `json:"decode_ns"`
	// Stopped says why the backend ended the turn early on its own side,
	// e.g. a server that ignored max_tokens; the loop shows it as a
	// warning. Empty when the turn ended normally.
	Stopped string `json:"stopped,omitempty"`
	// DiskTokens are the cached tokens loaded from a prompt cache on disk
	// (part of CachedTokens).
	DiskTokens int `json:"disk_tokens,omitempty"`
	// ThinkTokens are the generated tokens of the reasoning, ForcedTokens
	// the answer tokens the constraint dictated (appended in batches,
	// never sampled); the rest of GeneratedTokens was sampled.
	ThinkTokens  int `json:"think_tokens,omitempty"`
	ForcedTokens int `json:"forced_tokens,omitempty"`
	// Think and Answer split Decode between the phases; Forward is the
	// part of Decode spent in the engine's forward passes (the rest is
	// sampling, the constraint and detokenizing).
	Think   time.Duration `json:"think_ns,omitempty"`
	Answer  time.Duration `json:"answer_ns,omitempty"`
	Forward time.Duration `json:"forward_ns,omitempty"`
}

// DecodeRate returns generated tokens per second, or 0 when unknown.
func (s Stats) DecodeRate() float64 {
	if s.Decode <= 0 || s.GeneratedTokens == 0 {
		return 0
	}
	return float64(s.GeneratedTokens) / s.Decode.Seconds()
}

// Stream yields one assistant turn piece by piece.
type Stream interface {
	// Next returns the next delta, or io.EOF after the last one.
	Next() (Delta, error)
	// CloseReasoning asks the backend to end the reasoning phase now (a
	// thinking budget ran out) and continue with the answer. Backends that
	// cannot do it in-stream return ErrUnsupported; the loop then asks again
	// with thinking off.
	CloseReasoning() error
	// Close stops generation and releases resources.
	Close() error
	// Stats reports the turn's cost so far.
	Stats() Stats
}

// Backend generates assistant turns.
type Backend interface {
	// Name identifies the backend and model for display, e.g.
	// "spark:Spark-X2.5-1.7B-Q4_K_M.gguf".
	Name() string
	// Chat streams one assistant turn for the conversation so far.
	Chat(ctx context.Context, req ChatRequest) (Stream, error)
}

// Engine is how an in-process backend runs the model, for the headers of
// runs (the run_started event).
type Engine struct {
	Threads int `json:"threads"`
	// CPUs are the CPUs the threads are pinned to (none: not pinned).
	CPUs []int `json:"cpus,omitempty"`
	// Cores says which cores run the model, in words ("CPUs 4-7, the
	// fastest 4 of 8 cores").
	Cores string `json:"cores,omitempty"`
	// NotPinned is why the threads could not be pinned to CPUs, if they
	// could not.
	NotPinned string `json:"not_pinned,omitempty"`
	// Kernels is the kernel level that runs (kernels.ISA).
	Kernels string `json:"kernels,omitempty"`
}

// String writes e as a header line: "4 threads on CPUs 4-7, the fastest 4
// of 8 cores; kernels i8mm".
func (e Engine) String() string {
	s := fmt.Sprintf("%d thread", e.Threads)
	if e.Threads != 1 {
		s += "s"
	}
	if e.Cores != "" {
		s += " on " + e.Cores
	}
	if e.NotPinned != "" {
		s += " (not pinned: " + e.NotPinned + ")"
	}
	if e.Kernels != "" {
		s += "; kernels " + e.Kernels
	}
	return s
}

// EngineBackend is a backend that runs the model in-process and says how.
type EngineBackend interface {
	Engine() Engine
}

// ErrPromptTooLong is wrapped by the error of a Chat whose prompt does not
// fit the backend's context.
var ErrPromptTooLong = errors.New("prompt too long")

// ErrUnsupported is returned by optional operations a backend lacks.
var ErrUnsupported = errUnsupported{}

type errUnsupported struct{}

func (errUnsupported) Error() string { return "not supported by this backend" }
