package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Block byte sizes of the quantised types droidgo computes with.
const (
	BlockQ4_0Size = 18
	BlockQ8_0Size = 34
	BlockQ4_KSize = 144
	BlockQ5_KSize = 176
	BlockQ6_KSize = 210
)

func f16At(b []byte, i int) float32 { return FP16ToFP32(binary.LittleEndian.Uint16(b[i:])) }

// DequantizeRow decodes len(dst) elements of type t from src, exactly as
// ggml's dequantize_row_* functions do. src must hold exactly t.RowSize(len(dst)) bytes.
func DequantizeRow(t Type, src []byte, dst []float32) error {
	n := len(dst)
	if rs := t.RowSize(n); rs < 0 || rs != len(src) {
		return fmt.Errorf("dequantize %s: %d bytes for %d elements", t, len(src), n)
	}
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = FP16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q4_0:
		for b := 0; b < n/32; b++ {
			blk := src[b*BlockQ4_0Size:]
			d := f16At(blk, 0)
			y := dst[b*32:]
			for j := 0; j < 16; j++ {
				q := blk[2+j]
				y[j] = float32(int(q&0xF)-8) * d
				y[j+16] = float32(int(q>>4)-8) * d
			}
		}
	case Q8_0:
		for b := 0; b < n/32; b++ {
			blk := src[b*BlockQ8_0Size:]
			d := f16At(blk, 0)
			y := dst[b*32:]
			for j := 0; j < 32; j++ {
				y[j] = float32(int8(blk[2+j])) * d
			}
		}
	case Q4_K:
		for b := 0; b < n/QK_K; b++ {
			dequantQ4K(src[b*BlockQ4_KSize:(b+1)*BlockQ4_KSize], dst[b*QK_K:])
		}
	case Q5_K:
		for b := 0; b < n/QK_K; b++ {
			dequantQ5K(src[b*BlockQ5_KSize:(b+1)*BlockQ5_KSize], dst[b*QK_K:])
		}
	case Q6_K:
		for b := 0; b < n/QK_K; b++ {
			dequantQ6K(src[b*BlockQ6_KSize:(b+1)*BlockQ6_KSize], dst[b*QK_K:])
		}
	default:
		return fmt.Errorf("dequantize: type %s is not supported", t)
	}
	return nil
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j from the 12
// packed bytes of a Q4_K or Q5_K block (ggml's get_scale_min_k4).
func ScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// Q4_K block: d f16, dmin f16, scales[12], qs[128].
func dequantQ4K(blk []byte, y []float32) {
	d := f16At(blk, 0)
	dmin := f16At(blk, 2)
	scales := blk[4:16]
	q := blk[16:]
	is := 0
	for j := 0; j < QK_K; j += 64 {
		sc, m := ScaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = ScaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			y[j+l] = float32(d1*float32(q[l]&0xF)) - m1
			y[j+32+l] = float32(d2*float32(q[l]>>4)) - m2
		}
		q = q[32:]
		is += 2
	}
}

// Q5_K block: d f16, dmin f16, scales[12], qh[32], qs[128].
func dequantQ5K(blk []byte, y []float32) {
	d := f16At(blk, 0)
	dmin := f16At(blk, 2)
	scales := blk[4:16]
	qh := blk[16:48]
	ql := blk[48:]
	is := 0
	u1, u2 := uint8(1), uint8(2)
	for j := 0; j < QK_K; j += 64 {
		sc, m := ScaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = ScaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			h1, h2 := 0, 0
			if qh[l]&u1 != 0 {
				h1 = 16
			}
			if qh[l]&u2 != 0 {
				h2 = 16
			}
			y[j+l] = float32(d1*float32(int(ql[l]&0xF)+h1)) - m1
			y[j+32+l] = float32(d2*float32(int(ql[l]>>4)+h2)) - m2
		}
		ql = ql[32:]
		is += 2
		u1 <<= 2
		u2 <<= 2
	}
}

// Q6_K block: ql[128], qh[64], scales[16] int8, d f16.
func dequantQ6K(blk []byte, y []float32) {
	ql := blk[0:128]
	qh := blk[128:192]
	sc := blk[192:208]
	d := f16At(blk, 208)
	for n := 0; n < QK_K; n += 128 {
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(int8((ql[l]&0xF)|((qh[l]>>0)&3)<<4)) - 32
			q2 := int(int8((ql[l+32]&0xF)|((qh[l]>>2)&3)<<4)) - 32
			q3 := int(int8((ql[l]>>4)|((qh[l]>>4)&3)<<4)) - 32
			q4 := int(int8((ql[l+32]>>4)|((qh[l]>>6)&3)<<4)) - 32
			y[n+l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			y[n+l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			y[n+l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			y[n+l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
		ql = ql[64:]
		qh = qh[32:]
		sc = sc[8:]
	}
}
