package gguf

import "github.com/droidgo/droidgo/model/quant"

// otherTypes are the block layouts of ggml tensor types that droidgo cannot
// compute with but that real GGUF files use (imatrix "IQ" quantizations,
// ternary and MXFP4 types). Knowing their sizes lets a file holding them
// parse, so tools can still show its metadata and the loader can name the
// unsupported type instead of calling the file corrupt.
var otherTypes = map[quant.Type]struct {
	name        string
	block, size int
}{
	16: {"IQ2_XXS", quant.QK_K, 2 + quant.QK_K/4},
	17: {"IQ2_XS", quant.QK_K, 2 + quant.QK_K/4 + quant.QK_K/32},
	18: {"IQ3_XXS", quant.QK_K, 2 + 3*quant.QK_K/8},
	19: {"IQ1_S", quant.QK_K, 2 + quant.QK_K/8 + quant.QK_K/16},
	20: {"IQ4_NL", 32, 2 + 16},
	21: {"IQ3_S", quant.QK_K, 2 + quant.QK_K/4 + quant.QK_K/8 + quant.QK_K/32 + 4},
	22: {"IQ2_S", quant.QK_K, 2 + quant.QK_K/4 + quant.QK_K/16},
	23: {"IQ4_XS", quant.QK_K, 2 + 2 + quant.QK_K/64 + quant.QK_K/2},
	29: {"IQ1_M", quant.QK_K, quant.QK_K/8 + quant.QK_K/16 + quant.QK_K/32},
	34: {"TQ1_0", quant.QK_K, (quant.QK_K-4*quant.QK_K/64)/5 + quant.QK_K/64 + 2},
	35: {"TQ2_0", quant.QK_K, quant.QK_K/4 + 2},
	39: {"MXFP4", 32, 1 + 16},
}

// typeLayout returns the elements per block and bytes per block of t.
func typeLayout(t quant.Type) (block, size int, ok bool) {
	if t.Known() {
		return t.BlockSize(), t.TypeSize(), true
	}
	if o, ok := otherTypes[t]; ok {
		return o.block, o.size, true
	}
	return 0, 0, false
}

// TypeName returns ggml's name of a tensor type, including the types droidgo
// cannot compute with (e.g. "IQ4_XS").
func TypeName(t quant.Type) string {
	if o, ok := otherTypes[t]; ok {
		return o.name
	}
	return t.String()
}

// TypeName returns ggml's name of the tensor's type.
func (t *Tensor) TypeName() string { return TypeName(t.Type) }
