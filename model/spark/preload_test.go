package spark

import (
	"context"
	"testing"
)

// Preloaded weights (anonymous memory, file pages released) give the same
// logits as the file mapping, for the tied head and every layer's weights.
func TestPreloadSameLogits(t *testing.T) {
	for _, typ := range []string{"q4_k_m", "q8_0", "bf16"} {
		preset := "q"
		if typ != "q4_k_m" {
			preset = "tiny"
		}
		m1 := randomModel(t, preset, typ, 3)
		toks := randomTokens(20, m1.Config.Vocab, 4)
		e1, _ := NewEngine(m1, Options{Threads: 2})
		want := evalAll(t, e1, toks)

		m2 := randomModel(t, preset, typ, 3)
		n, err := m2.Preload()
		if err != nil {
			t.Fatal(err)
		}
		if n < m2.WeightBytes()-int64(len(m2.OutputNorm)+2*len(m2.Layers)*m2.Config.Hidden)*4 {
			t.Errorf("%s: preloaded %d bytes of %d", typ, n, m2.WeightBytes())
		}
		if &m2.Output.Data[0] != &m2.Embed.Data[0] {
			t.Errorf("%s: tied output head no longer shares the embedding after preload", typ)
		}
		e2, _ := NewEngine(m2, Options{Threads: 2})
		got := evalAll(t, e2, toks)
		if d := maxDiff32(got, want); d != 0 {
			t.Errorf("%s: preloaded logits differ by %g", typ, d)
		}
		e1.Close()
		e2.Close()
		if err := m2.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

// repackAll interleaves every matrix that has an interleaved layout, whether
// or not the kernel level has a faster kernel for it, and installs them.
func repackAll(t testing.TB, m *Model) {
	t.Helper()
	n, err := m.startRepack(m.canInterleave, false, 1, nil)
	if err == nil {
		err = m.WaitRepack(context.Background())
	}
	if err != nil || n == 0 {
		t.Fatalf("repack: %d bytes, %v", n, err)
	}
	m.adopt()
	if !m.Embed.x8 || !m.Layers[0].FFNUp.x8 {
		t.Fatalf("repack: weights not installed (embed %v, ffn_up %v)", m.Embed.x8, m.Layers[0].FFNUp.x8)
	}
}
