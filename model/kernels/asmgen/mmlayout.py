# The packed quads of the arm64 matrix-matrix kernels (mmla_arm64.go), in
# one place: the generators of the micro-kernels (gen_mmla_arm64.py) and of
# the packers (gen_x8pack_arm64.py) take their offsets from here, and
# gen_mmlayout.py writes the same numbers as the Go constants the Go packers
# use (mmlayout_arm64.go), so neither side can move a field alone.
#
# A packed chunk is 8 consecutive k of 4 rows (or tokens): 8 bytes of row 0,
# of row 1 (pair 0), of row 2, of row 3 (pair 1), one SMMLA operand per pair.
# Per-row floats and int32 scales take 32 bytes, as [v0 v0 v1 v1][v2 v2 v3
# v3] for weights and [v0 v1 v0 v1][v2 v3 v2 v3] for tokens.

CHUNK = 32
ROW4 = 32  # 4 rows' floats or int32s, each twice

# (Go name, value, comment), in the order of the quads.
FIELDS = []


def field(name, value, doc):
    FIELDS.append((name, value, doc))
    return value


# Q8_0 weight quad, per block of 32 k: 4 chunks, then d.
Q80W_D = field("mmQ80WD", 4 * CHUNK, "Q8_0 weight quad: d of the 4 rows after the 4 chunks")
Q80W = field("mmQ80W", Q80W_D + ROW4, "Q8_0 weight quad: bytes per block")

# Q4_K weight quad, per super-block: per sub-block j < 8 of 32 k, 4 chunks
# then its 6-bit scales as int32; the mins as 2 chunks of m[k/2] (one per
# bsum k of the activations); d; -dmin.
Q4KW_SUBSCALES = field("mmQ4KWSubScales", 4 * CHUNK, "Q4_K weight quad: a sub-block's scales after its 4 chunks")
Q4KW_SUB = field("mmQ4KWSub", Q4KW_SUBSCALES + ROW4, "Q4_K weight quad: bytes per sub-block")
Q4KW_MINS = field("mmQ4KWMins", 8 * Q4KW_SUB, "Q4_K weight quad: the 2 chunks of mins")
Q4KW_D = field("mmQ4KWD", Q4KW_MINS + 2 * CHUNK, "Q4_K weight quad: d")
Q4KW_NEGDMIN = field("mmQ4KWNegDmin", Q4KW_D + ROW4, "Q4_K weight quad: -dmin")
Q4KW = field("mmQ4KW", Q4KW_NEGDMIN + ROW4, "Q4_K weight quad: bytes per super-block")

# Q6_K weight quad, per super-block: per sub-block s < 16 of 16 k, 2 chunks
# of quants-32 then its scale as int32; d.
Q6KW_SUBSCALES = field("mmQ6KWSubScales", 2 * CHUNK, "Q6_K weight quad: a sub-block's scales after its 2 chunks")
Q6KW_SUB = field("mmQ6KWSub", Q6KW_SUBSCALES + ROW4, "Q6_K weight quad: bytes per sub-block")
Q6KW_D = field("mmQ6KWD", 16 * Q6KW_SUB, "Q6_K weight quad: d")
Q6KW = field("mmQ6KW", Q6KW_D + ROW4, "Q6_K weight quad: bytes per super-block")

# Q8_0 activation quad, per block: 4 chunks, then D.
Q80A_D = field("mmQ80AD", 4 * CHUNK, "Q8_0 activation quad: D of the 4 tokens after the 4 chunks")
Q80A = field("mmQ80A", Q80A_D + ROW4, "Q8_0 activation quad: bytes per block")

# Q8_K activation quad, per super-block: 32 chunks; the 16 bsums split as
# 16*hi + lo (both int8), 2 chunks each; D.
Q8KA_BSUMHI = field("mmQ8KABsumHi", 32 * CHUNK, "Q8_K activation quad: the 2 chunks of bsum>>4")
Q8KA_BSUMLO = field("mmQ8KABsumLo", Q8KA_BSUMHI + 2 * CHUNK, "Q8_K activation quad: the 2 chunks of bsum&15")
Q8KA_D = field("mmQ8KAD", Q8KA_BSUMLO + 2 * CHUNK, "Q8_K activation quad: D")
Q8KA = field("mmQ8KA", Q8KA_D + ROW4, "Q8_K activation quad: bytes per super-block")

field("mmChunk", CHUNK, "bytes of a packed chunk: 8 k of 4 rows or tokens")
