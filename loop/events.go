// Package loop runs the agent: observe the screen, ask the model, recover
// its tool call, validate and act, check progress, and stop for a reason.
// It reports everything it does as events.
package loop

import (
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/uixml"
)

// EventType names an event.
type EventType string

// Event types, in the order they occur within a run. Every event also
// carries Time and Device (the phone's name, as run_started gives it).
const (
	EvRunStarted   EventType = "run_started"   // Task, MaxSteps, Model, Engine
	EvHold         EventType = "hold"          // Stage: the run passed a hold point (Config.Hold); replays hold there
	EvStepStarted  EventType = "step_started"  // Step, Screen
	EvPrompt       EventType = "prompt"        // Step, Messages: the conversation sent to the model (recordings keep it; displays may ignore it)
	EvThinking     EventType = "thinking"      // Step, Text: a reasoning token (may be coalesced)
	EvAnswer       EventType = "answer"        // Step, Text: an answer token (may be coalesced)
	EvModelStats   EventType = "model_stats"   // Step, Stats
	EvVote         EventType = "vote"          // Step, Vote: every chain of a voted turn (Config.Vote) and the call chosen; the tool_call event follows
	EvToolCall     EventType = "tool_call"     // Step, Call, Parse (Call is nil when nothing usable was found; Parse.Errors says why)
	EvApproval     EventType = "approval"      // Step, Call, Approval, Text: the call waits for the user; Approval says why, Text in words
	EvAction       EventType = "action"        // Step, Call, Outcome, Detail, Error
	EvScreenChange EventType = "screen_change" // Step, Changed, Detail: switches the action flipped, e.g. `"Wi-Fi" turned on`
	EvWarning      EventType = "warning"       // Step, Text
	EvFinished     EventType = "finished"      // Result
)

// Outcome is what became of a call, in an EvAction event. Consumers decide
// on it, never on the event's Detail or Error, which are for people.
type Outcome string

// Outcomes.
const (
	// OutcomeDone: the call was carried out (task_complete included).
	OutcomeDone Outcome = "done"
	// OutcomeFailed: the device refused or failed it; Error says how.
	OutcomeFailed Outcome = "failed"
	// OutcomeNotRun: the checks refused it before anything ran (schema,
	// an element not on the screen, an app not installed, an invalid
	// edit); Error says why.
	OutcomeNotRun Outcome = "not_run"
	// OutcomeRefused: it needed the user's approval and nobody could
	// give it.
	OutcomeRefused Outcome = "refused"
	// OutcomeSkipped: the user skipped it.
	OutcomeSkipped Outcome = "skipped"
)

// ApprovalReason is why a call waits for the user (EvApproval's Approval,
// ApprovalRequest.Why).
type ApprovalReason string

// Approval reasons.
const (
	// ApprovalSensitive: the sensitive-action policy (a label, a password
	// field); the event's Text says which.
	ApprovalSensitive ApprovalReason = "sensitive"
	// ApprovalStepMode: step mode, in which every call waits.
	ApprovalStepMode ApprovalReason = "step_mode"
)

// Droppable reports whether a consumer under load may coalesce or drop the
// event. Every other event must be delivered.
func (t EventType) Droppable() bool { return t == EvThinking || t == EvAnswer }

// ScreenInfo is the part of a screen consumers show.
type ScreenInfo struct {
	Width       int           `json:"width"`
	Height      int           `json:"height"`
	App         string        `json:"app,omitempty"`
	Prompt      string        `json:"prompt"`   // the element list as the model sees it
	Elements    []ElementInfo `json:"elements"` // the same list, structured
	Fingerprint string        `json:"fingerprint"`
	// XML is the raw dump; only recordings carry it.
	XML string `json:"xml,omitempty"`
}

// ElementInfo is one element of ScreenInfo.
type ElementInfo struct {
	Index  int    `json:"index"`
	Label  string `json:"label"`
	Kind   string `json:"kind,omitempty"`
	State  string `json:"state,omitempty"` // "on"/"off" for switches, "checked"/"unchecked" for other checkables
	Bounds [4]int `json:"bounds"`
}

// ParseInfo describes how a call was recovered from the model's text.
type ParseInfo struct {
	Format     string   `json:"format"`
	Recoveries []string `json:"recoveries,omitempty"`
	Errors     []string `json:"errors,omitempty"`
	Raw        string   `json:"raw,omitempty"` // the raw model output of the turn
	// Refused is the first call of a known tool whose arguments the
	// schema refused, when no call was usable (Errors says why): a
	// benchmark scores its tool, never its action.
	Refused *action.Call `json:"refused,omitempty"`
}

// StatsInfo is the model cost of one turn.
type StatsInfo struct {
	PromptTokens    int     `json:"prompt_tokens"`
	CachedTokens    int     `json:"cached_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	PrefillMS       float64 `json:"prefill_ms"`
	DecodeMS        float64 `json:"decode_ms"`
	TokensPerSecond float64 `json:"tokens_per_second"`
}

// VoteInfo is how a voted turn chose its call (Config.Vote): every chain,
// and the call of the majority.
type VoteInfo struct {
	Chains []ChainInfo `json:"chains"`
	// Winner is the chain whose call was taken: of the calls most chains
	// agree on, the one whose first chain finished first; -1 when no
	// chain had a usable call. Votes is how many chains gave that call.
	Winner int `json:"winner"`
	Votes  int `json:"votes"`
}

// ChainInfo is one chain of a voted turn.
type ChainInfo struct {
	Seed uint64 `json:"seed"`
	// Call is the chain's usable call (nil when it had none; Parse says
	// why).
	Call  *action.Call `json:"call,omitempty"`
	Parse *ParseInfo   `json:"parse"`
	// Finished is the order the chain ended in (1: first); 0 for a chain
	// whose stream failed (Error).
	Finished        int    `json:"finished,omitempty"`
	GeneratedTokens int    `json:"generated_tokens"`
	Error           string `json:"error,omitempty"`
}

// Result is how a run ended.
type Result struct {
	Success bool    `json:"success"`
	Reason  string  `json:"reason"`
	Summary string  `json:"summary,omitempty"` // task_complete's summary
	Steps   int     `json:"steps"`
	Seconds float64 `json:"seconds"`
}

// Event is everything the loop reports. One struct with a type keeps the
// JSON lines, the recorder and replay trivially faithful.
type Event struct {
	Type EventType `json:"type"`
	Time time.Time `json:"time"`
	Step int       `json:"step,omitempty"`
	// Device names the phone of the run; every event of a run has it, so
	// the events of runs on several phones can share one stream.
	Device string `json:"device,omitempty"`

	Task     string `json:"task,omitempty"`
	MaxSteps int    `json:"max_steps,omitempty"`
	Model    string `json:"model,omitempty"`
	// Engine is how an in-process model runs (model.EngineBackend): its
	// threads, the cores they run on, its kernels.
	Engine *model.Engine `json:"engine,omitempty"`

	Stage    Stage          `json:"stage,omitempty"`    // EvHold
	Outcome  Outcome        `json:"outcome,omitempty"`  // EvAction
	Approval ApprovalReason `json:"approval,omitempty"` // EvApproval

	Screen  *ScreenInfo  `json:"screen,omitempty"`
	Text    string       `json:"text,omitempty"`
	Stats   *StatsInfo   `json:"stats,omitempty"`
	Call    *action.Call `json:"call,omitempty"`
	Parse   *ParseInfo   `json:"parse,omitempty"`
	Detail  string       `json:"detail,omitempty"`  // e.g. "input tap 540 1210"
	Element *int         `json:"element,omitempty"` // index of the element acted on
	// Target is the identity of the element acted on, on an EvAction
	// event of a call that names one: what a replay finds it by again.
	Target  *uixml.Identity `json:"target,omitempty"`
	Error   string          `json:"error,omitempty"`
	Changed *bool           `json:"changed,omitempty"`
	Result  *Result         `json:"result,omitempty"`
	Vote    *VoteInfo       `json:"vote,omitempty"`

	// Messages is the conversation of an EvPrompt event.
	Messages []model.Message `json:"messages,omitempty"`

	// Replay is set on the events of a replay on a phone.
	Replay *ReplayInfo `json:"replay,omitempty"`
}
