// Package server serves a model.Backend over the OpenAI chat-completions
// API, the dialect model/openai reads: POST /v1/chat/completions, streamed
// as server-sent events or answered whole, GET /v1/models and GET /health.
// `droidgo serve` runs it over the in-process engine, so that any harness
// (and droidgo's own --endpoint client) can use it.
//
// A request's messages and tools are rendered with the chat template
// exactly as the client sent them (key order, whole schemas, content
// parts), as vLLM does. When tools are offered, the answer is produced
// under the answer constraint (one well-formed call of the offered tools)
// and its calls are recovered by droidgo's own parser (toolparse) and
// returned as tool_calls; the reasoning streams as reasoning_content, as
// vLLM and SGLang send it.
//
// Every limit has a clear answer: a body over MaxBody is 413, max_tokens
// over MaxTokens is 400, a request past Parallel running and Queue waiting
// is 429 with Retry-After, a missing or wrong key is 401. A client that
// goes away cancels its request's context, which stops its generation at
// once. Each request ends in one log line.
package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/model"
)

// Defaults of Config's limits.
const (
	// DefaultMaxBody bounds a request body: a phone agent's request is a
	// few tens of kilobytes; a long conversation with many tools a few
	// hundred.
	DefaultMaxBody = 4 << 20
	// DefaultMaxTokens is the max_tokens of a request that gives none,
	// and the most one may ask for.
	DefaultMaxTokens = 4096
	// DefaultKeepAlive is the interval of the SSE comments sent while a
	// streamed request waits (for a slot, for its prefill), so that
	// clients' header and idle timeouts do not fire.
	DefaultKeepAlive = 15 * time.Second
	// writeTimeout bounds one write to a client: one that stops reading
	// must not hold a slot for ever.
	writeTimeout = 30 * time.Second
)

// Config configures a Server.
type Config struct {
	// Backend generates the turns. It must allow Parallel concurrent
	// Chat calls (a backend that serves one at a time makes the others
	// wait inside Chat).
	Backend model.Backend
	// ModelID is the model's name in /v1/models and in answers; a
	// request naming another model is refused. Empty: the backend's
	// name after its "scheme:".
	ModelID string
	// APIKey, when set, must come with every /v1 request as
	// "Authorization: Bearer KEY".
	APIKey string
	// Parallel is how many requests generate at once (default 1), Queue
	// how many more may wait for a turn (default 4 x Parallel); past
	// that a request is answered 429.
	Parallel, Queue int
	// MaxBody bounds a request body in bytes (default DefaultMaxBody).
	MaxBody int64
	// MaxTokens is the default and the upper bound of a request's
	// max_tokens (default DefaultMaxTokens).
	MaxTokens int
	// Constrain produces the answer under the constraint whenever tools
	// are offered and tool_choice is "auto" (the default); "required"
	// and a named tool are always constrained, "none" never.
	Constrain bool
	// Sampling holds the temperature, top_p, top_k and min_p of a request
	// that gives none. A request without a seed gets a random one.
	Sampling model.Sampling
	// Log receives one line per request; nil drops them.
	Log func(line string)
	// KeepAlive is the interval of SSE comments while a stream waits
	// (default DefaultKeepAlive).
	KeepAlive time.Duration
	// Now is the clock of answers and logs (nil: time.Now).
	Now func() time.Time
}

// Server answers OpenAI chat-completion requests with one backend. It is
// an http.Handler; Serve runs it on a listener.
type Server struct {
	cfg     Config
	created int64
	mux     *http.ServeMux
	slots   chan struct{}
	// reading bounds the request bodies being read and parsed at once,
	// so that many clients sending large bodies cannot take the memory.
	reading chan struct{}

	mu       sync.Mutex
	admitted int           // running and waiting
	avg      time.Duration // moving average of a generation's length
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("no model backend")
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.Queue < 0 {
		return nil, fmt.Errorf("queue length %d is negative", cfg.Queue)
	}
	if cfg.Queue == 0 {
		cfg.Queue = 4 * cfg.Parallel
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ModelID == "" {
		name := cfg.Backend.Name()
		if _, rest, ok := strings.Cut(name, ":"); ok && rest != "" {
			name = rest
		}
		cfg.ModelID = name
	}
	s := &Server{cfg: cfg, created: cfg.Now().Unix(), slots: make(chan struct{}, cfg.Parallel),
		reading: make(chan struct{}, max(16, 2*(cfg.Parallel+cfg.Queue)))}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/health", s.health)
	s.mux.HandleFunc("/v1/models", s.auth(s.models))
	s.mux.HandleFunc("/v1/models/{id}", s.auth(s.model))
	s.mux.HandleFunc("/v1/chat/completions", s.auth(s.chat))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rl := logOf(r)
		rl.fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such endpoint %s; this server has POST /v1/chat/completions, GET /v1/models and GET /health", r.URL.Path))
	})
	return s, nil
}

// ModelID returns the name the server serves its model under.
func (s *Server) ModelID() string { return s.cfg.ModelID }

// ServeHTTP answers one request and logs it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rl := &reqLog{start: s.cfg.Now(), now: s.cfg.Now, method: r.Method, path: r.URL.Path, remote: r.RemoteAddr}
	r = r.WithContext(context.WithValue(r.Context(), logKey{}, rl))
	s.mux.ServeHTTP(w, r)
	if s.cfg.Log != nil {
		s.cfg.Log(rl.line())
	}
}

// Serve answers requests on ln until ctx ends, then stops accepting, ends
// the requests in progress (their clients get what was sent so far) and
// returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	hs := &http.Server{
		Handler: s,
		// Headers and bodies are small and come at once; a client that
		// trickles them holds a connection, not a slot.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		// The HTTP server's own complaints (a malformed request line, a
		// handler's panic) go where the request lines go.
		ErrorLog: log.New(logWriter{s.cfg.Log}, "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	cancel() // ends the generations in progress
	sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-done
	return nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	s.mu.Lock()
	admitted := s.admitted
	s.mu.Unlock()
	running := len(s.slots)
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "model": s.cfg.ModelID,
		"running": running, "waiting": max(0, admitted-running),
		"parallel": s.cfg.Parallel, "queue": s.cfg.Queue,
	})
	logOf(r).status = http.StatusOK
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) info() modelInfo {
	return modelInfo{ID: s.cfg.ModelID, Object: "model", Created: s.created, OwnedBy: "droidgo"}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelInfo{s.info()}})
	logOf(r).status = http.StatusOK
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	if id := r.PathValue("id"); id != s.cfg.ModelID {
		logOf(r).fail(w, http.StatusNotFound, "model_not_found", fmt.Sprintf("the model %q is not served here; this server serves %q", id, s.cfg.ModelID))
		return
	}
	writeJSON(w, http.StatusOK, s.info())
	logOf(r).status = http.StatusOK
}

// auth refuses a /v1 request without the server's key.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.APIKey == "" {
		return h
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if got == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="droidgo"`)
			logOf(r).fail(w, http.StatusUnauthorized, "invalid_api_key", "this server needs an API key: send the header \"Authorization: Bearer KEY\"")
			return
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="droidgo", error="invalid_token"`)
			logOf(r).fail(w, http.StatusUnauthorized, "invalid_api_key", "the API key is not the one this server was started with")
			return
		}
		h(w, r)
	}
}

// allow answers 405 to a method other than want.
func allow(w http.ResponseWriter, r *http.Request, want string) bool {
	if r.Method == want {
		return true
	}
	w.Header().Set("Allow", want)
	logOf(r).fail(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, want, r.Method))
	return false
}

// admit counts a request in, unless Parallel are running and Queue
// waiting; it then returns how long the client should wait.
func (s *Server) admit() (ok bool, retry time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admitted < s.cfg.Parallel+s.cfg.Queue {
		s.admitted++
		return true, 0
	}
	// The queue drains by Parallel requests per average generation.
	avg := s.avg
	if avg <= 0 {
		avg = time.Second
	}
	waves := float64(s.cfg.Queue)/float64(s.cfg.Parallel) + 1
	return false, time.Duration(math.Min(float64(avg)*waves, float64(time.Minute)))
}

// acquire waits for a slot for an admitted request.
func (s *Server) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		s.leave(0)
		return ctx.Err()
	}
}

// release frees the slot of a request that generated for d.
func (s *Server) release(d time.Duration) {
	<-s.slots
	s.leave(d)
}

func (s *Server) leave(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admitted--
	if d > 0 {
		if s.avg == 0 {
			s.avg = d
		} else {
			s.avg = (7*s.avg + d) / 8
		}
	}
}

// logWriter hands the lines of a log.Logger to Config.Log.
type logWriter struct{ log func(string) }

func (w logWriter) Write(p []byte) (int, error) {
	if w.log != nil {
		w.log("http: " + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// apiError is the body of every error answer, in OpenAI's shape.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func errorBody(status int, code, msg string) apiError {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status >= 500:
		typ = "server_error"
	}
	return apiError{Error: apiErrorBody{Message: msg, Type: typ, Code: code}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody(status, "internal_error", "could not encode the answer: "+err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
