// Macros of the AVX2 float kernels (float_amd64.s, floatmv_amd64.s,
// floatx4_amd64.s), written once here: the loads of bf16 and f16 weights to
// f32 lanes and the clearing of accumulators. Each file that includes this
// gets its own copy of the 32-byte mask.

// The byte shuffle that turns 8 bf16 (16 bytes, in both 128-bit lanes) into
// 8 f32: each weight goes to the top half of its dword, the bottom half is
// zeroed (bf16 is the top half of an f32).
DATA bf16shuf<>+0(SB)/8, $0x0302808001008080
DATA bf16shuf<>+8(SB)/8, $0x0706808005048080
DATA bf16shuf<>+16(SB)/8, $0x0B0A808009088080
DATA bf16shuf<>+24(SB)/8, $0x0F0E80800D0C8080
GLOBL bf16shuf<>(SB), RODATA|NOPTR, $32

// INITW_BF16 puts the mask in Y14, which LOADW_BF16 reads.
#define INITW_BF16 VMOVDQU bf16shuf<>(SB), Y14

// 8 bf16 weights at m to 8 floats in y: one load and one shuffle, where
// VPMOVZXWD+VPSLLD take a load and two ALU ops.
#define LOADW_BF16(m, y) VBROADCASTI128 m, y; VPSHUFB Y14, y, y

// LOADW_BF16 with the mask read from memory, for loops that need Y14.
#define LOADW_BF16M(m, y) VBROADCASTI128 m, y; VPSHUFB bf16shuf<>(SB), y, y

// 8 f16 weights at m to 8 floats in y.
#define LOADW_F16(m, y) VCVTPH2PS m, y

// One bf16 / f16 weight at m, converted and broadcast to the lanes of x
// (clobbers AX).
#define SCALW_BF16(m, x) MOVWLZX m, AX; SHLL $16, AX; VMOVD AX, x; VBROADCASTSS x, x
#define SCALW_F16(m, x) MOVWLZX m, AX; VMOVD AX, x; VCVTPH2PS x, x; VBROADCASTSS x, x

// Clear the accumulators Y0-Y3, Y0-Y7 or Y0-Y11.
#define ZERO_Y0_Y3 VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3
#define ZERO_Y0_Y7 ZERO_Y0_Y3; VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7
#define ZERO_Y0_Y11 ZERO_Y0_Y7; VXORPS Y8, Y8, Y8; VXORPS Y9, Y9, Y9; VXORPS Y10, Y10, Y10; VXORPS Y11, Y11, Y11
