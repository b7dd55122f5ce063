// Package openai is a model backend for servers that speak the OpenAI
// chat-completions API: vLLM, SGLang, llama-server, ollama and others. It
// streams with server-sent events, shows reasoning fields as thinking, takes
// tool calls from tool_calls when the server parsed them and otherwise leaves
// the raw content for the loop's parser.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
)

// Config configures a Backend.
type Config struct {
	// BaseURL is the server's API root, e.g. http://127.0.0.1:8000/v1. A URL
	// without a path gets /v1 appended.
	BaseURL string
	// Model is the model name sent in requests. Empty asks the server's
	// /models list and uses the only (or first) model it serves.
	Model string
	// APIKey is sent as a bearer token. Empty reads DROIDGO_API_KEY, then
	// OPENAI_API_KEY.
	APIKey string
	// Client is the HTTP client; nil uses one without an overall timeout
	// (a turn may legitimately stream for minutes).
	Client *http.Client
	// ConnectTimeout bounds the wait for the response headers; default 60 s.
	ConnectTimeout time.Duration
	// IdleTimeout bounds the silence between two streamed chunks; default
	// 120 s.
	IdleTimeout time.Duration
	// MaxRetries is how often a request that failed with 429, a 5xx status
	// or a connection error is tried again; default 3. Negative disables.
	MaxRetries int
	// Backoff is the first retry delay, doubled each time (with jitter);
	// default 500 ms.
	Backoff time.Duration
}

// Backend talks to one OpenAI-compatible server.
type Backend struct {
	cfg   Config
	base  *url.URL
	model string
}

// Errors callers may branch on.
var (
	// ErrUnauthorized reports a 401 or 403 answer.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnknownModel reports a model name the server does not serve.
	ErrUnknownModel = errors.New("unknown model")
	// ErrUnreachable reports a server that cannot be connected to.
	ErrUnreachable = errors.New("server unreachable")
	// ErrStreamBroken reports a stream that ended before the server said
	// it was done.
	ErrStreamBroken = errors.New("stream broke off")
)

// New returns a backend for the server at cfg.BaseURL. It does not contact
// the server unless cfg.Model is empty, in which case it asks for the model
// list.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("no endpoint URL given")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL", cfg.BaseURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1"
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("DROIDGO_API_KEY")
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 120 * time.Second
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	b := &Backend{cfg: cfg, base: u, model: cfg.Model}
	if b.model == "" {
		models, err := b.Models(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case len(models) == 0:
			return nil, fmt.Errorf("%s serves no models", b.endpoint("models"))
		case len(models) > 1:
			// Taking the first would run the task on a model the user may
			// not have meant.
			names := models
			more := ""
			if len(names) > 10 {
				names, more = names[:10], fmt.Sprintf(" and %d more", len(models)-10)
			}
			return nil, fmt.Errorf("%s serves %d models (%s%s); say which with --model-name", b.endpoint("models"), len(models), strings.Join(names, ", "), more)
		}
		b.model = models[0]
	}
	return b, nil
}

// Name identifies the backend for display.
func (b *Backend) Name() string { return "openai:" + b.model + "@" + b.base.Host }

// Model returns the model name requests use.
func (b *Backend) Model() string { return b.model }

func (b *Backend) endpoint(p string) string { return b.base.String() + "/" + p }

// Models lists the model ids the server serves (GET /models).
func (b *Backend) Models(ctx context.Context) ([]string, error) {
	resp, err := b.do(ctx, http.MethodGet, "models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("read model list from %s: %w", b.endpoint("models"), err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// do sends a request, retrying on 429, 5xx and connection errors, and
// returns a response with a 2xx status. Other statuses become errors.
func (b *Backend) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	delay := b.cfg.Backoff
	for attempt := 0; ; attempt++ {
		resp, err := b.once(ctx, method, path, body)
		retry := false
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			err = fmt.Errorf("%w: cannot reach %s: %v", ErrUnreachable, b.endpoint(path), unwrapURL(err))
			retry = true
		} else if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			if ra := retryAfter(resp); ra > delay {
				delay = ra
			}
			err = statusError(b, path, resp)
			retry = true
		} else if resp.StatusCode >= 300 {
			return nil, statusError(b, path, resp)
		}
		if err == nil {
			return resp, nil
		}
		if !retry || attempt >= b.cfg.MaxRetries || b.cfg.MaxRetries < 0 {
			return nil, err
		}
		jitter := time.Duration(rand.Int64N(int64(delay)/4 + 1))
		if err := clock.Sleep(ctx, delay+jitter); err != nil {
			return nil, err
		}
		delay *= 2
	}
}

func (b *Backend) once(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// The header timeout is ours, not the client's, so that a long stream
	// is not cut once headers arrived.
	hctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(hctx, method, b.endpoint(path), rd)
	if err != nil {
		cancel()
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
	}
	if b.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.cfg.APIKey)
	}
	timer := time.AfterFunc(b.cfg.ConnectTimeout, cancel)
	resp, err := b.cfg.Client.Do(req)
	if !timer.Stop() && err != nil && ctx.Err() == nil {
		cancel()
		return nil, fmt.Errorf("no answer within %s", b.cfg.ConnectTimeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelBody) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func retryAfter(resp *http.Response) time.Duration {
	s := resp.Header.Get("Retry-After")
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, time.Minute)
	}
	return 0
}

// statusError turns a non-2xx answer into an error that says what to do.
func statusError(b *Backend, path string, resp *http.Response) error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := serverMessage(raw)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %d (%s); set DROIDGO_API_KEY or OPENAI_API_KEY to a key it accepts", ErrUnauthorized, b.endpoint(path), resp.StatusCode, msg)
	case resp.StatusCode == http.StatusNotFound && b.model != "" && strings.Contains(strings.ToLower(msg), "model"):
		return fmt.Errorf("%w: %s does not serve model %q (%s)", ErrUnknownModel, b.base.Host, b.model, msg)
	}
	return fmt.Errorf("%s answered %s: %s", b.endpoint(path), resp.Status, msg)
}

// serverMessage extracts the error message of an OpenAI-style error body.
func serverMessage(raw []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
		if e.Msg != "" {
			return e.Msg
		}
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "no details"
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// Chat streams one assistant turn.
func (b *Backend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	body, err := json.Marshal(b.requestBody(req))
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	resp, err := b.do(ctx, http.MethodPost, "chat/completions", body)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "text/event-stream") && strings.Contains(ct, "json") {
		// Some servers ignore "stream" and answer with one JSON object.
		return newWholeStream(resp, req.MaxTokens)
	}
	return newSSEStream(ctx, resp, b.cfg.IdleTimeout, req.Think, req.MaxTokens), nil
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Reasoning  string         `json:"reasoning_content,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

func (b *Backend) requestBody(req model.ChatRequest) map[string]any {
	msgs := make([]wireMessage, 0, len(req.Messages))
	var pending []string // ids of tool calls not yet answered, in order
	n := 0
	for _, m := range req.Messages {
		w := wireMessage{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning}
		switch m.Role {
		case model.RoleAssistant:
			pending = pending[:0]
			for _, c := range m.ToolCalls {
				n++
				id := fmt.Sprintf("call_%d", n)
				args, _ := json.Marshal(orderedArgs(c, req.Tools))
				w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: id, Type: "function", Function: wireFunction{Name: c.Name, Arguments: string(args)}})
				pending = append(pending, id)
			}
		case model.RoleTool:
			// Servers match tool results to calls by id; the loop answers
			// calls in order, so hand out the pending ids in order.
			if len(pending) > 0 {
				w.ToolCallID, pending = pending[0], pending[1:]
			} else {
				n++
				w.ToolCallID = fmt.Sprintf("call_%d", n)
			}
		}
		msgs = append(msgs, w)
	}
	body := map[string]any{
		"model":                b.model,
		"messages":             msgs,
		"stream":               true,
		"stream_options":       map[string]any{"include_usage": true},
		"chat_template_kwargs": map[string]any{"enable_thinking": req.Think},
	}
	if len(req.Tools) > 0 {
		// In the order the template renders (name, description,
		// parameters, ...): a server renders the JSON as it arrives, so
		// the prompt is then the one the in-process engine builds.
		tools := make([]chat.Object, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = chat.ToolValue(t)
		}
		body["tools"] = tools
	}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	s := req.Sampling
	if s.Temperature > 0 {
		body["temperature"] = s.Temperature
		if s.TopP > 0 {
			body["top_p"] = s.TopP
		}
		if s.TopK > 0 {
			body["top_k"] = s.TopK
		}
	} else {
		body["temperature"] = 0
	}
	if s.Temperature > 0 {
		// Seed 0 is a seed like any other (the in-process sampler's
		// default); a server given none would pick a random one.
		body["seed"] = s.Seed
	}
	return body
}

// orderedArgs returns the call's arguments as JSON with keys in the tool's
// parameter order, which keeps requests (and server-side prompt caches)
// stable from one step to the next.
func orderedArgs(c action.Call, tools []action.Tool) json.RawMessage {
	var keys []string
	if t, ok := action.Lookup(tools, c.Name); ok {
		for _, p := range t.Params {
			if _, ok := c.Arguments[p.Name]; ok {
				keys = append(keys, p.Name)
			}
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	var rest []string
	for k := range c.Arguments {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(c.Arguments[k])
		if err != nil {
			vb = []byte("null")
		}
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
