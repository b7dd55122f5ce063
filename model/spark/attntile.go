package spark

import (
	"math"

	"github.com/droidgo/droidgo/model/kernels"
)

// Prefill attention on matrix tiles (kernels.TileAttention: the amx
// level). A span of a pass with at least tileMinTokens tokens has, per
// layer and KV head, its keys and values converted once into the tiles'
// operand form (spanTiles, a dispatch of its own, stepPack) for every
// position one of its tokens sees; its attention tasks then take
// tileQueries query vectors each (32/g tokens of the g query heads of one
// KV head, in up to tilePairs pairs), computing their scores, softmax and
// outputs on tiles. Decode and short spans keep the vector path
// (attendF16).

const (
	// tileQueries is the query vectors of a row pair, the rows of one
	// call of the tile kernel (two row tiles).
	tileQueries = 32
	// tilePairs is the row pairs of a tile task at most.
	tilePairs = 4
	// tileBlock is the positions whose keys or values a tile task's row
	// pairs take in turn.
	tileBlock = 256
	// tileMinTokens is the fewest tokens of a span that take the tile
	// path: the conversion costs about as much per position as 8 tokens'
	// vector attention, and a span of fewer tokens makes too few tasks
	// (32/g tokens each) to share among the threads.
	tileMinTokens = 32
	// tileMaxPositions bounds the positions the converted keys and values
	// of a pass's tile spans hold together (tileArenaBytes: 32 MiB for the
	// 1.7B); spans beyond it take the vector path.
	tileMaxPositions = 8192
)

// spanTiles is one span's keys and values of the current layer in the
// tiles' form: positions first..first+n-1, per KV head the keys as rows of
// head dimensions and the values as rows (one per dimension) of positions.
type spanTiles struct {
	first, n int
	k, v     []kernels.HalfTiles
}

// tileSpan reports whether span sp takes the tile path in layer l.
func (e *engine) tileSpan(sp *span, l int) bool {
	c := &e.c
	g := c.Heads / c.KVHeads
	if e.opts.KV != KVF16 || e.opts.vectorAttention || !kernels.TileAttention() || sp.n < tileMinTokens ||
		g > tileQueries || tileQueries%g != 0 || c.HeadDim%32 != 0 {
		return false
	}
	_, n := e.tileRange(sp, l)
	return n <= e.tileBudget()
}

// tileBudget is tileMaxPositions (or the tests' Options.tileBudget).
func (e *engine) tileBudget() int {
	if e.opts.tileBudget > 0 {
		return e.opts.tileBudget
	}
	return tileMaxPositions
}

// tileArenaBytes is the memory of the converted keys and values of a pass
// at most: tileMaxPositions of every KV head, in bf16 hi and lo parts.
func tileArenaBytes(c *Config) int {
	return c.KVHeads * (kernels.HalfTilesBytes(tileMaxPositions, c.HeadDim) + kernels.HalfTilesBytes(c.HeadDim, tileMaxPositions))
}

// planTiles decides which spans of the pass take tile attention in layer
// l (eligible ones, in order, while their positions fit tileMaxPositions
// together), lays out their tiles in one arena (so what the engine keeps
// is bounded by tileArenaBytes whatever the passes' spans) and returns the
// pack chunks of stepPack.
func (e *engine) planTiles(spans []span, l int) (packs int) {
	c := &e.c
	hd := c.HeadDim
	e.tileIdx = e.tileIdx[:0]
	e.spanTile = grow(e.spanTile, len(spans))
	clear(e.spanTile)
	if len(e.tiles) < len(spans) {
		e.tiles = append(e.tiles, make([]spanTiles, len(spans)-len(e.tiles))...)
	}
	total, need := 0, 0
	for i := range spans {
		if !e.tileSpan(&spans[i], l) {
			continue
		}
		_, n := e.tileRange(&spans[i], l)
		if total+n > e.tileBudget() {
			continue
		}
		total += n
		need += c.KVHeads * (kernels.HalfTilesBytes(n, hd) + kernels.HalfTilesBytes(hd, n))
		e.spanTile[i] = true
		e.tileIdx = append(e.tileIdx, i)
	}
	e.tileMem = grow(e.tileMem, need)
	off := 0
	carve := func(n int) []byte { off += n; return e.tileMem[off-n : off] }
	for _, i := range e.tileIdx {
		st := &e.tiles[i]
		st.first, st.n = e.tileRange(&spans[i], l)
		if len(st.k) < c.KVHeads {
			st.k, st.v = make([]kernels.HalfTiles, c.KVHeads), make([]kernels.HalfTiles, c.KVHeads)
		}
		for kh := range c.KVHeads {
			st.k[kh].Reset(st.n, hd, carve(kernels.HalfTilesBytes(st.n, hd)))
			st.v[kh].Reset(hd, st.n, carve(kernels.HalfTilesBytes(hd, st.n)))
		}
		nk, nv := e.packChunks(st.n)
		packs += c.KVHeads * (nk + nv)
	}
	return packs
}

// tileRange returns the first position a token of sp sees in layer l and
// how many positions from there its tokens see.
func (e *engine) tileRange(sp *span, l int) (first, n int) {
	if e.c.Sliding[l] {
		first = max(0, sp.p0-e.c.Window+1)
	}
	return first, sp.p0 + sp.n - first
}

// packKeys is the keys of a pack chunk (32 rows of values make one).
const packKeys = 256

// packChunks returns the pack chunks of one KV head of a tile span of n
// positions: blocks of packKeys keys, then blocks of 32 value rows.
func (e *engine) packChunks(n int) (keys, vals int) {
	return (n + packKeys - 1) / packKeys, e.c.HeadDim / 32
}

// doPack converts one pack chunk of the current layer: a block of one KV
// head's keys or value rows of one tile span into its tiles.
func (e *engine) doPack(w, ch int) {
	c := &e.c
	l := e.cur.layer
	hd := c.HeadDim
	var i, nk, nv int
	for _, i = range e.tileIdx {
		nk, nv = e.packChunks(e.tiles[i].n)
		if ch < c.KVHeads*(nk+nv) {
			break
		}
		ch -= c.KVHeads * (nk + nv)
	}
	kh, r := ch/(nk+nv), ch%(nk+nv)
	sp := &e.cur.spans[i]
	st := &e.tiles[i]
	stage := &e.hstage[w]
	if r < nk {
		a, b := r*packKeys, min(st.n, (r+1)*packKeys)
		runs := sp.s.runs(l, st.first+a, b-a, e.runs[w][:0])
		e.runs[w] = runs
		stage.Reset(b-a, hd)
		for _, r := range runs {
			o := (kh*r.buf.cap + r.s) * hd
			stage.Set(r.j, 0, r.buf.k16[o*2:(o+r.n*hd)*2])
		}
		st.k[kh].Pack(stage, a)
		return
	}
	d0 := (r - nk) * 32
	runs := sp.s.runs(l, st.first, st.n, e.runs[w][:0])
	e.runs[w] = runs
	stage.Reset(32, st.n)
	for d := range 32 {
		for _, r := range runs {
			o := (kh*hd+d0+d)*r.buf.cap + r.s
			stage.Set(d, r.j, r.buf.v16[o*2:(o+r.n)*2])
		}
	}
	st.v[kh].Pack(stage, d0)
}

// tileTokens returns the tokens of a tile task of span sp: tilePairs row
// pairs of 32 query vectors, fewer where that would leave fewer than 4
// tasks a thread.
func (e *engine) tileTokens(sp *span) int {
	c := &e.c
	per := tileQueries / (c.Heads / c.KVHeads)
	pairs := tilePairs
	for pairs > 1 && c.KVHeads*((sp.n+per*pairs-1)/(per*pairs)) < 4*e.pool.threads {
		pairs--
	}
	return per * pairs
}

// attendTiles is attendF16 on tiles for rows t0..t1-1 of tile span sp and
// KV head kh: the scores of the g*nt query vectors (in pairs of row tiles)
// against the positions from the first token's first to the last one's
// own (32-aligned), each vector's softmax over its own positions (0
// elsewhere), rounded to f16, and the outputs. The positions go in blocks
// of tileBlock, every row pair through a block before the next: a block's
// keys or values (256 KiB at 256 positions of a 256-wide head) stay in L2
// while the pairs pass, where a pair at a time would read them all from
// beyond it once per pair.
func (e *engine) attendTiles(w int, sp *span, st *spanTiles, kh, t0, t1 int) {
	c := &e.c
	l := e.cur.layer
	hd, rows, QD := c.HeadDim, c.QKVRows(), c.QDim()
	g := c.Heads / c.KVHeads
	nt := t1 - t0
	G := g * nt
	np := (G + tileQueries - 1) / tileQueries
	h0 := kh * g
	// pos(i) is token t0+i's position, seen(i) its first visible one.
	pos := func(i int) int { return sp.p0 + t0 + i - sp.t0 }
	seen := func(i int) int {
		if c.Sliding[l] {
			return max(0, pos(i)-c.Window+1)
		}
		return 0
	}
	j0 := (seen(0) - st.first) &^ 31
	j1 := (pos(nt-1) - st.first + 32) &^ 31
	nc := j1 - j0
	if need := np * tileQueries * nc; len(e.gsc[w]) < need {
		e.gsc[w] = make([]float32, max(need, 2*len(e.gsc[w])))
	}
	sc := e.gsc[w][:np*tileQueries*nc]
	q := e.q16[w][:G*hd]
	for i := range nt {
		t := t0 + i
		copy(q[i*g*hd:(i+1)*g*hd], e.qkv[t*rows+h0*hd:t*rows+(h0+g)*hd])
	}
	kernels.RoundF16(q)
	// rows returns the query vectors of row pair p.
	pair := func(p int) (first, m int) { return p * tileQueries, min(tileQueries, G-p*tileQueries) }
	for b0 := j0; b0 < j1; b0 += tileBlock {
		b1 := min(j1, b0+tileBlock)
		for p := range np {
			f, m := pair(p)
			kernels.MulHalves(q[f*hd:], hd, m, &st.k[kh], b0, b1, 0, hd, sc[f*nc+b0-j0:], nc, false)
		}
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	for v := range G {
		row := sc[v*nc : (v+1)*nc]
		a, b := seen(v/g)-st.first-j0, pos(v/g)-st.first-j0+1
		softmax(row[a:b], scale)
		clear(row[:a])
		clear(row[b:])
	}
	kernels.RoundF16(sc[:G*nc])
	o := e.otile[w]
	for b0 := j0; b0 < j1; b0 += tileBlock {
		b1 := min(j1, b0+tileBlock)
		for p := range np {
			f, m := pair(p)
			kernels.MulHalves(sc[f*nc+b0-j0:], nc, m, &st.v[kh], 0, hd, b0, b1, o[f*hd:], hd, b0 > j0)
		}
	}
	for i := range nt {
		t := t0 + i
		copy(e.att[t*QD+h0*hd:t*QD+(h0+g)*hd], o[i*g*hd:(i+1)*g*hd])
	}
}
