// Package local is the in-process Spark backend: it runs a Spark-X2.5
// model (a GGUF file or an HF directory) with model/spark, renders the
// conversation with the model's chat template, tokenizes it, keeps the KV
// cache between turns so each turn only prefills what changed, and streams
// the reasoning and the answer of one assistant turn.
//
// Because the engine runs in the same process, two things come for free
// that an HTTP backend cannot do well: the loop's thinking budget closes
// the reasoning by feeding the </think> token into the running sequence
// (Stream.CloseReasoning), and the answer after the reasoning can be
// constrained token by token to one well-formed tool call of the offered
// tools (model/constrain), so an invalid call cannot be produced.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/tokenizer"
)

// ConstrainMode says whether answers are constrained to a valid tool call.
type ConstrainMode int

const (
	// ConstrainAsRequested follows ChatRequest.Constrain (the loop sets it
	// from the "constrain" setting, on by default).
	ConstrainAsRequested ConstrainMode = iota
	// ConstrainOn constrains every turn that offers tools.
	ConstrainOn
	// ConstrainOff never constrains.
	ConstrainOff
)

// DefaultMaxTokens bounds a turn whose request leaves MaxTokens at 0.
const DefaultMaxTokens = 4096

// closingGrace is how many tokens past MaxTokens a constrained answer may
// take to finish the call it started (in closing mode, which prefers the
// tags that end the call): a call cut in the middle would be lost, and the
// constraint's promise is that the answer parses.
const closingGrace = 128

// Options configure a Backend. The zero value is the default.
type Options struct {
	// Threads for the engine (0: spark.DefaultThreads, the physical cores).
	Threads int
	// GELU selects the engine's GELU (default: exact erf).
	GELU spark.GELUMode
	// Constrain overrides ChatRequest.Constrain.
	Constrain ConstrainMode
	// MaxContext bounds the cached positions (0: the model's context).
	MaxContext int
	// Batch is the engine's prefill chunk (0: the engine's default).
	Batch int
	// Repack interleaves the Q4_K and Q6_K weights in the background
	// (spark.Model.StartRepack), where this CPU has kernels for it,
	// starting once the first prompt is prefilled.
	Repack bool
	// Unbatched turns off the batching of dictated answer tokens: every
	// answer token is then chosen and evaluated on its own, as before
	// (a measuring aid for `droidgo bench agent`).
	Unbatched bool
	// KV is the engine's KV cache type (default f16).
	KV spark.KVType
	// PromptCache, when set, keeps the fixed prompt prefix's KV state on
	// disk between runs.
	PromptCache *kvcache.Cache
	// Warn receives warnings that arise while answering (a damaged prompt
	// cache entry); nil drops them.
	Warn func(string)

	ringSlack int // tests: overrides agentRingSlack
}

// Backend runs one Spark model in-process. It implements model.Backend.
// One turn streams at a time: Chat waits until the previous stream is
// closed (or ctx ends).
type Backend struct {
	name     string
	m        *spark.Model
	eng      *spark.Engine
	tok      *tokenizer.Tokenizer
	opts     Options
	warnings []string
	maxCtx   int

	eos, thinkOpen, thinkClose int
	// first is the first byte of each token's piece (-1 when empty): the
	// constraint rejects most tokens by it without building their text.
	first []int16
	// sorted lists the token ids by piece, bytewise: the constraint walks
	// it as a trie.
	sorted []int32

	path     string
	cache    *kvcache.Cache
	identity []byte // the model file's, for prompt cache keys
	snap     *spark.State
	repack   bool // the background repack is still to be started

	busy chan struct{}
	// closed is set by Close; guarded by busy.
	closed bool
	curMu  sync.Mutex
	cur    *stream // the last stream started
}

// Open loads a model: a GGUF file or an HF directory with its tokenizer.
// The model's own chat template is used when it is the official one Spark
// ships; otherwise the official template is rendered and a warning is
// recorded (Warnings).
func Open(path string, opts Options) (*Backend, error) {
	m, err := spark.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := newBackend(path, m, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	// The repack starts after the first prompt is prefilled (start), so
	// that it does not compete with the prefill for the cores: the time
	// to the first token is what a person waits for.
	b.repack = opts.Repack
	return b, nil
}

func newBackend(path string, m *spark.Model, opts Options) (*Backend, error) {
	var tok *tokenizer.Tokenizer
	var err error
	if m.GGUF != nil {
		tok, err = tokenizer.FromGGUF(m.GGUF)
	} else {
		tok, err = tokenizer.FromHFDir(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", filepath.Base(path), err)
	}
	if tok.VocabSize() > m.Config.Vocab {
		return nil, fmt.Errorf("%s: the tokenizer has %d tokens but the model only %d", filepath.Base(path), tok.VocabSize(), m.Config.Vocab)
	}
	b := &Backend{
		name: "spark:" + filepath.Base(filepath.Clean(path)),
		m:    m,
		tok:  tok,
		opts: opts,
		path: path,
		busy: make(chan struct{}, 1),
	}
	if opts.PromptCache != nil {
		b.cache = opts.PromptCache
		b.identity = identityBytes(path)
	}
	b.eos = tok.EOS()
	if id, ok := tok.ID("<｜end▁of▁sentence｜>"); ok {
		b.eos = id
	}
	if b.eos < 0 {
		return nil, fmt.Errorf("%s: the tokenizer has no end-of-sequence token", filepath.Base(path))
	}
	b.thinkOpen, b.thinkClose = -1, -1
	if id, ok := tok.ID("<think>"); ok {
		b.thinkOpen = id
	}
	if id, ok := tok.ID("</think>"); ok {
		b.thinkClose = id
	}
	tmpl, found, err := chat.ModelTemplate(path)
	switch {
	case err != nil:
		b.warnings = append(b.warnings, fmt.Sprintf("could not read the model's chat template (%v); using Spark's official template", err))
	case !found:
		b.warnings = append(b.warnings, "the model file has no chat template; using Spark's official template")
	case !chat.IsOfficial(tmpl):
		b.warnings = append(b.warnings, "the model's chat template is not Spark's official one; rendering the official template instead")
	}
	b.first = make([]int16, tok.VocabSize())
	for id := range b.first {
		b.first[id] = -1
		if p := tok.Piece(id); p != "" {
			b.first[id] = int16(p[0])
		}
	}
	b.sorted = sortedByPiece(tok)
	eng, err := spark.NewEngine(m, spark.Options{Threads: opts.Threads, GELU: opts.GELU, MaxContext: opts.MaxContext, Batch: opts.Batch, RingSlack: cmp.Or(opts.ringSlack, agentRingSlack), KV: opts.KV})
	if err != nil {
		return nil, err
	}
	b.eng = eng
	b.maxCtx = opts.MaxContext
	if b.maxCtx <= 0 {
		b.maxCtx = m.Config.Context
	}
	if b.maxCtx <= 0 {
		b.maxCtx = 1 << 20
	}
	return b, nil
}

func (b *Backend) warn(msg string) {
	if b.opts.Warn != nil {
		b.opts.Warn(msg)
	}
}

// Name returns "spark:" and the model file's base name.
func (b *Backend) Name() string { return b.name }

// Warnings lists problems found while opening the model that did not stop
// it from loading (e.g. an unofficial chat template).
func (b *Backend) Warnings() []string { return append([]string(nil), b.warnings...) }

// Threads returns the number of threads the engine computes with.
func (b *Backend) Threads() int { return b.eng.Threads() }

// Tokenizer returns the model's tokenizer.
func (b *Backend) Tokenizer() *tokenizer.Tokenizer { return b.tok }

// Prefilled returns how many tokens the engine has computed in all turns
// (prompt suffixes and fed-back generated tokens; cache hits not counted).
func (b *Backend) Prefilled() int64 { return b.eng.Prefilled() }

// Close ends a streaming turn, if any, and releases the model.
func (b *Backend) Close() error {
	b.curMu.Lock()
	cur := b.cur
	b.curMu.Unlock()
	if cur != nil {
		cur.Close()
	}
	b.busy <- struct{}{}
	defer func() { <-b.busy }()
	if b.closed {
		return nil
	}
	b.closed = true
	b.eng.Close()
	return b.m.Close()
}

// agentRingSlack lets the sliding-window layers keep 2048 positions beyond
// their window. An agent's next prompt differs from the cache from the
// start of its user message on, which lies behind the previous turn's
// screen, reasoning and answer (typically 500-2000 tokens); with the
// default slack of 256 the cache would be cleared and the whole system
// prompt prefilled again every step. It costs up to 2 KiB per position per
// sliding layer (f32 K and V), about 170 MiB for the 1.7B, allocated only
// as positions are used.
const agentRingSlack = 2048

// errClosed is returned by Chat after Close.
var errClosed = errors.New("the model is closed")

// Chat renders and prefills the conversation (reusing the cached prefix)
// and returns the stream of the assistant turn. The prefill happens here,
// so Stats is complete for the prompt once Chat returns.
func (b *Backend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	select {
	case b.busy <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := sync.OnceFunc(func() { <-b.busy })
	s, err := b.start(ctx, req, release)
	if err != nil {
		release()
		return nil, err
	}
	b.curMu.Lock()
	b.cur = s
	b.curMu.Unlock()
	return s, nil
}

func (b *Backend) start(ctx context.Context, req model.ChatRequest, release func()) (*stream, error) {
	if b.closed {
		return nil, errClosed
	}
	text, err := b.render(req)
	if err != nil {
		return nil, fmt.Errorf("render prompt: %w", err)
	}
	toks := b.tok.Encode(text, true)
	if len(toks) == 0 {
		return nil, errors.New("the prompt is empty")
	}
	if len(toks) >= b.maxCtx {
		return nil, fmt.Errorf("%w: the prompt has %d tokens, more than the context of %d allows", model.ErrPromptTooLong, len(toks), b.maxCtx)
	}
	constrained := req.Constrain
	switch b.opts.Constrain {
	case ConstrainOn:
		constrained = true
	case ConstrainOff:
		constrained = false
	}
	constrained = constrained && len(req.Tools) > 0

	sctx, cancel := context.WithCancel(ctx)
	s := &stream{
		b:       b,
		ctx:     sctx,
		cancel:  cancel,
		release: release,
		sampler: newSampler(req.Sampling),
		dec:     b.tok.NewDecoder(),
		inThink: req.Think,
	}
	if constrained {
		s.cons = newConstraint(b, req.Tools, req.ValidIndices)
	}
	s.maxTokens = req.MaxTokens
	if s.maxTokens <= 0 {
		s.maxTokens = DefaultMaxTokens
	}
	// The whole turn must fit the context, including the grace a
	// constrained answer may take to close its call.
	room := b.maxCtx - len(toks) - 1
	if constrained {
		room -= closingGrace
	}
	s.maxTokens = max(1, min(s.maxTokens, room))

	t0 := time.Now()
	kept := b.eng.Reuse(toks)
	held, disk := kept, 0
	if pre := b.prefixLen(req, toks); kept < pre {
		// The cache lost the prefix (a long turn went past the rings) or
		// never had it.
		held, kept, disk, err = b.resume(ctx, toks[:pre], kept)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("prefill the %d prompt tokens of the fixed prefix: %w", pre, err)
		}
	}
	var logits []float32
	logits, err = b.eng.Eval(ctx, toks[held:], spark.LogitsLast)
	s.stats = model.Stats{PromptTokens: len(toks), CachedTokens: kept, DiskTokens: disk, Prefill: time.Since(t0)}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("prefill %d prompt tokens: %w", len(toks)-held, err)
	}
	s.logits = logits
	s.feed = -1
	if b.repack {
		b.repack = false
		if _, err := b.m.StartRepack(); err != nil {
			// The model works as loaded; only the speed-up is lost.
			b.warn(fmt.Sprintf("weights not repacked: %v", err))
		}
	}
	return s, nil
}

// render renders the whole prompt of req, unless the caller did.
func (b *Backend) render(req model.ChatRequest) (string, error) {
	if req.Prompt != "" {
		return req.Prompt, nil
	}
	return chat.Render(req.Messages, req.Tools, chat.Options{Thinking: req.Think, AddGenerationPrompt: true})
}

func sortedByPiece(tok *tokenizer.Tokenizer) []int32 {
	ids := make([]int32, tok.VocabSize())
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int { return strings.Compare(tok.Piece(int(a)), tok.Piece(int(b))) })
	return ids
}
