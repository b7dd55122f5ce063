package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/droidgo/droidgo/action"
)

// Results is results.json.
type Results struct {
	Model     string           `json:"model"`
	Config    Config           `json:"config"`
	Tasks     []TaskResult     `json:"tasks"`
	Decisions []DecisionResult `json:"decisions"`
	Summary   Summary          `json:"summary"`
}

// Config is how the evaluation was run.
type Config struct {
	Suites      []string `json:"suites"`
	Endpoint    string   `json:"endpoint,omitempty"`
	Parallel    int      `json:"parallel"`
	Repeat      int      `json:"repeat"`
	MaxSteps    int      `json:"max_steps"`
	Think       bool     `json:"think"`
	ThinkBudget int      `json:"think_budget"`
	Temperature float64  `json:"temperature"`
	TopP        float64  `json:"top_p"`
	// Seed is the evaluation's seed; each run's is derived from it (Seed).
	Seed   uint64 `json:"seed"`
	Filter string `json:"filter,omitempty"`
	// Replay is the directory of the recordings an evaluation of replays
	// carried out (--replay).
	Replay string `json:"replay,omitempty"`
}

// TaskResult is one run of one task.
type TaskResult struct {
	Suite           string  `json:"suite"`
	Name            string  `json:"name"`
	Repeat          int     `json:"repeat"`
	Success         bool    `json:"success"`
	Reason          string  `json:"reason"`
	Steps           int     `json:"steps"`
	Seconds         float64 `json:"seconds"`
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	Recoveries      int     `json:"recoveries"`
	// NotRun marks a task that could not be run (a broken scenario, a
	// failing backend); Reason says why. It counts in no rate.
	NotRun     bool   `json:"not_run,omitempty"`
	Task       string `json:"task,omitempty"`
	App        string `json:"app,omitempty"`
	Difficulty string `json:"difficulty,omitempty"`
	HumanSteps int    `json:"human_steps,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Approvals  int    `json:"approvals,omitempty"`
	// Recording is the run's recording, relative to the output directory.
	Recording string `json:"recording,omitempty"`
}

// DecisionResult is one run of one decision case.
type DecisionResult struct {
	Suite         string       `json:"suite"`
	Name          string       `json:"name"`
	Repeat        int          `json:"repeat"`
	ToolCorrect   bool         `json:"tool_correct"`
	ActionCorrect bool         `json:"action_correct"`
	Call          *action.Call `json:"call"`
	// Refused is the model's call when the schema refused its arguments
	// (Call is then null): its tool is scored, its action is not correct.
	Refused *action.Call `json:"refused,omitempty"`
	Seconds float64      `json:"seconds"`
	NotRun  bool         `json:"not_run,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	Task    string       `json:"task,omitempty"`
}

// Summary totals the results.
type Summary struct {
	Tasks     TaskSummary     `json:"tasks"`
	Decisions DecisionSummary `json:"decisions"`
}

// TaskSummary counts task runs that ran (N) and succeeded.
type TaskSummary struct {
	N       int        `json:"n"`
	Success int        `json:"success"`
	Rate    float64    `json:"rate"`
	CI95    [2]float64 `json:"ci95"`
	NotRun  int        `json:"not_run"`
}

// DecisionSummary counts decisions that ran (N) and their scores.
type DecisionSummary struct {
	N             int     `json:"n"`
	ToolCorrect   int     `json:"tool_correct"`
	ActionCorrect int     `json:"action_correct"`
	ToolRate      float64 `json:"tool_rate"`
	ActionRate    float64 `json:"action_rate"`
	NotRun        int     `json:"not_run"`
}

// Summarize computes the summary of r.
func Summarize(r *Results) Summary {
	var s Summary
	for _, t := range r.Tasks {
		if t.NotRun {
			s.Tasks.NotRun++
			continue
		}
		s.Tasks.N++
		if t.Success {
			s.Tasks.Success++
		}
	}
	s.Tasks.Rate = ratio(s.Tasks.Success, s.Tasks.N)
	lo, hi := Wilson(s.Tasks.Success, s.Tasks.N)
	s.Tasks.CI95 = [2]float64{round(lo), round(hi)}
	for _, d := range r.Decisions {
		if d.NotRun {
			s.Decisions.NotRun++
			continue
		}
		s.Decisions.N++
		if d.ToolCorrect {
			s.Decisions.ToolCorrect++
		}
		if d.ActionCorrect {
			s.Decisions.ActionCorrect++
		}
	}
	s.Decisions.ToolRate = ratio(s.Decisions.ToolCorrect, s.Decisions.N)
	s.Decisions.ActionRate = ratio(s.Decisions.ActionCorrect, s.Decisions.N)
	return s
}

func ratio(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return round(float64(k) / float64(n))
}

func round(v float64) float64 { return math.Round(v*10000) / 10000 }

// Wilson is the 95% Wilson score interval of k successes in n trials
// ([0, 0] for n == 0). Unlike the normal approximation it stays inside
// [0, 1] and is honest at 0/n and n/n, which small suites hit often.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// Score compares a call with the acceptable ones: the tool is correct when
// some accepted call has its name, the action when some accepted call also
// has every one of its arguments matched (numbers by value, enum values
// exactly, text ignoring case and surrounding space).
func Score(call action.Call, accept []action.Call) (tool, act bool) {
	for _, a := range accept {
		if a.Name != call.Name {
			continue
		}
		tool = true
		t, _ := action.Lookup(action.Tools, a.Name)
		all := true
		for k, want := range a.Arguments {
			got, ok := call.Arguments[k]
			p, _ := t.Param(k)
			if !ok || !argEqual(p, want, got) {
				all = false
				break
			}
		}
		if all {
			return true, true
		}
	}
	return tool, false
}

func argEqual(p action.Param, want, got any) bool {
	switch p.Type {
	case action.Integer, action.Number:
		w, ok1 := number(want)
		g, ok2 := number(got)
		return ok1 && ok2 && w == g
	}
	ws, gs := fmt.Sprint(want), fmt.Sprint(got)
	if len(p.Enum) > 0 {
		return ws == gs
	}
	return strings.EqualFold(strings.TrimSpace(ws), strings.TrimSpace(gs))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// WriteJSON writes r as indented JSON.
func (r *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadResults reads a results.json file.
func ReadResults(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r Results
	d := json.NewDecoder(io.LimitReader(f, 256<<20))
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %w", path, err)
	}
	return &r, nil
}
