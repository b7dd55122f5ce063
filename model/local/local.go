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
	"sync/atomic"
	"time"

	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/spark"
	"github.com/droidgo/droidgo/model/tokenizer"
	"github.com/droidgo/droidgo/model/weightcache"
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
	// CPUs the engine's threads are pinned to (nil: not pinned); see
	// spark.Options.CPUs.
	CPUs []int
	// Cores says where the threads run, in a few words, for Engine
	// ("CPUs 2-7, the fastest 6 of 8 cores").
	Cores string
	// GELU selects the engine's GELU (default: exact erf).
	GELU spark.GELUMode
	// Constrain overrides ChatRequest.Constrain.
	Constrain ConstrainMode
	// MaxContext bounds the cached positions (0: the model's context).
	MaxContext int
	// Memory, when set, is the machine's memory (sysmem.Read): Open
	// refuses a model that does not fit in it (a *sysmem.FitError naming
	// the numbers), and leaves the weights in the file's mapping, with a
	// warning, when the repack's anonymous copy would not fit beside it.
	// nil: not checked.
	Memory *sysmem.Info
	// Sequences is how many sequences the caller runs at once (--vote's
	// chains); the memory check counts RunPositions of KV for each (0: 1).
	Sequences int
	// Batch is the engine's prefill chunk (0: the engine's default).
	Batch int
	// Repack interleaves the Q4_K, Q6_K and Q8_0 weights (spark.Model.StartRepack),
	// where this CPU has kernels for it: from Open on, and the first
	// forward pass waits for it.
	Repack bool
	// WeightsCache, when set, keeps the repack's interleaved weights in a
	// file between runs (spark.Model.StartRepack): a later run maps them
	// instead of copying them into fresh memory.
	WeightsCache *weightcache.Cache
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
	// IdleSequences bounds the sequences of ended turns kept in memory
	// for a later turn that continues one of them (0: DefaultIdle, or
	// with Memory as many as fit beside the model, at least 1).
	IdleSequences int

	ringSlack int // tests: overrides agentRingSlack
}

// Backend runs one Spark model in-process. It implements model.Backend,
// and serves any number of turns at once: every Chat gets a sequence of
// one shared engine, and a spark.Scheduler computes the new tokens of all
// of them in common forward passes (each turn's sampling, answer
// constraint, thinking budget and forced tokens stay its own, on its
// caller's goroutine). A turn's tokens do not depend on the turns beside
// it (see spark.Engine).
//
// Prompts share what they have in common: the fixed prefix (the system
// prompt with the tool schemas) is computed once, or loaded from the
// prompt cache on disk, and every turn that starts with it forks it
// read-only; a turn that continues an ended one (the same conversation
// with more messages) takes over that turn's sequence; and turns that ask
// with the same prompt at the same time (best-of-N voting) compute it
// once.
type Backend struct {
	name     string
	m        *spark.Model
	eng      *spark.Engine
	sched    *spark.Scheduler
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
	// repacked is set once the weights are in their final layout (the
	// background repack started by Open finished, or none was started):
	// no forward pass runs before, so none shares the CPU with the copy
	// or mixes two layouts.
	repacked atomic.Bool
	// ctx ends with Close; starting counts the Chats setting up a turn,
	// which Close waits for.
	ctx      context.Context
	cancel   context.CancelFunc
	starting sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	prefixes []*fixedPrefix     // fixed prefixes in memory, most recent last
	idle     []*spark.Seq       // sequences of ended turns, most recent last
	flights  map[string]*flight // prompts and prefixes being computed
	streams  map[*stream]struct{}
}

// DefaultIdle is the default of Options.IdleSequences.
const DefaultIdle = 16

// maxPrefixes bounds the fixed prefixes kept in memory (one per system
// prompt, tool set and thinking setting in use).
const maxPrefixes = 4

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
	if opts.Memory != nil {
		need := b.memoryNeed()
		repack, why, err := opts.Memory.Fit(need)
		if err != nil {
			b.Close()
			return nil, err
		}
		if opts.Repack && !repack && why != "" {
			b.warn(why)
			opts.Repack = false
		}
		if opts.IdleSequences <= 0 {
			b.opts.IdleSequences = idleThatFit(*opts.Memory, need, repack && opts.Repack)
		}
	}
	if !opts.Repack {
		b.repacked.Store(true)
		return b, nil
	}
	// The repack starts at once, on every core, and the first forward pass
	// waits for it (0.3-0.5 s for the 1.7B Q4_K_M on a 2-core Zen 5), so the
	// first step never shares the CPU with it and every token is computed
	// in one layout: a repack landing mid-run would change a turn's numbers
	// depending on timing.
	if _, err := m.StartRepackNow(opts.WeightsCache); err != nil {
		b.warn(fmt.Sprintf("weights not repacked: %v", err))
		b.repacked.Store(true)
	}
	return b, nil
}

// RunPositions is the KV cache an agent's sequence is counted with when
// Open checks that the model fits: a turn holds the fixed prefix (about
// 1,800 tokens for the 1.7B's system prompt and tools), the screen and the
// history (a few hundred each) and the turn's tokens (the thinking budget
// + 512), about 4,000 positions; this is twice that. The cache grows only
// as positions are used, so a run that holds fewer takes less.
const RunPositions = 8192

// memoryNeed is what the model needs to run: its weights as mapped,
// RunPositions of KV cache for each sequence, the engine's buffers, and
// the repack's anonymous copy.
func (b *Backend) memoryNeed() sysmem.Need {
	c := b.m.Config
	positions := min(RunPositions, b.maxCtx)
	seqs := max(1, b.opts.Sequences)
	return sysmem.Need{
		Model:     filepath.Base(b.path),
		Weights:   b.m.WeightBytes(),
		KV:        int64(seqs) * b.eng.KVBytes(positions),
		Scratch:   spark.ScratchBytes(c, b.eng.Batch()),
		Positions: positions,
		Sequences: seqs,
		KVType:    b.opts.KV.String(),
		Repack:    b.m.RepackBytes(),
	}
}

// idleThatFit is how many ended turns' sequences to keep on a machine
// with mem: as many more sequences as fit in what the model, its counted
// sequences (and the repack's copy when it is made) leave beside the
// reserve, at most DefaultIdle, at least 1 (a run's next turn takes over
// its last turn's sequence, one of those counted).
func idleThatFit(mem sysmem.Info, need sysmem.Need, repack bool) int {
	spare := mem.Available - mem.Reserve() - need.Weights - need.KV - need.Scratch
	if repack {
		spare -= need.Repack
	}
	per := need.KV / int64(max(1, need.Sequences))
	if per <= 0 {
		return DefaultIdle
	}
	return int(max(1, min(DefaultIdle, spare/per)))
}

// waitRepack waits for the background repack to finish, if it has not.
func (b *Backend) waitRepack(ctx context.Context) error {
	if b.repacked.Load() {
		return nil
	}
	if err := b.m.WaitRepack(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The matrices repacked so far stay; the others keep the file's
		// layout, which computes the same.
		if !b.repacked.Swap(true) {
			b.warn(fmt.Sprintf("weights not repacked: %v", err))
		}
	}
	b.repacked.Store(true)
	return nil
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
		name:    "spark:" + filepath.Base(filepath.Clean(path)),
		m:       m,
		tok:     tok,
		opts:    opts,
		path:    path,
		flights: map[string]*flight{},
		streams: map[*stream]struct{}{},
	}
	if b.opts.IdleSequences <= 0 {
		b.opts.IdleSequences = DefaultIdle
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if opts.PromptCache != nil && m.GGUF != nil {
		// HF directories have no identity: their prefixes are not kept
		// on disk.
		b.cache = opts.PromptCache
		b.identity = m.GGUF.Identity()
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
	eng, err := spark.NewEngine(m, spark.Options{Threads: opts.Threads, CPUs: opts.CPUs, GELU: opts.GELU, MaxContext: opts.MaxContext, Batch: opts.Batch, RingSlack: cmp.Or(opts.ringSlack, agentRingSlack), KV: opts.KV})
	if err != nil {
		return nil, err
	}
	b.eng = eng
	if b.sched, err = spark.NewScheduler(eng); err != nil {
		eng.Close()
		return nil, err
	}
	b.maxCtx = eng.MaxContext() // opts.MaxContext, else the model's limit
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

// Engine says how the model runs: its threads, the cores they run on, the
// kernels; for the headers of runs.
func (b *Backend) Engine() model.Engine {
	e := model.Engine{Threads: b.eng.Threads(), CPUs: b.eng.CPUs(), Cores: b.opts.Cores, Kernels: kernels.ISA()}
	if err := b.eng.PinError(); err != nil {
		e.NotPinned = err.Error()
	}
	return e
}

// Tokenizer returns the model's tokenizer.
func (b *Backend) Tokenizer() *tokenizer.Tokenizer { return b.tok }

// Prefilled returns how many tokens the engine has computed in all turns
// (prompt suffixes and fed-back generated tokens; cache hits not counted).
func (b *Backend) Prefilled() int64 { return b.eng.Prefilled() }

// KVBytes returns the memory of the keys and values the backend holds: the
// fixed prefixes shared by the turns, and the sequences' own (the open
// turns' and the ended ones kept for reuse).
func (b *Backend) KVBytes() (prefixes, own int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.prefixes {
		prefixes += p.p.Bytes()
	}
	for _, seq := range b.idle {
		own += seq.Bytes()
	}
	for s := range b.streams {
		own += s.seq.Bytes()
	}
	return prefixes, own
}

// Close ends the streaming turns, if any, and releases the model.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	streams := make([]*stream, 0, len(b.streams))
	for s := range b.streams {
		streams = append(streams, s)
	}
	b.mu.Unlock()
	b.cancel()
	for _, s := range streams {
		s.Close()
	}
	b.starting.Wait()
	b.sched.Close()
	b.mu.Lock()
	idle := b.idle
	b.idle = nil
	b.mu.Unlock()
	for _, seq := range idle {
		seq.Close()
	}
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

// Chat renders and prefills the conversation (reusing what is cached) and
// returns the stream of the assistant turn. The prefill happens here, so
// Stats is complete for the prompt once Chat returns. Chat may be called
// from many goroutines at once.
func (b *Backend) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	s, err := b.start(ctx, req)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (b *Backend) start(ctx context.Context, req model.ChatRequest) (*stream, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errClosed
	}
	b.starting.Add(1)
	b.mu.Unlock()
	defer b.starting.Done()
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

	t0 := time.Now()
	// The turn's context, which Close ends too (while the turn is set
	// up; then by closing the stream).
	sctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(b.ctx, cancel)()
	if err := b.waitRepack(sctx); err != nil {
		cancel()
		return nil, err
	}
	s := &stream{
		b:       b,
		ctx:     sctx,
		cancel:  cancel,
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

	p, err := b.prefill(sctx, req, toks)
	s.stats = model.Stats{PromptTokens: len(toks), CachedTokens: p.cached, DiskTokens: p.disk, Prefill: time.Since(t0)}
	if err != nil {
		cancel()
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case b.ctx.Err() != nil:
			err = errClosed
		}
		return nil, err
	}
	s.seq, s.logits, s.feed = p.seq, p.logits, -1
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		cancel()
		p.seq.Close()
		return nil, errClosed
	}
	b.streams[s] = struct{}{}
	b.mu.Unlock()
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
