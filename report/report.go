// Package report prints a run's events for people (plain streaming text)
// and for programs (JSON lines). It consumes loop.Event values only, so
// live runs and replays print the same.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
)

// Text prints events as plain streaming text: thinking and answer tokens as
// they arrive, then one line per call, action, screen change and warning,
// and the result. Everything goes through termsafe, so model, screen and
// recording text cannot reach the terminal with its control characters. It
// is safe for concurrent use.
type Text struct {
	mu     sync.Mutex
	w      *termsafe.Writer
	mode   loop.EventType // the token stream being written, or ""
	screen *loop.ScreenInfo
	max    int
	// Elements lists each step's elements too.
	Elements bool
}

// NewText returns a Text printer writing to w.
func NewText(w io.Writer) *Text { return &Text{w: termsafe.NewWriter(w)} }

// Err reports the first write error.
func (t *Text) Err() error { return t.w.Err() }

// Consume prints ev and returns the first write error: a consumer for
// sink.New.
func (t *Text) Consume(ev loop.Event) error {
	t.Event(ev)
	return t.Err()
}

const indent = "            " // aligns continuation lines under the values

// Event prints ev.
func (t *Text) Event(ev loop.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Type == loop.EvThinking || ev.Type == loop.EvAnswer {
		t.token(ev)
		return
	}
	if ev.Type == loop.EvPrompt || ev.Type == loop.EvHold {
		return
	}
	t.endTokens()
	w := t.w
	switch ev.Type {
	case loop.EvRunStarted:
		t.max = ev.MaxSteps
		fmt.Fprintf(w, "task:     %s\n", ev.Task)
		fmt.Fprintf(w, "device:   %s   model: %s   max steps: %d\n", orNone(ev.Device), orNone(ev.Model), ev.MaxSteps)
		if ev.Engine != nil {
			fmt.Fprintf(w, "engine:   %s\n", ev.Engine)
		}
	case loop.EvStepStarted:
		t.screen = ev.Screen
		fmt.Fprintf(w, "\nstep %d/%d", ev.Step, t.max)
		if s := ev.Screen; s != nil {
			if s.App != "" {
				fmt.Fprintf(w, "  %s", s.App)
			}
			fmt.Fprintf(w, "  (%d elements)", len(s.Elements))
		} else {
			fmt.Fprint(w, "  (screen unreadable)")
		}
		fmt.Fprintln(w)
		if t.Elements && ev.Screen != nil {
			for _, line := range strings.Split(strings.TrimRight(ev.Screen.Prompt, "\n"), "\n") {
				fmt.Fprintf(w, "%s%s\n", indent, line)
			}
		}
	case loop.EvModelStats:
		if s := ev.Stats; s != nil {
			fmt.Fprintf(w, "  model:    %d prompt tokens, %d generated", s.PromptTokens, s.GeneratedTokens)
			if s.TokensPerSecond > 0 {
				fmt.Fprintf(w, ", %.1f tok/s", s.TokensPerSecond)
			}
			fmt.Fprintln(w)
		}
	case loop.EvToolCall:
		if ev.Call == nil {
			errs := "no tool call"
			if ev.Parse != nil && len(ev.Parse.Errors) > 0 {
				errs = strings.Join(ev.Parse.Errors, "; ")
			}
			fmt.Fprintf(w, "  call:     none (%s)\n", errs)
			break
		}
		fmt.Fprintf(w, "  call:     %s", ev.Call.String())
		if p := ev.Parse; p != nil {
			if p.Format != "" && p.Format != "native" {
				fmt.Fprintf(w, "  [%s]", p.Format)
			}
			if len(p.Recoveries) > 0 {
				fmt.Fprintf(w, "  (recovered: %s)", strings.Join(p.Recoveries, "; "))
			}
		}
		fmt.Fprintln(w)
	case loop.EvVote:
		if v := ev.Vote; v != nil {
			fmt.Fprintf(w, "  vote:     %s\n", v.Summary())
		}
	case loop.EvApproval:
		fmt.Fprintf(w, "  approval: %s%s waits for approval: %s\n", callText(ev), t.label(ev.Element), ev.Text)
	case loop.EvAction:
		fmt.Fprintf(w, "  action:   %s%s", callText(ev), t.label(ev.Element))
		if ev.Detail != "" {
			fmt.Fprintf(w, " -> %s", ev.Detail)
		}
		if ev.Error != "" {
			fmt.Fprintf(w, "  ERROR: %s", ev.Error)
		}
		fmt.Fprintln(w)
	case loop.EvScreenChange:
		if ev.Changed != nil && *ev.Changed {
			fmt.Fprint(w, "  screen:   changed")
		} else {
			fmt.Fprint(w, "  screen:   did not change")
		}
		if ev.Detail != "" {
			fmt.Fprintf(w, " (%s)", ev.Detail)
		}
		fmt.Fprintln(w)
	case loop.EvWarning:
		fmt.Fprintf(w, "  warning:  %s\n", ev.Text)
	case loop.EvFinished:
		r := ev.Result
		if r == nil {
			fmt.Fprintln(w, "\nresult:   unknown")
			break
		}
		fmt.Fprintf(w, "\nresult:   %s\n          %s in %.1f s\n", Verdict(*r), loop.Steps(r.Steps), r.Seconds)
	}
}

// Verdict says how a run ended in one line: `SUCCESS: task_complete
// ("Wi-Fi is on")`, `FAILURE: step budget exhausted: ...`.
func Verdict(r loop.Result) string {
	v := "FAILURE: " + r.Reason
	if r.Success {
		v = "SUCCESS: " + r.Reason
	}
	if r.Summary != "" {
		v += fmt.Sprintf(" (%q)", r.Summary)
	}
	return v
}

func (t *Text) token(ev loop.Event) {
	if t.mode != ev.Type {
		t.endTokens()
		t.mode = ev.Type
		if ev.Type == loop.EvThinking {
			fmt.Fprint(t.w, "  thinking: ")
		} else {
			fmt.Fprint(t.w, "  answer:   ")
		}
		ev.Text = strings.TrimLeft(ev.Text, " \n")
	}
	fmt.Fprint(t.w, strings.ReplaceAll(ev.Text, "\n", "\n"+indent))
}

func (t *Text) endTokens() {
	if t.mode != "" {
		fmt.Fprintln(t.w)
		t.mode = ""
	}
}

func (t *Text) label(el *int) string {
	if el == nil || t.screen == nil {
		return ""
	}
	for _, e := range t.screen.Elements {
		if e.Index == *el && e.Label != "" {
			return fmt.Sprintf(" %q", e.Label)
		}
	}
	return ""
}

func callText(ev loop.Event) string {
	if ev.Call == nil {
		return "?"
	}
	return ev.Call.String()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JSON writes one JSON object per event and line. Prompts, hold points and
// raw screen XML are left out (recordings keep them); everything else is
// the event as the loop emitted it.
type JSON struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewJSON returns a JSON-lines printer writing to w. Characters a
// terminal would act on are written as escapes, as the lines are often
// read on one.
func NewJSON(w io.Writer) *JSON {
	enc := json.NewEncoder(termsafe.NewJSONWriter(w)) // one Write per event: nothing is left pending
	enc.SetEscapeHTML(false)
	return &JSON{enc: enc}
}

// Event writes ev.
func (j *JSON) Event(ev loop.Event) {
	if ev.Type == loop.EvPrompt || ev.Type == loop.EvHold {
		return
	}
	if ev.Screen != nil && ev.Screen.XML != "" {
		s := *ev.Screen
		s.XML = ""
		ev.Screen = &s
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.enc.Encode(ev); err != nil && j.err == nil {
		j.err = err
	}
}

// Consume writes ev and returns the first write error: a consumer for
// sink.New.
func (j *JSON) Consume(ev loop.Event) error {
	j.Event(ev)
	return j.Err()
}

// Err reports the first write error.
func (j *JSON) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}
