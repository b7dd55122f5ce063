package spark

import (
	"math"

	"github.com/droidgo/droidgo/model/quant"
)

// refModel is a plain float64 implementation of the Spark forward pass,
// written straight from the reference semantics (spark-x2.5.md) with no
// cache, no batching and no rounding: every position attends over
// explicitly recomputed keys and values.
type refModel struct {
	m    *Model
	gelu func(float64) float64
}

func dequant(w *Weight) [][]float64 {
	out := make([][]float64, w.Rows)
	buf := make([]float32, w.Cols)
	for r := range out {
		if err := quant.DequantizeRow(w.Type, w.Row(r), buf); err != nil {
			panic(err)
		}
		out[r] = make([]float64, w.Cols)
		for i, v := range buf {
			out[r][i] = float64(v)
		}
	}
	return out
}

func refMatVec(w [][]float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for r, row := range w {
		var s float64
		for i, v := range row {
			s += v * x[i]
		}
		y[r] = s
	}
	return y
}

func refRMSNorm(x []float64, w []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(w[i]) * v * s
	}
	return y
}

func refRope(v []float64, pos, dims int, theta float64) {
	half := dims / 2
	for i := 0; i < half; i++ {
		a := float64(pos) * math.Pow(theta, -2*float64(i)/float64(dims))
		c, s := math.Cos(a), math.Sin(a)
		x0, x1 := v[i], v[i+half]
		v[i] = x0*c - x1*s
		v[i+half] = x1*c + x0*s
	}
}

func refGELUErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// logits returns the logits of every position of toks.
func (r *refModel) logits(toks []int) [][]float64 {
	m := r.m
	c := m.Config
	T := len(toks)
	hd := c.HeadDim
	emb := dequant(&m.Embed)
	x := make([][]float64, T)
	for t, tok := range toks {
		x[t] = append([]float64(nil), emb[tok]...)
	}
	for l := range m.Layers {
		L := &m.Layers[l]
		qkvW, gateW, outW := dequant(&L.QKV), dequant(&L.Gate), dequant(&L.Out)
		fgW, fuW, fdW := dequant(&L.FFNGate), dequant(&L.FFNUp), dequant(&L.FFNDown)
		dims, theta := c.RopeDimsFull, c.RopeThetaFull
		if c.Sliding[l] {
			dims, theta = c.RopeDimsSWA, c.RopeThetaSWA
		}
		qs := make([][]float64, T)
		ks := make([][]float64, T)
		vs := make([][]float64, T)
		gs := make([][]float64, T)
		for t := range toks {
			h := refRMSNorm(x[t], L.AttnNorm, c.Eps)
			qkv := refMatVec(qkvW, h)
			gs[t] = refMatVec(gateW, h)
			qs[t] = qkv[:c.QDim()]
			ks[t] = qkv[c.QDim() : c.QDim()+c.KVDim()]
			vs[t] = qkv[c.QDim()+c.KVDim():]
			for h := 0; h < c.Heads; h++ {
				refRope(qs[t][h*hd:(h+1)*hd], t, dims, theta)
			}
			for h := 0; h < c.KVHeads; h++ {
				refRope(ks[t][h*hd:(h+1)*hd], t, dims, theta)
			}
		}
		for t := range toks {
			o := make([]float64, c.QDim())
			for h := 0; h < c.Heads; h++ {
				kh := h / (c.Heads / c.KVHeads)
				var ws []float64
				var js []int
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					if c.Sliding[l] && t-j >= c.Window {
						continue
					}
					var s float64
					for i := 0; i < hd; i++ {
						s += qs[t][h*hd+i] * ks[j][kh*hd+i]
					}
					s /= math.Sqrt(float64(hd))
					ws = append(ws, s)
					js = append(js, j)
					mx = math.Max(mx, s)
				}
				var sum float64
				for i := range ws {
					ws[i] = math.Exp(ws[i] - mx)
					sum += ws[i]
				}
				g := 1 / (1 + math.Exp(-gs[t][h]))
				for i, j := range js {
					for d := 0; d < hd; d++ {
						o[h*hd+d] += ws[i] / sum * vs[j][kh*hd+d] * g
					}
				}
			}
			att := refMatVec(outW, o)
			for i := range x[t] {
				x[t][i] += att[i]
			}
			h := refRMSNorm(x[t], L.FFNNorm, c.Eps)
			a, u := refMatVec(fgW, h), refMatVec(fuW, h)
			for i := range a {
				a[i] = r.gelu(a[i]) * u[i]
			}
			d := refMatVec(fdW, a)
			for i := range x[t] {
				x[t][i] += d[i]
			}
		}
	}
	head := dequant(&m.Output)
	out := make([][]float64, T)
	for t := range toks {
		out[t] = refMatVec(head, refRMSNorm(x[t], m.OutputNorm, c.Eps))
	}
	return out
}
