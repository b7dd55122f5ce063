package quant

import (
	"encoding/binary"
	"math"
)

// BlockQ8K is ggml's block_q8_K: the activation format that K-quant weights
// are dotted with.
type BlockQ8K struct {
	D     float32
	Qs    [QK_K]int8
	Bsums [QK_K / 16]int16
}

// BlockQ8_0 is an activation block for Q8_0 and Q4_0 weights. D holds the
// fp16-rounded scale as a float32, as ggml stores it in a half.
type BlockQ8_0 struct {
	D  float32
	Qs [32]int8
}

// QuantizeQ8K quantises x (a multiple of 256 long) exactly as ggml's
// quantize_row_q8_K_ref, which is also what its CPU backend uses.
func QuantizeQ8K(x []float32, y []BlockQ8K) {
	for i := range y {
		xs := x[i*QK_K : (i+1)*QK_K]
		b := &y[i]
		var mx, amax float32
		for _, v := range xs {
			if ax := abs32(v); ax > amax {
				amax = ax
				mx = v
			}
		}
		if amax == 0 {
			*b = BlockQ8K{}
			continue
		}
		iscale := -127 / mx
		for j, v := range xs {
			b.Qs[j] = int8(min(127, nearestInt(float32(iscale*v))))
		}
		for j := 0; j < QK_K/16; j++ {
			s := 0
			for _, q := range b.Qs[j*16 : j*16+16] {
				s += int(q)
			}
			b.Bsums[j] = int16(s)
		}
		b.D = 1 / iscale
	}
}

// QuantizeQ8_0 quantises activations like ggml's x86 CPU quantize_row_q8_0:
// d = max|x|/127 stored as fp16, x*127/max rounded half to even. (The
// portable reference rounds half away from zero; the CPU kernels that
// produced the llama.cpp reference data do not.)
func QuantizeQ8_0(x []float32, y []BlockQ8_0) {
	for i := range y {
		xs := x[i*32 : i*32+32]
		var amax float32
		for _, v := range xs {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		y[i].D = FP16ToFP32(FP32ToFP16(d))
		for j, v := range xs {
			y[i].Qs[j] = int8(math.RoundToEven(float64(float32(v * id))))
		}
	}
}

// RoundF16 rounds every element to the nearest fp16 value (the activation
// conversion ggml does before an F16 dot product).
func RoundF16(x []float32) {
	for i, v := range x {
		x[i] = FP16ToFP32(FP32ToFP16(v))
	}
}

// RoundBF16 rounds every element to the nearest bf16 value.
func RoundBF16(x []float32) {
	for i, v := range x {
		x[i] = BF16ToFP32(FP32ToBF16(v))
	}
}

// DotF32 returns the dot product of an F32 weight row with x.
func DotF32(w []byte, x []float32) float32 {
	n := len(x)
	wf := asFloat32s(w[:4*n])
	if wf == nil {
		var s float32
		for i := range x {
			s += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * x[i]
		}
		return s
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += wf[i] * x[i]
		s1 += wf[i+1] * x[i+1]
		s2 += wf[i+2] * x[i+2]
		s3 += wf[i+3] * x[i+3]
	}
	for ; i < n; i++ {
		s0 += wf[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotF16 returns the dot product of an F16 weight row with x (which the
// caller has rounded with RoundF16 to mimic ggml).
func DotF16(w []byte, x []float32) float32 {
	tab := f16Table()
	var s0, s1 float32
	n := len(x)
	w = w[:2*n]
	i := 0
	for ; i+2 <= n; i += 2 {
		s0 += tab[binary.LittleEndian.Uint16(w[2*i:])] * x[i]
		s1 += tab[binary.LittleEndian.Uint16(w[2*i+2:])] * x[i+1]
	}
	for ; i < n; i++ {
		s0 += tab[binary.LittleEndian.Uint16(w[2*i:])] * x[i]
	}
	return s0 + s1
}

// DotBF16 returns the dot product of a BF16 weight row with x (rounded with
// RoundBF16 by the caller to mimic ggml).
func DotBF16(w []byte, x []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(x)
	w = w[:2*n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:]))<<16) * x[i]
		s1 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i+2:]))<<16) * x[i+1]
		s2 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i+4:]))<<16) * x[i+2]
		s3 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i+6:]))<<16) * x[i+3]
	}
	for ; i < n; i++ {
		s0 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:]))<<16) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// DotQ8_0 returns the dot product of a Q8_0 weight row with Q8_0 activations.
func DotQ8_0(w []byte, a []BlockQ8_0) float32 {
	var sum float32
	for i := range a {
		blk := w[i*BlockQ8_0Size : (i+1)*BlockQ8_0Size]
		qs := blk[2:34]
		var isum int32
		for j, q := range a[i].Qs {
			isum += int32(int8(qs[j])) * int32(q)
		}
		sum += f16At(blk, 0) * a[i].D * float32(isum)
	}
	return sum
}

// DotQ4_0 returns the dot product of a Q4_0 weight row with Q8_0 activations.
func DotQ4_0(w []byte, a []BlockQ8_0) float32 {
	var sum float32
	for i := range a {
		blk := w[i*BlockQ4_0Size : (i+1)*BlockQ4_0Size]
		var isum int32
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			isum += (int32(q&0xF) - 8) * int32(a[i].Qs[j])
			isum += (int32(q>>4) - 8) * int32(a[i].Qs[j+16])
		}
		sum += f16At(blk, 0) * a[i].D * float32(isum)
	}
	return sum
}

// DotQ4K returns the dot product of a Q4_K weight row with Q8_K activations.
func DotQ4K(w []byte, a []BlockQ8K) float32 {
	var sum float32
	for i := range a {
		blk := w[i*BlockQ4_KSize : (i+1)*BlockQ4_KSize]
		y := &a[i]
		scales := blk[4:16]
		q := blk[16:]
		var isum, msum int32
		for j := 0; j < QK_K/64; j++ {
			sc1, m1 := ScaleMinK4(2*j, scales)
			sc2, m2 := ScaleMinK4(2*j+1, scales)
			qs := q[32*j : 32*j+32]
			a8 := y.Qs[64*j : 64*j+64]
			var s1, s2 int32
			for l := 0; l < 32; l++ {
				s1 += int32(qs[l]&0xF) * int32(a8[l])
				s2 += int32(qs[l]>>4) * int32(a8[32+l])
			}
			isum += int32(sc1)*s1 + int32(sc2)*s2
			msum += int32(m1)*(int32(y.Bsums[4*j])+int32(y.Bsums[4*j+1])) + int32(m2)*(int32(y.Bsums[4*j+2])+int32(y.Bsums[4*j+3]))
		}
		sum += f16At(blk, 0)*y.D*float32(isum) - f16At(blk, 2)*y.D*float32(msum)
	}
	return sum
}

// DotQ5K returns the dot product of a Q5_K weight row with Q8_K activations.
func DotQ5K(w []byte, a []BlockQ8K) float32 {
	var sum float32
	for i := range a {
		blk := w[i*BlockQ5_KSize : (i+1)*BlockQ5_KSize]
		y := &a[i]
		scales := blk[4:16]
		qh := blk[16:48]
		ql := blk[48:]
		var isum, msum int32
		u1, u2 := uint8(1), uint8(2)
		for j := 0; j < QK_K/64; j++ {
			sc1, m1 := ScaleMinK4(2*j, scales)
			sc2, m2 := ScaleMinK4(2*j+1, scales)
			qs := ql[32*j : 32*j+32]
			a8 := y.Qs[64*j : 64*j+64]
			var s1, s2 int32
			for l := 0; l < 32; l++ {
				v1 := int32(qs[l] & 0xF)
				v2 := int32(qs[l] >> 4)
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				s1 += v1 * int32(a8[l])
				s2 += v2 * int32(a8[32+l])
			}
			isum += int32(sc1)*s1 + int32(sc2)*s2
			msum += int32(m1)*(int32(y.Bsums[4*j])+int32(y.Bsums[4*j+1])) + int32(m2)*(int32(y.Bsums[4*j+2])+int32(y.Bsums[4*j+3]))
			u1 <<= 2
			u2 <<= 2
		}
		sum += f16At(blk, 0)*y.D*float32(isum) - f16At(blk, 2)*y.D*float32(msum)
	}
	return sum
}

// DotQ6K returns the dot product of a Q6_K weight row with Q8_K activations.
func DotQ6K(w []byte, a []BlockQ8K) float32 {
	var sum float32
	for i := range a {
		blk := w[i*BlockQ6_KSize : (i+1)*BlockQ6_KSize]
		y := &a[i]
		ql := blk[0:128]
		qh := blk[128:192]
		sc := blk[192:208]
		var isum int32
		for n := 0; n < 2; n++ {
			l0 := ql[64*n : 64*n+64]
			h0 := qh[32*n : 32*n+32]
			a8 := y.Qs[128*n : 128*n+128]
			s := sc[8*n : 8*n+8]
			var sub [8]int32
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int32((l0[l]&0xF)|((h0[l]>>0)&3)<<4) - 32
				q2 := int32((l0[l+32]&0xF)|((h0[l]>>2)&3)<<4) - 32
				q3 := int32((l0[l]>>4)|((h0[l]>>4)&3)<<4) - 32
				q4 := int32((l0[l+32]>>4)|((h0[l]>>6)&3)<<4) - 32
				sub[is] += q1 * int32(a8[l])
				sub[is+2] += q2 * int32(a8[l+32])
				sub[is+4] += q3 * int32(a8[l+64])
				sub[is+6] += q4 * int32(a8[l+96])
			}
			for k := 0; k < 8; k++ {
				isum += int32(int8(s[k])) * sub[k]
			}
		}
		sum += f16At(blk, 208) * y.D * float32(isum)
	}
	return sum
}
