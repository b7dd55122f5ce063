package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The quantisers below are ports of ggml's quantize_row_*_ref functions
// (what llama_model_quantize uses without an importance matrix). Products
// are wrapped in float32() so the compiler cannot fuse them into FMAs, which
// would change rounding relative to the C reference.

const groupMaxEps = 1e-15

// nearestInt rounds half to even like ggml's nearest_int (valid for |f| < 2^22).
func nearestInt(f float32) int {
	v := f + 12582912
	return int(int32(math.Float32bits(v)&0x007fffff) - 0x00400000)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// QuantizeRow encodes src as type t into dst (len t.RowSize(len(src))).
func QuantizeRow(t Type, src []float32, dst []byte) error {
	n := len(src)
	if rs := t.RowSize(n); rs < 0 || rs != len(dst) {
		return fmt.Errorf("quantize %s: %d bytes for %d elements", t, len(dst), n)
	}
	le := binary.LittleEndian
	switch t {
	case F32:
		for i, x := range src {
			le.PutUint32(dst[4*i:], math.Float32bits(x))
		}
	case F16:
		for i, x := range src {
			le.PutUint16(dst[2*i:], FP32ToFP16(x))
		}
	case BF16:
		for i, x := range src {
			le.PutUint16(dst[2*i:], FP32ToBF16(x))
		}
	case Q4_0:
		for b := 0; b < n/32; b++ {
			quantQ4_0(src[b*32:b*32+32], dst[b*BlockQ4_0Size:])
		}
	case Q8_0:
		for b := 0; b < n/32; b++ {
			quantQ8_0(src[b*32:b*32+32], dst[b*BlockQ8_0Size:])
		}
	case Q4_K:
		for b := 0; b < n/QK_K; b++ {
			quantQ4K(src[b*QK_K:(b+1)*QK_K], dst[b*BlockQ4_KSize:(b+1)*BlockQ4_KSize], 15)
		}
	case Q5_K:
		for b := 0; b < n/QK_K; b++ {
			quantQ4K(src[b*QK_K:(b+1)*QK_K], dst[b*BlockQ5_KSize:(b+1)*BlockQ5_KSize], 31)
		}
	case Q6_K:
		for b := 0; b < n/QK_K; b++ {
			quantQ6K(src[b*QK_K:(b+1)*QK_K], dst[b*BlockQ6_KSize:(b+1)*BlockQ6_KSize])
		}
	default:
		return fmt.Errorf("quantize: type %s is not supported", t)
	}
	return nil
}

func quantQ4_0(x []float32, y []byte) {
	var amax, max float32
	for _, v := range x {
		if amax < abs32(v) {
			amax = abs32(v)
			max = v
		}
	}
	d := max / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
	for j := 0; j < 16; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		xi0 := min(15, int8(x0+8.5))
		xi1 := min(15, int8(x1+8.5))
		y[2+j] = uint8(xi0) | uint8(xi1)<<4
	}
}

func quantQ8_0(x []float32, y []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(y, FP32ToFP16(d))
	for j, v := range x {
		y[2+j] = uint8(int8(math.Round(float64(float32(v * id)))))
	}
}

// makeQKX2Quants is ggml's make_qkx2_quants: an affine (scale, min) fit of
// n values to 0..nmax with a small search over scales.
func makeQKX2Quants(n, nmax int, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0, -mn
	}
	iscale := float32(nmax) / (mx - mn)
	scale = 1 / iscale
	var bestError float32
	for i := 0; i < n; i++ {
		l := nearestInt(float32(iscale * (x[i] - mn)))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(scale*float32(L[i])) + mn - x[i]
		if useMad {
			diff = abs32(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestError += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -mn
	}
	for is := 0; is <= nstep; is++ {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + float32(nmax)) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			l := nearestInt(float32(iscale * (x[i] - mn)))
			l = max(0, min(nmax, l))
			Laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := 0; i < n; i++ {
				diff := float32(thisScale*float32(Laux[i])) + thisMin - x[i]
				if useMad {
					diff = abs32(diff)
				} else {
					diff = float32(diff * diff)
				}
				curError += float32(weights[i] * diff)
			}
			if curError < bestError {
				copy(L[:n], Laux[:n])
				bestError = curError
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// quantQ4K implements quantize_row_q4_K_ref (nmax 15) and
// quantize_row_q5_K_ref (nmax 31) for one super-block.
func quantQ4K(x []float32, y []byte, nmax int) {
	var L [QK_K]uint8
	var Laux [32]uint8
	var weights [32]float32
	var mins, scales [QK_K / 32]float32
	var maxScale, maxMin float32
	rmin, nstep := float32(-1), 20
	if nmax == 31 {
		rmin, nstep = -0.5, 15
	}
	for j := 0; j < QK_K/32; j++ {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(32, nmax, xs, weights[:], L[32*j:], Laux[:], rmin, 0.1, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	for i := range sc {
		sc[i] = 0
	}
	for j := 0; j < QK_K/32; j++ {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = (ls & 0xF) | (lm&0xF)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	binary.LittleEndian.PutUint16(y[0:], FP32ToFP16(maxScale/63))
	binary.LittleEndian.PutUint16(y[2:], FP32ToFP16(maxMin/63))
	dd, dmin := f16At(y, 0), f16At(y, 2)
	for j := 0; j < QK_K/32; j++ {
		s, m := ScaleMinK4(j, sc)
		d := dd * float32(s)
		if d == 0 {
			continue
		}
		dm := dmin * float32(m)
		for ii := 0; ii < 32; ii++ {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
	if nmax == 15 {
		q := y[16:]
		for j := 0; j < QK_K; j += 64 {
			for l := 0; l < 32; l++ {
				q[l] = L[j+l] | L[j+l+32]<<4
			}
			q = q[32:]
		}
		return
	}
	qh := y[16:48]
	ql := y[48:]
	for i := range qh {
		qh[i] = 0
	}
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < QK_K; n += 64 {
		for j := 0; j < 32; j++ {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
		ql = ql[32:]
	}
}

// makeQXQuants is ggml's make_qx_quants with rmse_type 1 and no weights, as
// used by quantize_row_q6_K_ref.
func makeQXQuants(n, nmax int, x []float32, L []int8) float32 {
	var mx, amax float32
	for i := 0; i < n; i++ {
		ax := abs32(x[i])
		if ax > amax {
			amax = ax
			mx = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			L[i] = 0
		}
		return 0
	}
	iscale := -float32(nmax) / mx
	var sumLX, sumL2 float32
	for i := 0; i < n; i++ {
		l := nearestInt(float32(iscale * x[i]))
		l = max(-nmax, min(nmax-1, l))
		L[i] = int8(l + nmax)
		w := float32(x[i] * x[i])
		fl := float32(l)
		sumLX += float32(float32(w*x[i]) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / mx
		sumLX, sumL2 = 0, 0
		for i := 0; i < n; i++ {
			l := nearestInt(float32(iscale * x[i]))
			l = max(-nmax, min(nmax-1, l))
			w := float32(x[i] * x[i])
			fl := float32(l)
			sumLX += float32(float32(w*x[i]) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i := 0; i < n; i++ {
				l := nearestInt(float32(iscale * x[i]))
				L[i] = int8(nmax + max(-nmax, min(nmax-1, l)))
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

func quantQ6K(x []float32, y []byte) {
	var L [QK_K]int8
	var scales [QK_K / 16]float32
	var maxScale, maxAbsScale float32
	for ib := 0; ib < QK_K/16; ib++ {
		s := makeQXQuants(16, 32, x[16*ib:], L[16*ib:])
		scales[ib] = s
		if abs32(s) > maxAbsScale {
			maxAbsScale = abs32(s)
			maxScale = s
		}
	}
	if maxAbsScale < groupMaxEps {
		for i := range y {
			y[i] = 0
		}
		return
	}
	iscale := -128 / maxScale
	binary.LittleEndian.PutUint16(y[208:], FP32ToFP16(1/iscale))
	sc := y[192:208]
	for ib := range scales {
		sc[ib] = uint8(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	dd := f16At(y, 208)
	for j := 0; j < QK_K/16; j++ {
		d := float32(dd * float32(int8(sc[j])))
		if d == 0 {
			continue
		}
		for ii := 0; ii < 16; ii++ {
			l := nearestInt(x[16*j+ii] / d)
			l = max(-32, min(31, l))
			L[16*j+ii] = int8(l + 32)
		}
	}
	ql := y[0:128]
	qh := y[128:192]
	for j := 0; j < QK_K; j += 128 {
		for l := 0; l < 32; l++ {
			q1 := uint8(L[j+l]) & 0xF
			q2 := uint8(L[j+l+32]) & 0xF
			q3 := uint8(L[j+l+64]) & 0xF
			q4 := uint8(L[j+l+96]) & 0xF
			ql[l] = q1 | q3<<4
			ql[l+32] = q2 | q4<<4
			qh[l] = uint8(L[j+l])>>4 | (uint8(L[j+l+32])>>4)<<2 | (uint8(L[j+l+64])>>4)<<4 | (uint8(L[j+l+96])>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}
