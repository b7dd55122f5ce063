package spark

import (
	"context"
	"testing"
)

// A state saved at a prefix and restored after the rings have moved on
// far past it (and after a Reset) resumes exactly like the engine that
// computed the prefix, for both cache types and after an Encode/Decode
// round trip.
func TestSaveRestore(t *testing.T) {
	m := randomModel(t, "gqa", "q8_0", 5)
	W := m.Config.Window
	prefix := randomTokens(3*W+3, m.Config.Vocab, 1)
	rest := randomTokens(W+2, m.Config.Vocab, 2)
	long := randomTokens(6*W, m.Config.Vocab, 3)
	for _, kv := range []KVType{KVF32, KVF16} {
		ctx := context.Background()
		ref, _ := NewEngine(m, Options{KV: kv, slack: 2})
		if err := ref.Prefill(ctx, prefix); err != nil {
			t.Fatal(err)
		}
		want, err := ref.Eval(ctx, rest, LogitsAll)
		if err != nil {
			t.Fatal(err)
		}

		e, _ := NewEngine(m, Options{KV: kv, slack: 2})
		if err := e.Prefill(ctx, prefix); err != nil {
			t.Fatal(err)
		}
		st := e.Save()
		// A long turn overwrites every ring slot of the prefix.
		if _, err := e.Eval(ctx, long, LogitsLast); err != nil {
			t.Fatal(err)
		}
		if n := e.Truncate(len(prefix)); n != 0 {
			t.Fatalf("Truncate kept %d positions the rings no longer hold", n)
		}
		for round, s := range []*State{st, decodeOK(t, st.Encode())} {
			if err := e.Restore(s); err != nil {
				t.Fatal(err)
			}
			// Positions before the restored window are not claimed.
			if n := e.Truncate(len(prefix) - W); n != 0 {
				t.Fatalf("%s: Truncate below the restored window kept %d", kv, n)
			}
			if err := e.Restore(s); err != nil {
				t.Fatal(err)
			}
			got, err := e.Eval(ctx, rest, LogitsAll)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff32(got, want); d != 0 {
				t.Errorf("%s round %d: restored engine differs by %g", kv, round, d)
			}
		}
		other, _ := NewEngine(m, Options{KV: 1 - kv})
		if err := other.Restore(st); err == nil {
			t.Errorf("a %s state was restored into a %s engine", kv, 1-kv)
		}
	}
}

func decodeOK(t *testing.T, b []byte) *State {
	t.Helper()
	st, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDecodeStateRejectsDamage(t *testing.T) {
	m := randomModel(t, "gqa", "q8_0", 5)
	e, _ := NewEngine(m, Options{})
	if err := e.Prefill(context.Background(), randomTokens(20, m.Config.Vocab, 1)); err != nil {
		t.Fatal(err)
	}
	b := e.Save().Encode()
	for _, n := range []int{0, 5, 12, 40, len(b) - 1} {
		if _, err := DecodeState(b[:n]); err == nil {
			t.Errorf("a state cut to %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := DecodeState(append(b, 0)); err == nil {
		t.Error("trailing bytes accepted")
	}
}

func FuzzDecodeState(f *testing.F) {
	m := randomModel(f, "gqa", "q8_0", 5)
	e, _ := NewEngine(m, Options{})
	if err := e.Prefill(context.Background(), randomTokens(9, m.Config.Vocab, 1)); err != nil {
		f.Fatal(err)
	}
	f.Add(e.Save().Encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeState(b)
		if err != nil {
			return
		}
		// Whatever decodes is checked against the engine before use.
		e2, _ := NewEngine(m, Options{})
		_ = e2.Restore(st)
	})
}
