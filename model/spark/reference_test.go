package spark

import (
	"strings"
	"testing"
)

func TestReferenceErrors(t *testing.T) {
	m := randomModel(t, "tiny", "f32", 7)
	for _, tok := range []int{-1, m.Config.Vocab} {
		if _, err := NewReference(m).Forward(tok); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Forward(%d) = %v, want an out-of-range error", tok, err)
		}
	}
	c := m.Config
	c.Context = 2
	short := &Model{Config: c, Embed: m.Embed, Output: m.Output, OutputNorm: m.OutputNorm, Layers: m.Layers}
	r := NewReference(short)
	for i := 0; i < 2; i++ {
		if _, err := r.Forward(1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Forward(1); err == nil || !strings.Contains(err.Error(), "context full") {
		t.Errorf("third token of a 2-position context: %v, want a context-full error", err)
	}
}

// The reference is deterministic and causal: the logits of a position do not
// depend on the tokens after it.
func TestReferenceIsCausal(t *testing.T) {
	m := randomModel(t, "tiny", "f32", 7)
	a := referenceLogits(t, m, []int{3, 9, 27, 81})
	b := referenceLogits(t, m, []int{3, 9, 27, 5})
	for p := 0; p < 3; p++ {
		if d := maxDiff32(a[p], b[p]); d != 0 {
			t.Errorf("position %d differs by %g", p, d)
		}
	}
	if maxDiff32(a[3], b[3]) == 0 {
		t.Error("a different last token gave the same logits")
	}
}
