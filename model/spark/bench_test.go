package spark

import (
	"context"
	"testing"
)

// Decode one token at a time on the small "q" shape (Q4_K_M weights) after a
// 32-token prompt; reports tokens per second of single-token decoding.
func BenchmarkDecodeQ4KM(b *testing.B) {
	m := randomModel(b, "q", "q4_k_m", 1)
	e, _ := NewEngine(m, Options{})
	ctx := context.Background()
	prompt := randomTokens(32, m.Config.Vocab, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e.Len() > 500 {
			e.Reset()
			e.Prefill(ctx, prompt)
		}
		if _, err := e.Eval(ctx, []int{i % m.Config.Vocab}, LogitsLast); err != nil {
			b.Fatal(err)
		}
	}
}

// Prefill 64 tokens in one chunk on the "q" shape.
func BenchmarkPrefill64Q4KM(b *testing.B) {
	m := randomModel(b, "q", "q4_k_m", 1)
	e, _ := NewEngine(m, Options{})
	ctx := context.Background()
	prompt := randomTokens(64, m.Config.Vocab, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Reset()
		if err := e.Prefill(ctx, prompt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "tok/s")
}
