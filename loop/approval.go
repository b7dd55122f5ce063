package loop

import (
	"context"

	"github.com/droidgo/droidgo/action"
)

// Verdict is a user's answer to a call waiting for approval.
type Verdict int

// Verdicts.
const (
	Approve Verdict = iota // run the call as it is
	Skip                   // do not run it; the model is told it was skipped
	Edit                   // run Decision.Call instead
	Abort                  // stop the run
)

// Decision is the answer of an Approver.
type Decision struct {
	Verdict Verdict
	Call    action.Call // the edited call, for Edit; coerced (toolparse.Coerce) and checked like the model's
}

// ApprovalRequest describes a call waiting for the user.
type ApprovalRequest struct {
	// Device is the phone of the run (Config.DeviceName): one approver
	// may serve the loops of several phones.
	Device string
	Step   int
	Call   action.Call
	Label  string // label of the target element, if any
	// Why is why the call waits: the sensitive-action policy, step mode,
	// or "" when it need not wait and the Approver is consulted on every
	// call (Config.ConsultAlways). Approvers decide on it.
	Why ApprovalReason
	// Reason says Why in words for people, e.g. `label "Pay" matches
	// the sensitive word "Pay"`.
	Reason string
}

// Approver is asked before a call runs when step mode is on or the call is
// sensitive. It blocks until the user decides or ctx ends.
type Approver func(ctx context.Context, req ApprovalRequest) (Decision, error)
