package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/toolparse"
)

// turn is one generated assistant turn.
type turn struct {
	reasoning string
	closed    bool // the reasoning was closed (by the model or the budget)
	content   string
	calls     []action.Call // calls the backend parsed itself
	stats     model.Stats
	// retryNoThink is set when the thinking budget ran out and the
	// backend could not close the reasoning in-stream.
	retryNoThink bool
}

// raw writes the turn out as the model's output text, for ParseInfo.Raw
// (recordings and `droidgo parse` read it back whole).
func (t turn) raw(think bool) string {
	if !think {
		return t.content
	}
	// Content from a backend is its answer even when it did not mark the
	// end of the reasoning.
	if t.closed || t.content != "" {
		return t.reasoning + "</think>" + t.content
	}
	return t.reasoning
}

// decide asks the model for this step's call: one turn, and one corrective
// turn when the first has no usable call. A nil call with a nil error is a
// failed step.
func (r *runner) decide(ctx context.Context) (*action.Call, error) {
	msgs := r.messages()
	r.notes = nil
	r.emit(Event{Type: EvPrompt, Messages: msgs})

	call, problems, answer, err := r.askRetrying(ctx, msgs)
	if err != nil || call != nil {
		return call, err
	}
	r.warn("no usable tool call in the answer; asking once more")
	if err := r.hold(ctx, HoldTurn); err != nil {
		return nil, err
	}
	// The failed answer goes back without its reasoning: the template
	// drops past reasoning anyway, and the prompt stays short.
	answer = strings.TrimSpace(answer)
	if answer == "" {
		answer = "(no answer after the reasoning)"
	}
	msgs = append(msgs,
		model.Message{Role: model.RoleAssistant, Content: echoAnswer(answer)},
		model.Message{Role: model.RoleUser, Content: r.corrective(problems)})
	r.emit(Event{Type: EvPrompt, Messages: msgs})
	call, _, _, err = r.askRetrying(ctx, msgs)
	return call, err
}

// streamError is a model stream that broke off mid-turn.
type streamError struct{ err error }

func (e *streamError) Error() string { return "model: " + e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

// askRetrying is ask, with a turn whose stream broke off asked again
// StreamRetries times with a doubling backoff; after that the error ends
// the run (its recording is kept: the loop still emits EvFinished).
func (r *runner) askRetrying(ctx context.Context, msgs []model.Message) (*action.Call, []string, string, error) {
	wait := r.cfg.StreamBackoff
	for attempt := 0; ; attempt++ {
		call, problems, answer, err := r.ask(ctx, msgs)
		var se *streamError
		if err == nil || !errors.As(err, &se) || ctx.Err() != nil {
			return call, problems, answer, err
		}
		if attempt >= r.cfg.StreamRetries {
			if attempt > 0 {
				err = fmt.Errorf("%w (the turn was tried %d times)", err, attempt+1)
			}
			return nil, nil, "", err
		}
		r.warn(fmt.Sprintf("the model's stream failed (%v); asking again in %s (retry %d of %d)", se.err, wait, attempt+1, r.cfg.StreamRetries))
		if err := r.cfg.Sleep(ctx, wait); err != nil {
			return nil, nil, "", err
		}
		wait *= 2
	}
}

// maxEcho bounds the failed answer sent back in the corrective turn, in
// bytes: enough for any call the model meant to write, and a runaway
// answer (a server that ignored max_tokens) does not grow the request.
const maxEcho = 2048

// echoAnswer returns answer cut to maxEcho bytes at a character boundary,
// saying so.
func echoAnswer(answer string) string {
	if len(answer) <= maxEcho {
		return answer
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(answer[cut]) {
		cut--
	}
	return answer[:cut] + fmt.Sprintf(" [… %d more bytes cut]", len(answer)-cut)
}

// ask runs one turn (twice when the thinking budget forces thinking off)
// and parses it; with Config.Vote, several chains vote (askVote). problems
// says why no call came out; answer is the text after the reasoning.
func (r *runner) ask(ctx context.Context, msgs []model.Message) (call *action.Call, problems []string, answer string, err error) {
	if r.cfg.Vote > 1 {
		return r.askVote(ctx, msgs)
	}
	t, think, err := r.turnOf(ctx, msgs, chain{sampling: r.cfg.Sampling, show: true, stats: true})
	if err != nil {
		return nil, nil, "", err
	}
	calls, info := r.parsed(t, think)
	if len(calls) == 0 {
		r.emit(Event{Type: EvToolCall, Parse: info})
		return nil, info.Errors, t.content, nil
	}
	c := calls[0]
	r.emit(Event{Type: EvToolCall, Call: &c, Parse: info})
	return &c, nil, t.content, nil
}

// chain says how one turn is generated: its sampling, whether its tokens
// and warnings are shown (show) and whether its statistics are (a vote
// shows the first chain's tokens and the statistics of all chains).
type chain struct {
	sampling    model.Sampling
	show, stats bool
}

// turnOf generates one turn, and again with thinking off when the backend
// could not close the reasoning at its budget; think says whether the turn
// that counts had thinking on.
func (r *runner) turnOf(ctx context.Context, msgs []model.Message, ch chain) (t turn, think bool, err error) {
	think = r.cfg.Think
	t, err = r.generate(ctx, msgs, think, ch)
	if err != nil {
		return turn{}, false, err
	}
	if t.retryNoThink {
		if ch.show {
			r.warn("the backend cannot close the reasoning; asking again with thinking off")
		}
		think = false
		if t, err = r.generate(ctx, msgs, false, ch); err != nil {
			return turn{}, false, err
		}
	}
	return t, think, nil
}

// parsed recovers a turn's calls, coerced to the tools, with how they were
// found. The calls are the usable ones, in order; the first counts.
func (r *runner) parsed(t turn, think bool) ([]action.Call, *ParseInfo) {
	raw := t.raw(think)
	info := &ParseInfo{Raw: raw}
	var calls, refused []action.Call
	if len(t.calls) > 0 {
		// Calls a server parsed itself are checked and coerced like ours.
		info.Format = "backend"
		for _, c := range t.calls {
			fixed, rec, err := toolparse.Coerce(c, r.cfg.Tools)
			info.Recoveries = append(info.Recoveries, rec...)
			if err != nil {
				info.Errors = append(info.Errors, err.Error())
				if _, known := action.Lookup(r.cfg.Tools, fixed.Name); known {
					refused = append(refused, fixed)
				}
				continue
			}
			calls = append(calls, fixed)
		}
	} else {
		opts := toolparse.Options{Tools: r.cfg.Tools}
		var res toolparse.Result
		if think {
			// The backend split the reasoning from the answer as they
			// streamed; they are parsed as the parts they are.
			res = toolparse.ParseTurn(t.reasoning, t.content, t.closed, opts)
		} else {
			// With thinking off the answer is the whole output, which
			// the backend did not split.
			res = toolparse.Parse(t.content, opts)
		}
		calls, refused = res.Calls, res.Refused
		info.Format = string(res.Format)
		info.Recoveries = res.Recoveries
		info.Errors = res.Errors
	}
	if len(calls) == 0 {
		if len(info.Errors) == 0 {
			info.Errors = []string{"no tool call found"}
		}
		if info.Format == "" {
			info.Format = string(toolparse.FormatNone)
		}
		if len(refused) > 0 {
			info.Refused = &refused[0]
		}
		return nil, info
	}
	if len(calls) > 1 {
		info.Recoveries = append(info.Recoveries, fmt.Sprintf("kept the first of %d calls", len(calls)))
	}
	if calls[0].Arguments == nil {
		calls[0].Arguments = map[string]any{}
	}
	return calls, info
}

// generate streams one turn, emitting its tokens and statistics as ch
// says, and enforces the thinking budget.
func (r *runner) generate(ctx context.Context, msgs []model.Message, think bool, ch chain) (turn, error) {
	req := model.ChatRequest{
		Messages:  msgs,
		Tools:     r.cfg.Tools,
		Think:     think,
		MaxTokens: r.cfg.MaxTokens,
		Sampling:  ch.sampling,
		Constrain: r.cfg.Constrain,
	}
	if r.screen != nil {
		for _, e := range r.screen.Elements {
			req.ValidIndices = append(req.ValidIndices, e.Index)
		}
	}
	st, err := r.cfg.Model.Chat(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return turn{}, ctx.Err()
		}
		return turn{}, fmt.Errorf("model: %w", err)
	}
	defer st.Close()

	var t turn
	var reasoning, content strings.Builder
	thinkTokens := 0
	closing := false
	for {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return turn{}, ctx.Err()
			}
			return turn{}, &streamError{err}
		}
		if d.Reasoning != "" {
			reasoning.WriteString(d.Reasoning)
			thinkTokens++
			if ch.show {
				r.emit(Event{Type: EvThinking, Text: d.Reasoning})
			}
		}
		if d.ReasoningClosed {
			t.closed = true
		}
		if d.Content != "" {
			content.WriteString(d.Content)
			if ch.show {
				r.emit(Event{Type: EvAnswer, Text: d.Content})
			}
		}
		t.calls = append(t.calls, d.ToolCalls...)
		// A delta is usually one token; a backend that batches tokens
		// still counts them in its stats, and until the reasoning closes
		// every generated token is a reasoning token.
		if think && !t.closed && !closing && r.cfg.ThinkBudget > 0 &&
			max(thinkTokens, st.Stats().GeneratedTokens) >= r.cfg.ThinkBudget {
			closing = true
			err := st.CloseReasoning()
			switch {
			case err == nil:
				if ch.show {
					r.warn(fmt.Sprintf("thinking reached the budget of %d tokens; closing the reasoning", r.cfg.ThinkBudget))
				}
			case errors.Is(err, model.ErrUnsupported):
				t.stats = st.Stats()
				if ch.stats {
					r.emitStats(t.stats)
				}
				t.reasoning = reasoning.String()
				t.retryNoThink = true
				return t, nil
			default:
				return turn{}, fmt.Errorf("model: close reasoning: %w", err)
			}
		}
	}
	t.reasoning = reasoning.String()
	t.content = content.String()
	t.stats = st.Stats()
	if ch.stats {
		r.emitStats(t.stats)
	}
	if t.stats.Stopped != "" && ch.show {
		r.warn(t.stats.Stopped)
	}
	return t, nil
}

func (r *runner) emitStats(s model.Stats) {
	r.emit(Event{Type: EvModelStats, Stats: &StatsInfo{
		PromptTokens:    s.PromptTokens,
		CachedTokens:    s.CachedTokens,
		GeneratedTokens: s.GeneratedTokens,
		PrefillMS:       float64(s.Prefill.Microseconds()) / 1000,
		DecodeMS:        float64(s.Decode.Microseconds()) / 1000,
		TokensPerSecond: s.DecodeRate(),
	}})
}
