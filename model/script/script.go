// Package script is a model backend that plays model outputs back from a
// file, token by token at a steady pace, so the agent can run in tests and
// demos without model weights.
//
// # File format
//
// A script is UTF-8 text made of turns. Each turn starts with a line that
// begins with "--- turn" (anything after it on the line is a comment, e.g.
// "--- turn 2: open Network"). Lines before the first turn are a header:
// blank lines and lines starting with "#" are comments, anything else is an
// error. The text of a turn, up to the next "--- turn" line, is the raw
// model output of one Chat call, written as the model writes it after a
// prompt that opened <think>: reasoning, "</think>", then the answer (for
// Spark-X2.5, <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>).
// The newline before the next turn line is not part of the turn.
//
// Each Chat call consumes the next turn; a call after the last one fails.
// A turn stops after ChatRequest.MaxTokens tokens when that is set, as a
// model's output would.
// With thinking off (ChatRequest.Think false) the reasoning up to and
// including the first "</think>" is skipped, as a model prompted with
// thinking off would not produce it.
//
// # Placeholders
//
// Element indices depend on how screens are rendered, so a turn may name an
// element by its label instead: {{index "Wi-Fi"}} becomes the index of the
// first element whose label is "Wi-Fi" in the element list of the latest
// user message, and {{index "Wi-Fi" "switch"}} the first one whose line
// also contains the word "switch" (its kind). Labels are matched exactly
// first (as a quoted string on the element's line, or the whole text after
// the index), then as the part before the first comma of a quoted label
// (Android folds summaries into labels: "Bluetooth, On"), then as a
// case-insensitive substring; the first matching line wins in each round. An unresolved
// placeholder fails the Chat call with an error naming the label, since
// the script no longer fits the screens. "{{" without a placeholder is
// kept as it is.
//
// The element list is the part of the latest user message that has a line
// starting with model.ScreenHeader ("Current screen"), after that line
// (the whole latest user message when none has it); element lines start
// with an index as "[N]", "N:" or "N." followed by a space.
package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/internal/word"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/reasoning"
)

// DefaultPace is the delay between tokens when a script is opened from the
// command line: about what Spark-X2.5-1.7B decodes at on a laptop CPU.
const DefaultPace = 40 * time.Millisecond

// TurnSeparator starts a turn.
const TurnSeparator = "--- turn"

// ErrMisfit is wrapped by the errors of a script that does not fit the run
// it is played in: it has no turn left, or a placeholder names an element
// the screen does not have. The script's model has gone off its path, so
// a benchmark counts it as the model failing, not as a broken backend.
var ErrMisfit = errors.New("the script does not fit this run")

// Options tune playback.
type Options struct {
	// Pace is the delay before each token; 0 plays instantly.
	Pace time.Duration
	// Sleep and Now replace the clock in tests; nil uses the real one.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// Script is a parsed script file.
type Script struct {
	Name  string
	Turns []string
}

// Parse reads a script; name is used in messages.
func Parse(name string, data []byte) (*Script, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("script %s: not UTF-8 text", name)
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	s := &Script{Name: name}
	var cur *strings.Builder
	flush := func() {
		if cur != nil {
			s.Turns = append(s.Turns, strings.TrimSuffix(cur.String(), "\n"))
		}
	}
	for i, line := range lines {
		if strings.HasPrefix(line, TurnSeparator) {
			flush()
			cur = &strings.Builder{}
			continue
		}
		if cur == nil {
			t := strings.TrimSpace(line)
			if t != "" && !strings.HasPrefix(t, "#") {
				return nil, fmt.Errorf("script %s:%d: text before the first %q line; start each turn with %q", name, i+1, TurnSeparator, TurnSeparator)
			}
			continue
		}
		cur.WriteString(line)
	}
	flush()
	if len(s.Turns) == 0 {
		return nil, fmt.Errorf("script %s: no turns; start each turn with a %q line", name, TurnSeparator)
	}
	for i, t := range s.Turns {
		if err := checkPlaceholders(t); err != nil {
			return nil, fmt.Errorf("script %s: turn %d: %w", name, i+1, err)
		}
	}
	return s, nil
}

// Load reads a script file.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return Parse(filepath.Base(path), data)
}

// Open parses a --model value's part after "script:": a file path,
// optionally followed by "?pace=DURATION" (e.g. "wifi.txt?pace=0"). The
// pace defaults to DefaultPace; opts supplies the rest.
func Open(spec string, opts Options) (*Backend, error) {
	path, query, _ := strings.Cut(spec, "?")
	opts.Pace = DefaultPace
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "pace":
				d, err := parsePace(v)
				if err != nil {
					return nil, fmt.Errorf("script %s: pace %q: %w", path, v, err)
				}
				opts.Pace = d
			default:
				return nil, fmt.Errorf("script %s: unknown option %q; the only option is pace", path, k)
			}
		}
	}
	if path == "" {
		return nil, errors.New("no script file given; use script:FILE")
	}
	s, err := Load(path)
	if err != nil {
		return nil, err
	}
	return New(s, opts), nil
}

func parsePace(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New("want a duration such as 40ms or 0")
	}
	if d < 0 || d > 10*time.Second {
		return 0, errors.New("must be between 0 and 10s")
	}
	return d, nil
}

// Backend plays a Script. It is safe for one conversation at a time.
type Backend struct {
	script *Script
	opts   Options

	mu   sync.Mutex
	next int
}

// New returns a backend that plays s from its first turn.
func New(s *Script, opts Options) *Backend {
	if opts.Sleep == nil {
		opts.Sleep = clock.Sleep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Backend{script: s, opts: opts}
}

// Name implements model.Backend.
func (b *Backend) Name() string { return "script:" + b.script.Name }

// Used returns how many turns have been played.
func (b *Backend) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// Chat implements model.Backend: it plays the next turn.
func (b *Backend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	n := b.next
	if n >= len(b.script.Turns) {
		b.mu.Unlock()
		return nil, fmt.Errorf("script %s has no turn %d (it has %d): %w", b.script.Name, n+1, len(b.script.Turns), ErrMisfit)
	}
	b.next++
	b.mu.Unlock()

	text, err := resolve(b.script.Turns[n], lastUser(req.Messages))
	if err != nil {
		return nil, fmt.Errorf("script %s: turn %d: %w", b.script.Name, n+1, err)
	}
	if !req.Think {
		if _, after, ok := strings.Cut(text, "</think>"); ok {
			text = strings.TrimLeft(after, "\n")
		}
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(Tokens(m.Content)) + len(Tokens(m.Reasoning))
	}
	return &stream{
		ctx:      ctx,
		opts:     b.opts,
		tokens:   Tokens(text),
		splitter: reasoning.NewSplitter(req.Think),
		think:    req.Think,
		prompt:   prompt,
		max:      req.MaxTokens,
	}, nil
}

// lastUser returns the latest user message that lists a screen (a
// corrective message after a bad answer does not), else the latest one.
func lastUser(msgs []model.Message) string {
	latest := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleUser {
			continue
		}
		if latest == "" {
			latest = msgs[i].Content
		}
		if hasScreen(msgs[i].Content) {
			return msgs[i].Content
		}
	}
	return latest
}

func hasScreen(text string) bool {
	return strings.HasPrefix(text, model.ScreenHeader) || strings.Contains(text, "\n"+model.ScreenHeader)
}

// tagRE finds the special tags, which are single tokens; wordRE splits
// the text between them into pieces about the size of BPE tokens: words
// with their leading space, single other characters, runs of space.
var (
	tagRE  = regexp.MustCompile(`</?[a-z_]+>`)
	wordRE = regexp.MustCompile(`[ \t]?[\pL\pN]+|[ \t]?[^\s\pL\pN]|\s+`)
)

// Tokens splits text the way the script plays it back. Joined, the tokens
// are text again.
func Tokens(text string) []string {
	var out []string
	last := 0
	for _, loc := range tagRE.FindAllStringIndex(text, -1) {
		out = append(out, wordRE.FindAllString(text[last:loc[0]], -1)...)
		out = append(out, text[loc[0]:loc[1]])
		last = loc[1]
	}
	return append(out, wordRE.FindAllString(text[last:], -1)...)
}

type stream struct {
	ctx      context.Context
	opts     Options
	tokens   []string
	pos      int
	splitter *reasoning.Splitter
	think    bool
	closed   bool // the reasoning is closed
	pending  []model.Delta

	prompt    int
	generated int
	max       int // ChatRequest.MaxTokens: the turn ends there, as an engine's does
	start     time.Time
	decode    time.Duration
	done      bool
}

func (s *stream) Next() (model.Delta, error) {
	for {
		if err := s.ctx.Err(); err != nil {
			return model.Delta{}, err
		}
		if len(s.pending) > 0 {
			// Pending deltas come out even after Close or the end: they
			// are text the turn already produced.
			d := s.pending[0]
			s.pending = s.pending[1:]
			return d, nil
		}
		if s.done {
			return model.Delta{}, io.EOF
		}
		if s.pos >= len(s.tokens) || s.max > 0 && s.generated >= s.max {
			s.done = true
			s.pending = s.splitter.FlushDeltas(s.pending)
			continue
		}
		if s.start.IsZero() {
			s.start = s.opts.Now()
		}
		if s.opts.Pace > 0 {
			if err := s.opts.Sleep(s.ctx, s.opts.Pace); err != nil {
				return model.Delta{}, err
			}
		}
		tok := s.tokens[s.pos]
		s.pos++
		s.generated++
		s.decode = s.opts.Now().Sub(s.start)
		s.pending = s.splitter.FeedDeltas(s.pending, tok)
		s.closed = s.closed || s.splitter.Closed()
	}
}

// CloseReasoning jumps to the turn's "</think>", as an engine would append
// it and decode on; a turn without one ends right after the close.
func (s *stream) CloseReasoning() error {
	if !s.think || s.closed {
		return nil
	}
	for i := s.pos; i < len(s.tokens); i++ {
		if s.tokens[i] == "</think>" {
			s.pos = i
			return nil
		}
	}
	s.tokens = append(s.tokens[:s.pos:s.pos], "</think>")
	return nil
}

func (s *stream) Close() error {
	s.done = true
	return nil
}

func (s *stream) Stats() model.Stats {
	return model.Stats{PromptTokens: s.prompt, GeneratedTokens: s.generated, Decode: s.decode}
}

// placeholderRE matches {{index "LABEL"}} and {{index "LABEL" "KIND"}};
// labels are Go-quoted strings.
var placeholderRE = regexp.MustCompile(`\{\{\s*index\s+("(?:[^"\\]|\\.)*")(?:\s+("(?:[^"\\]|\\.)*"))?\s*\}\}`)

func checkPlaceholders(turn string) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(turn, -1) {
		for _, q := range m[1:] {
			if q == "" {
				continue
			}
			if _, err := strconv.Unquote(q); err != nil {
				return fmt.Errorf("placeholder %s: bad quoted string %s", m[0], q)
			}
		}
	}
	return nil
}

// resolve replaces the placeholders of turn with indices from the element
// list in user.
func resolve(turn, user string) (string, error) {
	if !strings.Contains(turn, "{{") {
		return turn, nil
	}
	elems := elementLines(user)
	var firstErr error
	out := placeholderRE.ReplaceAllStringFunc(turn, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		label, _ := strconv.Unquote(sub[1])
		kind := ""
		if sub[2] != "" {
			kind, _ = strconv.Unquote(sub[2])
		}
		idx, ok := find(elems, label, kind)
		if !ok {
			if firstErr == nil {
				what := fmt.Sprintf("%q", label)
				if kind != "" {
					what += fmt.Sprintf(" (%s)", kind)
				}
				firstErr = fmt.Errorf("no element %s on the screen: %w", what, ErrMisfit)
			}
			return m
		}
		return strconv.Itoa(idx)
	})
	return out, firstErr
}

type elementLine struct {
	index int
	rest  string // the line after the index
}

var elementLineRE = regexp.MustCompile(`^\s*(?:\[(\d+)\]|(\d+)[:.])\s+(.*)$`)

func elementLines(user string) []elementLine {
	lines := strings.Split(user, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], model.ScreenHeader) {
			lines = lines[i+1:]
			break
		}
	}
	var out []elementLine
	for _, line := range lines {
		m := elementLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		digits := m[1]
		if digits == "" {
			digits = m[2]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			continue
		}
		out = append(out, elementLine{index: n, rest: strings.TrimSpace(m[3])})
	}
	return out
}

func find(elems []elementLine, label, kind string) (int, bool) {
	hasKind := func(e elementLine) bool {
		return kind == "" || word.In(e.rest, kind)
	}
	quoted := strconv.Quote(label)
	for _, e := range elems {
		if hasKind(e) && (strings.Contains(e.rest, quoted) || e.rest == label) {
			return e.index, true
		}
	}
	// Android often folds a row's summary into its label ("Bluetooth, On"):
	// the label before the first comma counts next.
	prefix := strings.TrimSuffix(quoted, `"`) + ","
	for _, e := range elems {
		if hasKind(e) && strings.Contains(e.rest, prefix) {
			return e.index, true
		}
	}
	lower := strings.ToLower(label)
	for _, e := range elems {
		if hasKind(e) && strings.Contains(strings.ToLower(e.rest), lower) {
			return e.index, true
		}
	}
	return 0, false
}
