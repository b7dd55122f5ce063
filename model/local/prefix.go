package local

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/chat"
	"github.com/droidgo/droidgo/model/kvcache"
	"github.com/droidgo/droidgo/model/spark"
)

// The fixed prefix of an agent's prompts is the rendered system message
// with the tool schemas: the same at every step and in every run with the
// same settings. Its KV state is kept twice: in memory (b.snap), so that a
// turn of any length never makes the next step recompute it (the sliding
// rings only hold the last few thousand positions), and on disk
// (Options.PromptCache), so that the next run loads it.

// prefixLen returns how many of toks belong to the fixed prefix: the
// tokens shared with the rendering of the leading system messages alone,
// or 0 when there is none.
func (b *Backend) prefixLen(req model.ChatRequest, toks []int) int {
	if req.Prompt != "" {
		return b.commonPrefix(req.Prefix, toks)
	}
	n := 0
	for n < len(req.Messages) && req.Messages[n].Role == model.RoleSystem {
		n++
	}
	if n == 0 || n == len(req.Messages) {
		return 0
	}
	text, err := chat.Render(req.Messages[:n], req.Tools, chat.Options{Thinking: req.Think})
	if err != nil {
		return 0
	}
	return b.commonPrefix(text, toks)
}

// commonPrefix returns how many of toks the tokens of prefix start with,
// leaving at least the last of toks to compute.
func (b *Backend) commonPrefix(prefix string, toks []int) int {
	if prefix == "" {
		return 0
	}
	pre := b.tok.Encode(prefix, true)
	p := 0
	for p < len(pre) && p < len(toks)-1 && pre[p] == toks[p] {
		p++
	}
	return p
}

// resume makes the engine hold exactly prefix (or more of toks, if it
// already does), from the in-memory snapshot, the disk cache or by
// computing it. It returns how many tokens the engine then holds, how
// many of them were not computed now, and how many came from disk.
func (b *Backend) resume(ctx context.Context, prefix []int, kept int) (held, cached, disk int, err error) {
	if b.snap != nil && slices.Equal(b.snap.Tokens, prefix) {
		if err := b.eng.Restore(b.snap); err == nil {
			return len(prefix), len(prefix), 0, nil
		}
	}
	key := ""
	if b.cache != nil && b.identity != nil {
		key = kvcache.Key(b.identity, []byte(b.eng.Numerics()), tokenBytes(prefix), []byte(b.tok.Decode(prefix)))
		if data, ok := b.cache.Load(key); ok {
			st, err := spark.DecodeState(data)
			if err == nil && !slices.Equal(st.Tokens, prefix) {
				err = fmt.Errorf("it holds other tokens")
			}
			if err == nil {
				err = b.eng.Restore(st)
			}
			if err == nil {
				b.snap = st
				return len(prefix), len(prefix), len(prefix), nil
			}
			b.warn(fmt.Sprintf("prompt cache entry %s ignored (%v); it will be rebuilt", key[:12], err))
		}
	}
	kept = b.eng.Truncate(kept)
	numerics := b.eng.Numerics()
	if err := b.eng.Prefill(ctx, prefix[kept:]); err != nil {
		return 0, 0, 0, err
	}
	b.snap = b.eng.Save()
	// A prefill during which repacked weights were installed mixed two
	// layouts: its state matches neither key, and is kept in memory only.
	if key != "" && b.eng.Numerics() == numerics {
		meta := kvcache.Meta{Model: filepath.Base(b.path), Tokens: len(prefix), KV: b.eng.KV().String(), Created: time.Now().UTC()}
		if err := b.cache.Store(key, meta, b.snap.Encode()); err != nil {
			b.warn(err.Error())
		}
	}
	return len(prefix), kept, 0, nil
}

func tokenBytes(toks []int) []byte {
	out := make([]byte, 0, 4*len(toks))
	for _, t := range toks {
		out = binary.LittleEndian.AppendUint32(out, uint32(t))
	}
	return out
}

// identityBytes is the model file's identity for cache keys: its size,
// modification time and a hash of its first and last MiB (the metadata,
// the first tensors and the last). Directories (HF models) have none, and
// are not cached on disk.
func identityBytes(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d %d\n", fi.Size(), fi.ModTime().UnixNano())
	const span = 1 << 20
	if _, err := io.Copy(h, io.LimitReader(f, span)); err != nil {
		return nil
	}
	if fi.Size() > span {
		if _, err := f.Seek(max(span, fi.Size()-span), io.SeekStart); err != nil {
			return nil
		}
		if _, err := io.Copy(h, f); err != nil {
			return nil
		}
	}
	return h.Sum(nil)
}
