package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/reasoning"
)

// chunk is one streamed chat.completion.chunk (or a whole completion, whose
// choices carry "message" instead of "delta").
type chunk struct {
	Choices []struct {
		Delta        wireDelta  `json:"delta"`
		Message      *wireDelta `json:"message"`
		FinishReason *string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		Details          *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type wireDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	Reasoning        *string `json:"reasoning"`
	ToolCalls        []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// partialCall accumulates a tool call streamed in pieces.
type partialCall struct {
	name string
	args strings.Builder
}

// Client-side bounds on what a server may send, whatever it was asked:
// a server that ignores max_tokens, or sends one endless line, must not
// take droidgo's memory with it.
const (
	// maxLine bounds one SSE line (one chunk, or a whole answer sent as
	// one data line).
	maxLine = 2 << 20
	// maxAnswer bounds the text of one turn (reasoning, answer and tool
	// call arguments): a small model's longest turn is tens of kilobytes.
	maxAnswer = 1 << 20
	// maxWhole bounds a non-streamed JSON answer.
	maxWhole = maxLine
	// maxStream bounds the bytes of one streamed turn, whatever they carry:
	// a server sending keep-alive comments or empty chunks without end
	// would otherwise hold the run forever. A real turn of thousands of
	// one-token chunks is a few megabytes.
	maxStream = 64 << 20
)

// errLineTooLong is the error of an SSE line over maxLine, errStreamTooLong
// that of a turn over maxStream.
var (
	errLineTooLong   = fmt.Errorf("%w: the server sent a line longer than %d MiB", ErrStreamBroken, maxLine>>20)
	errStreamTooLong = fmt.Errorf("%w: the server sent %d MiB without finishing the answer", ErrStreamBroken, maxStream>>20)
)

// sseStream reads a text/event-stream answer.
type sseStream struct {
	ctx     context.Context
	body    io.ReadCloser
	lines   *bufio.Reader
	idle    time.Duration
	timer   *time.Timer
	timeout bool
	mu      sync.Mutex

	pending  []model.Delta
	calls    map[int]*partialCall
	done     bool
	finished bool // the server sent finish_reason or [DONE]
	// split separates reasoning from answer in the content of a server
	// that streams the raw text (no reasoning parser); it is dropped as
	// soon as the server sends a reasoning field.
	split *reasoning.Splitter
	// inReasoning is set while reasoning fields stream, so the first
	// content after them can be marked as the end of the reasoning.
	inReasoning bool

	// maxTokens is the turn's token budget (0: none), enforced here by
	// counting content chunks, which servers send one token at a time;
	// chunks and bytes count what arrived whatever the server's usage says.
	maxTokens int
	chunks    int
	bytes     int
	read      int // bytes of the body read

	start, first time.Time
	stats        model.Stats
}

func newSSEStream(ctx context.Context, resp *http.Response, idle time.Duration, think bool, maxTokens int) *sseStream {
	s := &sseStream{
		ctx:       ctx,
		body:      resp.Body,
		lines:     bufio.NewReaderSize(resp.Body, 64<<10),
		idle:      idle,
		calls:     map[int]*partialCall{},
		start:     time.Now(),
		maxTokens: maxTokens,
	}
	if think {
		s.split = reasoning.NewSplitter(true)
	}
	// A stalled server never sends another byte; closing the body is the
	// only way to unblock the read.
	s.timer = time.AfterFunc(idle, func() {
		s.mu.Lock()
		s.timeout = true
		s.mu.Unlock()
		resp.Body.Close()
	})
	go func() {
		<-ctx.Done()
		resp.Body.Close()
	}()
	return s
}

// Next returns the next delta.
func (s *sseStream) Next() (model.Delta, error) {
	for len(s.pending) == 0 {
		if s.done {
			return model.Delta{}, io.EOF
		}
		if err := s.readEvent(); err != nil {
			s.done = true
			return model.Delta{}, err
		}
	}
	d := s.pending[0]
	s.pending = s.pending[1:]
	return d, nil
}

// readEvent reads one SSE line and queues what it carries.
func (s *sseStream) readEvent() error {
	line, err := s.readLine()
	if errors.Is(err, errLineTooLong) || errors.Is(err, errStreamTooLong) {
		s.body.Close()
		return err
	}
	if err != nil {
		if line != "" && err == io.EOF {
			// A last line without newline still counts.
			if perr := s.handleLine(strings.TrimRight(line, "\r")); perr != nil {
				return perr
			}
		}
		return s.end(err)
	}
	return s.handleLine(strings.TrimRight(line, "\r\n"))
}

// readLine reads one line of at most maxLine bytes.
func (s *sseStream) readLine() (string, error) {
	var line []byte
	for {
		frag, err := s.lines.ReadSlice('\n')
		s.timer.Reset(s.idle)
		if len(line)+len(frag) > maxLine {
			return "", errLineTooLong
		}
		if s.read += len(frag); s.read > maxStream {
			return "", errStreamTooLong
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return string(line), err
		}
	}
}

// stop ends the turn on droidgo's side: the text so far is the answer,
// the body is closed so the server stops sending, and why goes into the
// stats for the loop to show.
func (s *sseStream) stop(why string) {
	s.stats.Stopped = why
	s.finished = true
	s.flushCalls()
	s.done = true
	s.body.Close()
}

func (s *sseStream) end(readErr error) error {
	s.mu.Lock()
	timedOut := s.timeout
	s.mu.Unlock()
	s.done = true
	switch {
	case s.ctx != nil && s.ctx.Err() != nil:
		return s.ctx.Err()
	case s.finished:
		// The server said it was done; a close after that is the normal end.
		s.flushCalls()
		return nil
	case timedOut:
		return fmt.Errorf("%w: no data for %s after %d tokens", ErrStreamBroken, s.idle, s.stats.GeneratedTokens)
	case errors.Is(readErr, io.EOF) || errors.Is(readErr, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the server closed the stream before it finished, after %d tokens", ErrStreamBroken, s.stats.GeneratedTokens)
	default:
		return fmt.Errorf("%w: %v", ErrStreamBroken, readErr)
	}
}

func (s *sseStream) handleLine(line string) error {
	if line == "" || strings.HasPrefix(line, ":") {
		return nil // event separator or comment (keep-alive)
	}
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	if field != "data" {
		return nil // event:, id:, retry: carry nothing we use
	}
	if value == "[DONE]" {
		s.finished = true
		s.flushCalls()
		s.done = true
		return nil
	}
	var c chunk
	if err := json.Unmarshal([]byte(value), &c); err != nil {
		return fmt.Errorf("%w: the server sent a malformed chunk: %v", ErrStreamBroken, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("the server reported an error mid-stream: %s", serverMessage([]byte(`{"error":`+string(c.Error)+`}`)))
	}
	if c.Usage != nil {
		s.stats.PromptTokens = c.Usage.PromptTokens
		if c.Usage.CompletionTokens > 0 {
			s.stats.GeneratedTokens = c.Usage.CompletionTokens
		}
		if c.Usage.Details != nil {
			s.stats.CachedTokens = c.Usage.Details.CachedTokens
		}
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if ch.Message != nil {
			d = *ch.Message
		}
		s.addDelta(d)
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.finished = true
			s.flushCalls()
		}
	}
	return nil
}

func (s *sseStream) addDelta(d wireDelta) {
	text := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if s.done {
		return // stopped by a bound: the rest of the line is not taken
	}
	r := text(d.ReasoningContent) + text(d.Reasoning)
	c := text(d.Content)
	s.bytes += len(r) + len(c)
	for _, tc := range d.ToolCalls {
		s.bytes += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	if r != "" || c != "" {
		s.chunks++
	}
	switch {
	case s.maxTokens > 0 && s.chunks > s.maxTokens:
		s.stop(fmt.Sprintf("the server sent more than the %d tokens asked for (it ignores max_tokens); droidgo stopped reading and closed the stream", s.maxTokens))
		return
	case s.bytes > maxAnswer:
		s.stop(fmt.Sprintf("the server's answer passed %d MiB; droidgo stopped reading and closed the stream", maxAnswer>>20))
		return
	}
	if r != "" || c != "" {
		now := time.Now()
		if s.first.IsZero() {
			s.first = now
			s.stats.Prefill = now.Sub(s.start)
		}
		s.stats.Decode = now.Sub(s.first)
		s.stats.GeneratedTokens++ // one chunk is one token on the servers we know; usage corrects it
	}
	if r != "" {
		s.split = nil
		s.inReasoning = true
		s.pending = append(s.pending, model.Delta{Reasoning: r})
	}
	if c != "" && s.split != nil {
		s.pending = s.split.FeedDeltas(s.pending, c)
		c = ""
	}
	if c != "" {
		if s.inReasoning {
			s.inReasoning = false
			s.pending = append(s.pending, model.Delta{ReasoningClosed: true})
		}
		s.pending = append(s.pending, model.Delta{Content: c})
	}
	for _, tc := range d.ToolCalls {
		idx := len(s.calls)
		if tc.Index != nil {
			idx = *tc.Index
		}
		p := s.calls[idx]
		if p == nil {
			p = &partialCall{}
			s.calls[idx] = p
		}
		if tc.Function.Name != "" {
			p.name = tc.Function.Name
		}
		// Arguments arrive as JSON string pieces; some servers send the
		// whole object instead.
		var piece string
		if err := json.Unmarshal(tc.Function.Arguments, &piece); err == nil {
			p.args.WriteString(piece)
		} else if len(tc.Function.Arguments) > 0 && string(tc.Function.Arguments) != "null" {
			p.args.Write(tc.Function.Arguments)
		}
	}
}

// flushCalls turns accumulated tool calls into a delta. Arguments that are
// not valid JSON are handed to the loop's parser as content, so its repairs
// apply and are reported.
func (s *sseStream) flushCalls() {
	if s.split != nil {
		s.pending = s.split.FlushDeltas(s.pending)
		s.split = nil
	}
	if len(s.calls) == 0 {
		return
	}
	idx := make([]int, 0, len(s.calls))
	for i := range s.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var calls []action.Call
	for _, i := range idx {
		p := s.calls[i]
		raw := strings.TrimSpace(p.args.String())
		if raw == "" {
			raw = "{}"
		}
		args := map[string]any{}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil || p.name == "" {
			s.pending = append(s.pending, model.Delta{Content: fmt.Sprintf(`{"name": %q, "arguments": %s}`, p.name, raw)})
			continue
		}
		calls = append(calls, action.Call{Name: p.name, Arguments: numbers(args)})
	}
	s.calls = map[int]*partialCall{}
	if len(calls) > 0 {
		if s.inReasoning {
			s.inReasoning = false
			s.pending = append(s.pending, model.Delta{ReasoningClosed: true})
		}
		s.pending = append(s.pending, model.Delta{ToolCalls: calls})
	}
}

// numbers turns json.Number values into int64 or float64, as the action
// space expects.
func numbers(m map[string]any) map[string]any {
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				m[k] = i
			} else if f, err := n.Float64(); err == nil {
				m[k] = f
			}
		}
	}
	return m
}

// CloseReasoning is not possible over HTTP mid-stream; the loop asks again
// with thinking off.
func (s *sseStream) CloseReasoning() error { return model.ErrUnsupported }

// Close stops the stream.
func (s *sseStream) Close() error {
	s.timer.Stop()
	s.done = true
	return s.body.Close()
}

// Stats reports token counts and timings.
func (s *sseStream) Stats() model.Stats { return s.stats }

// newWholeStream serves a non-streamed JSON answer as a stream.
func newWholeStream(resp *http.Response, maxTokens int) (model.Stream, error) {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxWhole+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if len(raw) > maxWhole {
		return nil, fmt.Errorf("%w: the server's answer is larger than %d MiB", ErrStreamBroken, maxWhole>>20)
	}
	s := &sseStream{body: io.NopCloser(strings.NewReader("")), calls: map[int]*partialCall{}, start: time.Now(), timer: time.NewTimer(time.Hour), maxTokens: maxTokens}
	s.lines = bufio.NewReader(strings.NewReader(""))
	if err := s.handleLine("data: " + string(raw)); err != nil {
		return nil, err
	}
	s.finished = true
	s.flushCalls()
	s.done = true
	return s, nil
}
