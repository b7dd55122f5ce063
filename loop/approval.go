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
	Step      int
	Call      action.Call
	Label     string // label of the target element, if any
	Sensitive bool   // matched the sensitive-action policy
	Reason    string // why it waits, e.g. `label "Pay" is sensitive`
}

// Approver is asked before a call runs when step mode is on or the call is
// sensitive. It blocks until the user decides or ctx ends.
type Approver func(ctx context.Context, req ApprovalRequest) (Decision, error)
