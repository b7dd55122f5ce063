package spark

// This file is the Spark-X2.5 forward pass written plainly, the way
// llama2.c writes Llama's: float32 values, one function per step, one token
// at a time, every key and value kept, no threads. Read it first.
//
// The Engine (engine.go) computes the same function fast: it fuses the
// steps below into five dispatches per layer over a worker pool, runs
// chunks of prompt tokens together, keeps sliding layers in rings, and by
// default rounds activations for the integer kernels of model/kernels. Its
// tests (engine_test.go) hold it to this file: to float32 rounding with
// Options.FloatActivations, within the activation rounding otherwise.
//
// Sums (dot products, the mean square of RMSNorm, the softmax denominator)
// are accumulated in float64, so that this file is more exact than the
// engine and a difference between them is the engine's.

import (
	"fmt"
	"math"

	"github.com/droidgo/droidgo/model/quant"
)

// Reference runs a Model the plain way, one token at a time, for tests and
// for reading. It keeps the keys and values of every position (sliding
// layers simply skip the old ones), so its memory grows with the sequence,
// up to the model's context length.
type Reference struct {
	m *Model
	// pos is the position of the next token.
	pos int
	// keys and vals hold, per layer, KVDim floats per position: the keys
	// after RoPE, and the values.
	keys, vals [][]float32
	err        error     // the first error; every step after it is skipped
	row        []float32 // one dequantised weight row
	raw        []byte    // one encoded row of a repacked weight
}

// NewReference returns a Reference for m at position 0.
func NewReference(m *Model) *Reference {
	c := &m.Config
	return &Reference{m: m, keys: make([][]float32, c.Layers), vals: make([][]float32, c.Layers)}
}

// Forward runs token tok at the next position and returns the logits of the
// token after it (Vocab floats).
func (r *Reference) Forward(tok int) ([]float32, error) {
	c := &r.m.Config
	if tok < 0 || tok >= c.Vocab {
		return nil, fmt.Errorf("token id %d is out of range [0, %d)", tok, c.Vocab)
	}
	if c.Context > 0 && r.pos >= c.Context {
		return nil, fmt.Errorf("context full: %d positions", r.pos)
	}
	if r.err != nil {
		return nil, r.err
	}
	// An Engine on the same model may swap in repacked weights between its
	// passes; it does so under the write lock.
	r.m.evalMu.RLock()
	defer r.m.evalMu.RUnlock()
	x := r.embed(tok) // the residual stream
	for l := range r.m.Layers {
		r.attention(l, x)
		r.feedForward(l, x)
	}
	logits := r.head(x)
	if r.err != nil {
		return nil, r.err
	}
	r.pos++
	return logits, nil
}

// embed returns the embedding row of tok.
func (r *Reference) embed(tok int) []float32 {
	x := make([]float32, r.m.Embed.Cols)
	r.dequantRow(&r.m.Embed, tok, x)
	return x
}

// attention adds layer l's attention block to the residual stream x:
// RMSNorm, the fused q|k|v projection and the head-wise gate, RoPE on q and
// k, causal attention over the cached positions (the last Window ones on a
// sliding layer) with grouped KV heads, each head's output times the
// sigmoid of its gate, and the output projection.
func (r *Reference) attention(l int, x []float32) {
	c := &r.m.Config
	L := &r.m.Layers[l]
	hd, QD, KD := c.HeadDim, c.QDim(), c.KVDim()

	h := rmsNormRef(x, L.AttnNorm, c.Eps)
	qkv := r.matVec(&L.QKV, h)
	gate := r.matVec(&L.Gate, h) // one value per query head
	q, k, v := qkv[:QD], qkv[QD:QD+KD], qkv[QD+KD:]

	dims, theta := c.RopeDimsFull, c.RopeThetaFull
	first := 0 // the oldest position a query sees
	if c.Sliding[l] {
		dims, theta = c.RopeDimsSWA, c.RopeThetaSWA
		first = max(0, r.pos-c.Window+1)
	}
	for i := 0; i < c.Heads; i++ {
		rope(q[i*hd:(i+1)*hd], r.pos, dims, theta)
	}
	for i := 0; i < c.KVHeads; i++ {
		rope(k[i*hd:(i+1)*hd], r.pos, dims, theta)
	}
	r.keys[l] = append(r.keys[l], k...)
	r.vals[l] = append(r.vals[l], v...)

	o := make([]float32, QD)
	group := c.Heads / c.KVHeads // query heads per KV head
	for i := 0; i < c.Heads; i++ {
		oh := o[i*hd : (i+1)*hd]
		attend(oh, q[i*hd:(i+1)*hd], r.keys[l], r.vals[l], i/group*hd, KD, first, r.pos)
		g := sigmoid(gate[i])
		for d := range oh {
			oh[d] *= g
		}
	}
	addTo(x, r.matVec(&L.Out, o))
}

// attend writes to out the attention of query q over positions first..last:
// softmax(q·k / sqrt(len(q))) weighting the values. The key and value of
// position p are the len(q) floats at p*stride+off of keys and vals.
func attend(out, q, keys, vals []float32, off, stride, first, last int) {
	hd := len(q)
	scale := 1 / math.Sqrt(float64(hd))
	w := make([]float64, last-first+1)
	mx := math.Inf(-1)
	for j := range w {
		k := keys[(first+j)*stride+off:][:hd]
		w[j] = dot(q, k) * scale
		mx = max(mx, w[j])
	}
	var sum float64
	for j := range w {
		w[j] = math.Exp(w[j] - mx)
		sum += w[j]
	}
	acc := make([]float64, hd)
	for j := range w {
		v := vals[(first+j)*stride+off:][:hd]
		for d := range acc {
			acc[d] += w[j] / sum * float64(v[d])
		}
	}
	for d := range out {
		out[d] = float32(acc[d])
	}
}

// feedForward adds layer l's feed-forward block to the residual stream x:
// RMSNorm, GEGLU (gelu(gate·h) * (up·h)) and the down projection.
func (r *Reference) feedForward(l int, x []float32) {
	c := &r.m.Config
	L := &r.m.Layers[l]
	h := rmsNormRef(x, L.FFNNorm, c.Eps)
	g, u := r.matVec(&L.FFNGate, h), r.matVec(&L.FFNUp, h)
	for i := range g {
		g[i] = geluErf(g[i]) * u[i]
	}
	addTo(x, r.matVec(&L.FFNDown, g))
}

// head returns the logits: the output head (the embedding, tied) times the
// normalised residual stream.
func (r *Reference) head(x []float32) []float32 {
	return r.matVec(&r.m.Output, rmsNormRef(x, r.m.OutputNorm, r.m.Config.Eps))
}

// matVec returns w·x, dequantising w one row at a time so that the
// reference runs even a full model in little memory.
func (r *Reference) matVec(w *Weight, x []float32) []float32 {
	y := make([]float32, w.Rows)
	r.row = grow(r.row, w.Cols)
	for i := range y {
		r.dequantRow(w, i, r.row)
		y[i] = float32(dot(r.row, x))
	}
	return y
}

// dequantRow writes row i of w as floats to dst.
func (r *Reference) dequantRow(w *Weight, i int, dst []float32) {
	if r.err != nil {
		return
	}
	if err := quant.DequantizeRow(w.Type, w.rowTo(i, &r.raw), dst); err != nil {
		r.err = fmt.Errorf("%s row %d: %w", w.Name, i, err)
	}
}

// rmsNormRef returns w * x / sqrt(mean(x²) + eps).
func rmsNormRef(x, w []float32, eps float64) []float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(float64(w[i]) * float64(v) * s)
	}
	return y
}

// rope rotates the first dims elements of one head at position pos, NEOX
// style: element i pairs with i+dims/2 and turns by pos * theta^(-2i/dims).
// Elements from dims on are left as they are (partial rotation).
func rope(v []float32, pos, dims int, theta float64) {
	half := dims / 2
	for i := 0; i < half; i++ {
		a := float64(pos) * math.Pow(theta, -2*float64(i)/float64(dims))
		c, s := math.Cos(a), math.Sin(a)
		x0, x1 := float64(v[i]), float64(v[i+half])
		v[i] = float32(x0*c - x1*s)
		v[i+half] = float32(x1*c + x0*s)
	}
}

// geluErf is the exact GELU, 0.5*x*(1+erf(x/sqrt2)), written with erfc so
// that the negative tail keeps its digits (1+erf cancels there). The engine
// uses it where its vector kernel does not reach.
func geluErf(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * math.Erfc(-v/math.Sqrt2))
}

// sigmoid is 1/(1+e^-x), the head-wise output gate.
func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// dot returns a·b summed in float64.
func dot(a, b []float32) float64 {
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

// addTo adds d to x.
func addTo(x, d []float32) {
	for i := range x {
		x[i] += d[i]
	}
}
