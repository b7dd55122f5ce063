package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// sse streams an answer as server-sent events: chat.completion.chunk
// objects, then "data: [DONE]". The headers go out with the first event,
// or with the first keep-alive comment while the request waits for a slot
// or its prefill; until then an error can still be a plain HTTP status.
type sse struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	cancel context.CancelFunc // ends the request when a write fails

	mu      sync.Mutex
	started bool
	last    time.Time
	err     error
	head    bool // the chunk with the role was sent
	id      string
	created int64
	model   string

	quit chan struct{}
	once sync.Once
}

func newSSE(w http.ResponseWriter, cancel context.CancelFunc, keepAlive time.Duration) *sse {
	e := &sse{w: w, rc: http.NewResponseController(w), cancel: cancel, quit: make(chan struct{}), last: time.Now()}
	go e.keepAlive(keepAlive)
	return e
}

// keepAlive sends a comment whenever nothing was sent for interval.
func (e *sse) keepAlive(interval time.Duration) {
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-t.C:
			e.mu.Lock()
			if e.err == nil && time.Since(e.last) >= interval {
				e.write(": keep-alive\n\n")
			}
			e.mu.Unlock()
		}
	}
}

func (e *sse) stop() { e.once.Do(func() { close(e.quit) }) }

// write sends raw text; e.mu is held.
func (e *sse) write(text string) error {
	if e.err != nil {
		return e.err
	}
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
	}
	e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := e.w.Write([]byte(text))
	if err == nil {
		err = e.rc.Flush()
	}
	if err != nil {
		e.err = err
		e.cancel()
	}
	e.last = time.Now()
	return err
}

// event sends one data event; e.mu is held.
func (e *sse) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.write("data: " + string(b) + "\n\n")
}

// chunk sends one chunk with delta d; e.mu is held.
func (e *sse) chunk(d *wireDelta, finish *string) error {
	if !e.head {
		e.head = true
		empty := ""
		if err := e.chunk(&wireDelta{Role: "assistant", Content: &empty}, nil); err != nil {
			return err
		}
	}
	return e.event(wireCompletion{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model,
		Choices: []wireChoice{{Delta: d, FinishReason: finish}}})
}

// begin names the completion the chunks belong to.
func (e *sse) begin(id string, created int64, model string) {
	e.mu.Lock()
	e.id, e.created, e.model = id, created, model
	e.mu.Unlock()
}

func (e *sse) reasoning(text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.chunk(&wireDelta{Reasoning: &text}, nil)
}

func (e *sse) content(text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.chunk(&wireDelta{Content: &text}, nil)
}

// finish sends the calls, the finish reason, the usage when asked for, and
// [DONE].
func (e *sse) finish(_ http.ResponseWriter, rl *reqLog, a wireCompletion) {
	e.stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := a.Choices[0]
	for i, c := range ch.Message.ToolCalls {
		c.Index = &i
		e.chunk(&wireDelta{ToolCalls: []wireCall{c}}, nil)
	}
	e.chunk(&wireDelta{}, ch.FinishReason)
	if a.Usage != nil {
		e.event(wireCompletion{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model, Choices: []wireChoice{}, Usage: a.Usage})
	}
	e.write("data: [DONE]\n\n")
	status := http.StatusOK
	rl.done(status, a)
	if e.err != nil {
		rl.mu.Lock()
		rl.err = "the client went away before the end of the answer: " + e.err.Error()
		rl.mu.Unlock()
	}
}

// abort ends the stream with an error: a plain HTTP error before anything
// was sent, else an error event (the client's SDK raises it).
func (e *sse) abort(w http.ResponseWriter, rl *reqLog, status int, code, msg string) {
	e.stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	rl.mu.Lock()
	rl.err = msg
	if e.started {
		rl.status = http.StatusOK
		if status == 499 {
			rl.finish = "cancelled"
		}
	} else {
		rl.status = status
	}
	rl.mu.Unlock()
	if status == 499 {
		return // nobody is listening
	}
	if !e.started {
		e.started = true
		writeJSON(w, status, errorBody(status, code, msg))
		return
	}
	e.event(errorBody(status, code, msg))
}

// stopper cuts the answer at the first stop string. It holds back the end
// of the text that could be the start of one (never splitting a
// character), so no part of a stop string is ever sent.
type stopper struct {
	stops []string
	held  string
	hit   bool
	keep  int
}

func newStopper(stops []string) *stopper {
	k := 0
	for _, s := range stops {
		k = max(k, len(s)-1)
	}
	return &stopper{stops: stops, keep: k}
}

// feed takes more answer text and returns what may be sent now.
func (s *stopper) feed(text string) string {
	if len(s.stops) == 0 {
		return text
	}
	s.held += text
	at := -1
	for _, st := range s.stops {
		if i := strings.Index(s.held, st); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at >= 0 {
		out := s.held[:at]
		s.held, s.hit = "", true
		return out
	}
	cut := max(0, len(s.held)-s.keep)
	for cut > 0 && cut < len(s.held) && !utf8.RuneStart(s.held[cut]) {
		cut--
	}
	out := s.held[:cut]
	s.held = s.held[cut:]
	return out
}

// flush returns what is held at the end of the answer.
func (s *stopper) flush() string {
	out := s.held
	s.held = ""
	return out
}
