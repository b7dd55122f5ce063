//go:build !purego

package kernels

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

// TestIntelCPU holds the vendor test that picks the one-token interleaved
// kernels (l2Prefetch) to the kernel's own account of the CPU.
func TestIntelCPU(t *testing.T) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare with: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "vendor_id" {
			v = strings.TrimSpace(v)
			if got, want := intelCPU(), v == "GenuineIntel"; got != want {
				t.Fatalf("intelCPU() = %v, /proc/cpuinfo vendor_id %q", got, v)
			}
			return
		}
	}
	t.Skip("/proc/cpuinfo names no vendor_id")
}

// BenchmarkStreamReadPrefetch streams the interleaved Q4_K and Q6_K
// layouts through both prefetch variants of their one-token kernels and
// the two-stream form of the L2 one (l2Prefetch), whichever the CPU's
// levels use, so that one binary compares them on any x86 host: run with
// -count and compare them side by side.
func BenchmarkStreamReadPrefetch(b *testing.B) {
	if !hasLevel("avx2") {
		b.Skip("no avx2 level")
	}
	const k = 2048
	var a [k / 256]quant.BlockQ8K
	kernels := []struct {
		name string
		typ  quant.Type
		fn   func(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
	}{
		{"q4_k_x8/l1", quant.Q4_K, q4kx8AVX2}, {"q4_k_x8/l2", quant.Q4_K, q4kx8AVX2L2},
		{"q6_k_x8/l1", quant.Q6_K, q6kx8AVX2}, {"q6_k_x8/l2", quant.Q6_K, q6kx8AVX2L2},
	}
	two := []struct {
		name    string
		typ     quant.Type
		bs      int
		h2, one func(w *byte, a *quant.BlockQ8K, nb, groups int, out *float32)
	}{
		{"q4_k_x8/l2-two-streams", quant.Q4_K, quant.BlockQ4_KSize, q4kx8AVX2L2h2, q4kx8AVX2L2},
		{"q6_k_x8/l2-two-streams", quant.Q6_K, quant.BlockQ6_KSize, q6kx8AVX2L2h2, q6kx8AVX2L2},
	}
	for _, threads := range []int{1, 2} {
		for _, kn := range kernels {
			b.Run(fmt.Sprintf("%s/threads=%d", kn.name, threads), func(b *testing.B) {
				streamRead(b, threads, kn.typ.RowSize(k), func(w []byte, rows int, out []float32) {
					kn.fn(&w[0], &a[0], len(a), rows/Interleave, &out[0])
				})
			})
		}
		for _, kn := range two {
			b.Run(fmt.Sprintf("%s/threads=%d", kn.name, threads), func(b *testing.B) {
				streamRead(b, threads, kn.typ.RowSize(k), func(w []byte, rows int, out []float32) {
					twoGroups(w, rows, kn.bs, a[:], out, kn.h2, kn.one)
				})
			})
		}
	}
}
