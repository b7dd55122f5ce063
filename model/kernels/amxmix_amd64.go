//go:build !purego

package kernels

// amxMixes are the loops of BenchmarkAMXMix (asmgen/gen_amxmix.py says what
// each letter of a name runs).
var amxMixes = []struct {
	name string
	run  func(n int, buf *byte, cfg *tileCfg)
}{
	{"P", amxMixP},
	{"L", amxMixL},
	{"S", amxMixS},
	{"F", amxMixF},
	{"A", amxMixA},
	{"PF", amxMixPF},
	{"PFF", amxMixPFF},
	{"PA", amxMixPA},
	{"PL", amxMixPL},
	{"PS", amxMixPS},
	{"LF", amxMixLF},
	{"SF", amxMixSF},
	{"SA", amxMixSA},
	{"KKKK", amxMixKKKK},
	{"KKKKZ", amxMixKKKKZ},
	{"KFKFKFKFZ", amxMixKFKFKFKFZ},
	{"KKKKZFFFF", amxMixKKKKZFFFF},
	{"RRRR", amxMixRRRR},
	{"KRKRKRKRZ", amxMixKRKRKRKRZ},
}

//go:noescape
func amxMixP(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixL(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixS(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixA(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixPF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixPFF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixPA(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixPL(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixPS(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixLF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixSF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixSA(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixKKKK(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixKKKKZ(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixKFKFKFKFZ(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixKKKKZFFFF(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixRRRR(n int, buf *byte, cfg *tileCfg)

//go:noescape
func amxMixKRKRKRKRZ(n int, buf *byte, cfg *tileCfg)
