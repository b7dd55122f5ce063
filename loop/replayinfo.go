package loop

import "github.com/droidgo/droidgo/uixml"

// ReplayInfo is what a replay of a recorded run on a phone (package
// replay) adds to its action and warning events.
type ReplayInfo struct {
	// Step is the number in the recorded run of the step carried out
	// again.
	Step int `json:"step"`
	// Similarity says how recognisably the live screen is the recorded one
	// (uixml.Signature.Similarity, 0 to 1).
	Similarity float64 `json:"similarity"`
	// Score says how well the live element matched the recorded one (0 to
	// 1), for a call on an element.
	Score *float64 `json:"score,omitempty"`
	// ReadMS, MatchMS and ActMS are the step's costs on an action event:
	// reading the screen until it settled (and, where it was not yet the
	// recorded one, until it was), checking it and finding the element,
	// and carrying out the call (0 for task_complete and wait, which the
	// read carries out).
	ReadMS  float64 `json:"read_ms"`
	MatchMS float64 `json:"match_ms"`
	ActMS   float64 `json:"act_ms"`
	// Stop is the report of the replay stopping at this step, on its
	// warning event.
	Stop *ReplayStop `json:"stop,omitempty"`
	// Resumed is set on the warning that the replay resumes at this step
	// after the agent took over.
	Resumed bool `json:"resumed,omitempty"`
}

// ReplayStop is why a replay stopped, with what a person needs to act on
// it: the recorded element, the best candidates on the live screen and
// what differed.
type ReplayStop struct {
	Kind StopKind `json:"kind"`
	// Recorded is the element the recorded call acted on.
	Recorded *uixml.Identity `json:"recorded,omitempty"`
	// Candidates are the three elements of the live screen most like it,
	// best first, with their scores and what differs.
	Candidates []uixml.Candidate `json:"candidates,omitempty"`
	// Missing and Added name what the recorded screen showed that the
	// live one does not, and the other way round.
	Missing []string `json:"missing,omitempty"`
	Added   []string `json:"added,omitempty"`
}

// StopKind says why a replay stopped.
type StopKind string

// Disagreement reports whether a replay stopped because the phone
// disagrees with the recording (its screen, the element, its state, the
// focus), where the agent may take over; not because of the user, the
// phone's failure or the policy.
func (k StopKind) Disagreement() bool {
	switch k {
	case StopScreen, StopTarget, StopCovered, StopState, StopFocus:
		return true
	}
	return false
}

// Why a replay stops.
const (
	StopScreen   StopKind = "screen"   // the live screen is not recognisably the recorded one
	StopTarget   StopKind = "target"   // the recorded element is not on the live screen
	StopCovered  StopKind = "covered"  // something drawn over the element would take the tap
	StopState    StopKind = "state"    // a switch or checkbox is already in the other state
	StopFocus    StopKind = "focus"    // no field has the focus the text was typed into
	StopApproval StopKind = "approval" // the call needs approval and nobody can give it
	StopDevice   StopKind = "device"   // the phone failed the action
	StopUser     StopKind = "user"     // the user stopped it
	StopAgent    StopKind = "agent"    // the agent took over and ended the run itself
	StopCheck    StopKind = "check"    // the run ended, but not as recorded
)
