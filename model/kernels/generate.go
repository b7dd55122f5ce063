package kernels

// The unrolled assembly is written by the Python generators in asmgen/
// (python3, no packages); TestGenerated checks that every generated file is
// what its generator writes. The WORD-encoded arm64 instructions are
// checked against objdump by TestArm64Words, the AMX bytes by
// TestAMXEncodings.

// arm64: NEON/SDOT one- and 4-token kernels, SMMLA/SDOT matrix-matrix
// micro-kernels, Q4_0, the interleaved-layout decode kernels and prefill
// packers, the BFDOT one-token BF16 kernel and the load-time repack copy;
// the Go constants of the packed layouts both sides use
// (asmgen/mmlayout.py -> mmlayout_arm64.go).
//go:generate python3 asmgen/gen_arm64.py
//go:generate python3 asmgen/gen_mmla_arm64.py
//go:generate python3 asmgen/gen_q40_arm64.py
//go:generate python3 asmgen/gen_x8_arm64.py
//go:generate python3 asmgen/gen_x8pack_arm64.py
//go:generate python3 asmgen/gen_quant_arm64.py
//go:generate python3 asmgen/gen_gelu_arm64.py
//go:generate python3 asmgen/gen_bf16_arm64.py
//go:generate python3 asmgen/gen_repack_arm64.py
//go:generate python3 asmgen/gen_mmlayout.py

// amd64: the AMX tile kernels and the avxvnni level (VEX VNNI, byte-encoded).
//go:generate python3 asmgen/gen_amx.py
//go:generate python3 asmgen/gen_amxk.py
//go:generate python3 asmgen/gen_amxpack.py
//go:generate python3 asmgen/gen_amxtrans.py
//go:generate python3 asmgen/gen_amxunpack.py
//go:generate python3 asmgen/gen_amxattn.py
//go:generate python3 asmgen/gen_amxmix.py

// amd64: the exact GELU, AVX2 and AVX-512 from one kernel text.
//go:generate python3 asmgen/gen_gelu.py
//go:generate python3 asmgen/gen_avxvnni.py
