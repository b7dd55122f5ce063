package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/toolparse"
)

// The answer's wire shapes (OpenAI's chat.completion and
// chat.completion.chunk).
type (
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireCall struct {
		Index    *int         `json:"index,omitempty"`
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireMessage struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		Reasoning *string    `json:"reasoning_content,omitempty"`
		ToolCalls []wireCall `json:"tool_calls,omitempty"`
	}
	wireDelta struct {
		Role      string     `json:"role,omitempty"`
		Content   *string    `json:"content,omitempty"`
		Reasoning *string    `json:"reasoning_content,omitempty"`
		ToolCalls []wireCall `json:"tool_calls,omitempty"`
	}
	wireChoice struct {
		Index        int          `json:"index"`
		Message      *wireMessage `json:"message,omitempty"`
		Delta        *wireDelta   `json:"delta,omitempty"`
		Logprobs     *struct{}    `json:"logprobs"`
		FinishReason *string      `json:"finish_reason"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		PromptDetails    struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	wireCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *wireUsage   `json:"usage,omitempty"`
	}
)

// Finish reasons.
const (
	finishStop      = "stop"
	finishLength    = "length"
	finishToolCalls = "tool_calls"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodPost) {
		return
	}
	req, err := s.readRequest(w, r)
	if err != nil {
		var br *badRequest
		if !errors.As(err, &br) {
			br = &badRequest{code: "invalid_request", msg: err.Error()}
		}
		logOf(r).fail(w, br.statusOr(http.StatusBadRequest), br.code, br.msg)
		return
	}
	s.serveChat(w, r, req)
}

// readRequest reads and checks a request body. Few are read at once: a
// crowd of clients sending large bodies is turned away, not buffered.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request) (*request, error) {
	select {
	case s.reading <- struct{}{}:
		defer func() { <-s.reading }()
	default:
		w.Header().Set("Retry-After", "1")
		return nil, &badRequest{status: http.StatusTooManyRequests, code: "queue_full", msg: fmt.Sprintf("the server is busy: %d requests are being read", cap(s.reading))}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &badRequest{status: http.StatusRequestEntityTooLarge, code: "request_too_large", msg: fmt.Sprintf("the request body is larger than %d bytes (droidgo serve --max-body)", s.cfg.MaxBody)}
	case err != nil:
		return nil, bad("could not read the request body: %v", err)
	}
	return s.parseRequest(body)
}

// serveChat generates the answer of a checked request.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, req *request) {
	rl := logOf(r)
	rl.mu.Lock()
	rl.stream = req.stream
	rl.mu.Unlock()

	ok, retry := s.admit()
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((retry+time.Second-1)/time.Second))))
		rl.fail(w, http.StatusTooManyRequests, "queue_full", fmt.Sprintf("the server is busy: %d requests are generating and %d waiting, its limit (droidgo serve --parallel, --queue); try again later", s.cfg.Parallel, s.cfg.Queue))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := "chatcmpl-" + randomHex(12)
	created := s.cfg.Now().Unix()
	var out sink
	if req.stream {
		e := newSSE(w, cancel, s.cfg.KeepAlive)
		e.begin(id, created, s.cfg.ModelID)
		out = e
	} else {
		out = &whole{}
	}
	defer out.stop()

	t0 := s.cfg.Now()
	if err := s.acquire(ctx); err != nil {
		rl.mu.Lock()
		rl.queued = s.cfg.Now().Sub(t0)
		rl.mu.Unlock()
		out.abort(w, rl, 499, "cancelled", "the client went away while its request waited")
		return
	}
	rl.mu.Lock()
	rl.queued = s.cfg.Now().Sub(t0)
	rl.mu.Unlock()
	t1 := s.cfg.Now()
	res, err := s.generate(ctx, req, out, rl)
	s.release(s.cfg.Now().Sub(t1))
	if err != nil {
		switch {
		case ctx.Err() != nil:
			out.abort(w, rl, 499, "cancelled", "the client went away; generation stopped")
		case errors.Is(err, model.ErrPromptTooLong):
			out.abort(w, rl, http.StatusBadRequest, "context_length_exceeded", err.Error())
		default:
			out.abort(w, rl, http.StatusInternalServerError, "generation_failed", "generation failed: "+err.Error())
		}
		return
	}
	out.finish(w, rl, s.answer(id, created, req, res))
}

// result is one generated turn, parsed.
type result struct {
	reasoning string
	content   string // what goes out as content: the answer, or its prose around the calls
	calls     []action.Call
	tools     []action.Tool
	finish    string
	stats     model.Stats
}

// sink is where a turn's text goes as it is generated: an SSE stream or
// the whole answer at the end.
type sink interface {
	// reasoning and content send text as it comes (a whole answer keeps
	// it); they fail when the client is gone.
	reasoning(text string) error
	content(text string) error
	// finish sends the end of the answer, abort an error instead.
	finish(w http.ResponseWriter, rl *reqLog, a wireCompletion)
	abort(w http.ResponseWriter, rl *reqLog, status int, code, msg string)
	stop()
}

// generate runs the backend and streams the turn into out. Content is held
// back while the answer may hold calls (tools offered), and cut at a stop
// string.
func (s *Server) generate(ctx context.Context, req *request, out sink, rl *reqLog) (*result, error) {
	st, err := s.cfg.Backend.Chat(ctx, req.chat)
	if err != nil {
		return nil, err
	}
	// A backend blocked in Next learns of a client that went away.
	stopClose := context.AfterFunc(ctx, func() { st.Close() })
	defer stopClose()
	defer st.Close()
	defer func() {
		rl.mu.Lock()
		rl.stats, rl.counted = st.Stats(), true
		rl.mu.Unlock()
	}()
	var reasoning, answer strings.Builder
	var backendCalls []action.Call
	closed := false
	cut := newStopper(req.stops)
	stopped := false
	firstText := func() {
		rl.mu.Lock()
		if rl.first == 0 {
			rl.first = s.cfg.Now().Sub(rl.start)
		}
		rl.mu.Unlock()
	}
	for !stopped {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if d.Reasoning != "" {
			firstText()
			reasoning.WriteString(d.Reasoning)
			if err := out.reasoning(d.Reasoning); err != nil {
				return nil, err
			}
		}
		if d.ReasoningClosed {
			closed = true
		}
		if d.Content != "" {
			firstText()
			text := cut.feed(d.Content)
			stopped = cut.hit
			answer.WriteString(text)
			if !req.parse && text != "" {
				if err := out.content(text); err != nil {
					return nil, err
				}
			}
		}
		backendCalls = append(backendCalls, d.ToolCalls...)
	}
	if !stopped {
		rest := cut.flush()
		answer.WriteString(rest)
		if !req.parse && rest != "" {
			if err := out.content(rest); err != nil {
				return nil, err
			}
		}
	}
	res := &result{reasoning: reasoning.String(), stats: st.Stats(), finish: finishStop}
	if !stopped && res.stats.GeneratedTokens >= req.chat.MaxTokens {
		res.finish = finishLength
	}
	res.content = answer.String()
	if req.parse {
		s.findCalls(req, res, closed, backendCalls)
		if !req.stream {
			return res, nil
		}
		if res.content != "" {
			if err := out.content(res.content); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// findCalls recovers the answer's calls with droidgo's parser. When it
// finds usable calls, they are the answer (with any prose around them as
// content); when it finds none, the raw answer is the content, for the
// client to read.
func (s *Server) findCalls(req *request, res *result, closed bool, backendCalls []action.Call) {
	all := make([]action.Tool, len(req.tools))
	for i, t := range req.tools {
		all[i] = t.action
	}
	res.tools = all
	var calls []action.Call
	prose := res.content
	if len(backendCalls) > 0 {
		for _, c := range backendCalls {
			if cc, _, err := toolparse.Coerce(c, all); err == nil {
				calls = append(calls, cc)
			}
		}
	} else {
		p := toolparse.ParseTurn(res.reasoning, res.content, closed || res.content != "", toolparse.Options{Tools: all})
		calls, prose = p.Calls, p.Content
	}
	if len(calls) == 0 {
		return
	}
	for i, c := range calls {
		for _, t := range req.tools {
			if t.action.Name == c.Name {
				calls[i] = t.restore(c)
			}
		}
	}
	res.calls, res.content, res.finish = calls, prose, finishToolCalls
}

// answer builds the final chat.completion of a turn (a stream sends its
// tail).
func (s *Server) answer(id string, created int64, req *request, res *result) wireCompletion {
	finish := res.finish
	msg := &wireMessage{Role: model.RoleAssistant}
	if res.content != "" || len(res.calls) == 0 {
		msg.Content = &res.content
	}
	if res.reasoning != "" {
		msg.Reasoning = &res.reasoning
	}
	for _, c := range res.calls {
		msg.ToolCalls = append(msg.ToolCalls, wireCall{ID: "call_" + randomHex(12), Type: "function",
			Function: wireFunction{Name: c.Name, Arguments: argumentsJSON(c, res.tools)}})
	}
	u := &wireUsage{PromptTokens: res.stats.PromptTokens, CompletionTokens: res.stats.GeneratedTokens}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptDetails.CachedTokens = res.stats.CachedTokens
	u.CompletionDetails.ReasoningTokens = res.stats.ThinkTokens
	if req.stream && !req.includeUsage {
		u = nil
	}
	return wireCompletion{ID: id, Object: "chat.completion", Created: created, Model: s.cfg.ModelID,
		Choices: []wireChoice{{Message: msg, FinishReason: &finish}}, Usage: u}
}

// argumentsJSON writes a call's arguments in the order the tool declares
// its parameters.
func argumentsJSON(c action.Call, tools []action.Tool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range c.OrderedKeys(tools) {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(c.Arguments[k])
		if err != nil {
			vb = []byte("null")
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// whole is the sink of a request answered in one JSON object.
type whole struct{}

func (*whole) reasoning(string) error { return nil }
func (*whole) content(string) error   { return nil }
func (*whole) stop()                  {}

func (*whole) finish(w http.ResponseWriter, rl *reqLog, a wireCompletion) {
	writeJSON(w, http.StatusOK, a)
	rl.done(http.StatusOK, a)
}

func (*whole) abort(w http.ResponseWriter, rl *reqLog, status int, code, msg string) {
	if status != 499 {
		writeJSON(w, status, errorBody(status, code, msg))
	}
	rl.mu.Lock()
	rl.status, rl.err = status, msg
	rl.mu.Unlock()
}

// done records a finished answer.
func (rl *reqLog) done(status int, a wireCompletion) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.status = status
	if len(a.Choices) > 0 && a.Choices[0].FinishReason != nil {
		rl.finish = *a.Choices[0].FinishReason
	}
}
