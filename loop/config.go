package loop

import (
	"context"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/model"
)

// Defaults used when a Config field is left zero.
const (
	DefaultMaxSteps      = 20
	DefaultPollInterval  = 300 * time.Millisecond
	DefaultSettleTimeout = 5 * time.Second
	DefaultDumpRetries   = 3
	// DefaultStreamRetries and DefaultStreamBackoff: a model stream that
	// breaks off mid-turn (a server restarting, a dropped connection) is
	// asked again twice, after 1 s and 2 s, before the run ends.
	DefaultStreamRetries = 2
	DefaultStreamBackoff = time.Second
	DefaultHistory       = 8
	// SimulatedPollInterval is the settle poll for a simulated phone,
	// whose screen is ready at once.
	SimulatedPollInterval = 10 * time.Millisecond
	// maxFailedSteps ends a run after this many steps in a row without a
	// usable call or with a device error, so a broken model or phone does
	// not burn the whole step budget.
	maxFailedSteps = 3
)

// The token bound of a turn (Config.MaxTokens), decided once here: the
// reasoning's budget plus room for the answer after it. A turn whose
// reasoning has no budget is capped, so a model that never stops cannot
// stall a run or a benchmark.
const (
	// AnswerTokens is the room for the answer: a call, or a short text
	// before it, fits with plenty to spare.
	AnswerTokens = 512
	// MaxTurnTokens bounds a thinking turn without a budget.
	MaxTurnTokens = 8192
)

// TurnTokens is the token bound of one turn: AnswerTokens with thinking
// off, ThinkBudget+AnswerTokens with a budget, MaxTurnTokens without one.
func TurnTokens(think bool, thinkBudget int) int {
	switch {
	case !think:
		return AnswerTokens
	case thinkBudget <= 0:
		return MaxTurnTokens
	}
	return thinkBudget + AnswerTokens
}

// DefaultSensitive is the default list of labels whose elements always wait
// for approval before they are tapped.
var DefaultSensitive = []string{"Pay", "Buy", "Send", "Delete"}

// Stage names a point where Config.Hold may hold a run.
type Stage string

// Hold points.
const (
	// HoldTurn comes before the model is asked: before each step's
	// step_started event, and before a corrective turn.
	HoldTurn Stage = "turn"
	// HoldAction comes after the tool_call event of a usable call,
	// before the call is checked, approved and run.
	HoldAction Stage = "action"
)

// Config is everything one run needs.
type Config struct {
	Task string
	// Device is the phone; DeviceName is how it is shown.
	Device     device.Device
	DeviceName string
	// Model generates the agent's turns.
	Model model.Backend
	// Tools is the action space offered to the model; nil means action.Tools.
	Tools []action.Tool

	// MaxSteps bounds the number of steps; 0 means DefaultMaxSteps.
	MaxSteps int
	// Think turns the model's reasoning phase on.
	Think bool
	// ThinkBudget caps the reasoning of one turn in tokens (0: no cap). At
	// the cap the loop closes the reasoning and takes the answer anyway.
	ThinkBudget int
	// MaxTokens bounds a whole turn; 0 means TurnTokens(Think,
	// ThinkBudget).
	MaxTokens int
	// Sampling is how the model picks tokens; the zero value is greedy.
	// config.Settings.Loop fills it from the settings.
	Sampling model.Sampling
	// Constrain asks backends that can to limit the answer to a valid call
	// (model.ChatRequest.Constrain), with the screen's indices.
	Constrain bool
	// Vote, above 1, is how many chains each turn generates at once from
	// the same prompt, each with a seed of its own; the call is the one
	// most chains agree on (ties: the chain that finished first). The
	// first chain's tokens are shown; every chain is in the EvVote event.
	// 0 or 1: one chain.
	Vote int

	// StepMode makes every action wait for Approver.
	StepMode bool
	// ConsultAlways passes every action to Approver, which decides itself
	// whether to wait: for a UI whose user can turn step mode on mid-run.
	// EvApproval is still emitted only for actions that must wait (step
	// mode or sensitive).
	ConsultAlways bool
	// Approver is asked before sensitive actions and, in step mode, before
	// every action. A nil Approver refuses sensitive actions.
	Approver Approver
	// Sensitive lists labels (matched as whole words, ignoring case) whose
	// elements need approval; nil means DefaultSensitive, an empty non-nil
	// slice turns the label policy off. Typing into a password field always
	// needs approval.
	Sensitive []string

	// Verify, when set, is asked once the model calls task_complete; an
	// error makes the run a failure with the error as the reason. The
	// simulator's success predicate plugs in here.
	Verify func(ctx context.Context) error

	// OnEvent receives every event, synchronously and in order. It must be
	// quick and never wait for the user: consumers that draw should queue
	// and coalesce, and a UI that pauses the run does it in Hold.
	OnEvent func(Event)
	// Hold, when set, is called at each point where the run may be held:
	// before each turn of the model (HoldTurn) and before each call the
	// model decided on is checked, approved and run (HoldAction). It
	// returns at once unless the user paused the run, and then when they
	// resume; an error (ctx's, when ctx ends while held) ends the run.
	Hold func(ctx context.Context, stage Stage) error

	// PollInterval is the pause between the dumps that check the screen
	// has settled and between dump retries; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// SettleTimeout bounds the wait for a settled screen; 0 means
	// DefaultSettleTimeout.
	SettleTimeout time.Duration
	// DumpRetries is how many times a dump that fails with
	// device.ErrDumpNotIdle (or does not parse) is tried again before the
	// failure is reported; 0 means DefaultDumpRetries.
	DumpRetries int
	// History is how many past steps the prompt summarises; 0 means
	// DefaultHistory.
	History int
	// Warnings are emitted as EvWarning right after EvRunStarted: what the
	// caller noticed before the run (a task that is not the simulator
	// scenario's), so every consumer and the recording show it.
	Warnings []string
	// StreamRetries is how many times a turn whose stream broke off is
	// asked again, with StreamBackoff doubling between tries, before the
	// run ends with the error; 0 means DefaultStreamRetries, negative
	// means never.
	StreamRetries int
	StreamBackoff time.Duration
	// Previous lists steps taken before this run, one line each as the
	// prompt shows them (`open_app(name="Settings") -> screen changed`),
	// so a run can start in the middle of a task, as a benchmark's
	// single-decision case does.
	Previous []string

	// Now and Sleep replace the clock in tests. Sleep must return early
	// with ctx.Err() when ctx ends.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

func (c *Config) setDefaults() {
	if c.Tools == nil {
		c.Tools = action.Tools
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = TurnTokens(c.Think, c.ThinkBudget)
	}
	if c.Sensitive == nil {
		c.Sensitive = DefaultSensitive
	}
	// PollInterval, SettleTimeout and DumpRetries are Settle's
	// (ReadOptions), which gives a zero its default.
	if c.History <= 0 {
		c.History = DefaultHistory
	}
	if c.StreamRetries == 0 {
		c.StreamRetries = DefaultStreamRetries
	}
	if c.StreamBackoff <= 0 {
		c.StreamBackoff = DefaultStreamBackoff
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Sleep == nil {
		c.Sleep = clock.Sleep
	}
	if c.OnEvent == nil {
		c.OnEvent = func(Event) {}
	}
	if c.Hold == nil {
		c.Hold = func(context.Context, Stage) error { return nil }
	}
}
