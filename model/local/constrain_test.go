package local

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/toolparse"
)

// candidates (the sorted-vocabulary walk and the first-byte filter) must
// list exactly the tokens the full check allows, at every point of
// constrained answers built from the vocabulary.
func TestCandidatesMatchFullCheck(t *testing.T) {
	b := open(t, localtest.Model(t, 1), Options{})
	V := b.tok.VocabSize()
	rng := rand.New(rand.NewPCG(3, 4))
	states := 0
	for walk := 0; walk < 40; walk++ {
		k := newConstraint(b, action.Tools, []int{0, 3, 12, 40})
		for step := 0; step < 60 && !k.complete; step++ {
			got := slices.Clone(k.candidates(V))
			var want []int
			for id := 0; id < V; id++ {
				if k.allowed(id) {
					want = append(want, id)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after %q: candidates %d tokens, full check %d", k.answer, len(got), len(want))
			}
			states++
			if len(want) == 0 {
				t.Fatalf("dead end after %q", k.answer)
			}
			k.add(want[rng.IntN(len(want))])
		}
	}
	t.Logf("%d answer states checked", states)
}

func TestUTF8Completion(t *testing.T) {
	for _, s := range []string{"", "a", "é", "\xc3", "\xe4", "\xe4\xb8", "\xe0", "\xed", "\xf0", "\xf0\x9f", "\xf0\x9f\x98", "\xf4", "ab\xe2\x82"} {
		c := utf8Completion([]byte(s))
		full := s + string(c)
		if !utf8.ValidString(full) {
			t.Errorf("%q + completion %q is not valid UTF-8", s, c)
		}
		if utf8.ValidString(s) != (len(c) == 0) {
			t.Errorf("%q: completion %q", s, c)
		}
	}
}

// Near a string value's length limit every allowed token still leaves a
// way to finish the call (a character begun must fit).
func TestNoDeadEndAtLengthLimit(t *testing.T) {
	b := open(t, localtest.Model(t, 1), Options{})
	V := b.tok.VocabSize()
	for n := 508; n <= 512; n++ {
		k := newConstraint(b, action.Tools, nil)
		k.answer = []byte("<tool_call>open_app<arg_key>name</arg_key><arg_value>" + strings.Repeat("a", n))
		k.update()
		for _, id := range slices.Clone(k.candidates(V)) {
			k2 := newConstraint(b, action.Tools, nil)
			k2.answer = append([]byte(nil), k.answer...)
			k2.add(id)
			if len(k2.candidates(V)) == 0 && !k2.complete {
				t.Fatalf("dead end after %d bytes + %q", n, b.tok.Piece(id))
			}
		}
	}
}

// Text that is valid UTF-8 up to an incomplete last character becomes
// valid with its completion; anything else is rejected.
func FuzzUTF8Completion(f *testing.F) {
	for _, s := range []string{"", "abc", "é", "\xe4\xb8", "\xf0\x9f\x98", "\xed\x9f", "\xc3(", "\x80", "a\xf4\x8f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8Prefix(b) {
			if utf8.Valid(b) {
				t.Fatalf("%q is valid but rejected", b)
			}
			return
		}
		full := append(append([]byte(nil), b...), utf8Completion(b)...)
		if !utf8.Valid(full) {
			t.Fatalf("%q + %q is not valid", b, utf8Completion(b))
		}
	})
}

// What the constraint dictates is appended in one batch and counted as
// forced, and the answer is still one valid call.
func TestForcedTokensBatched(t *testing.T) {
	tap := []action.Tool{action.Tools[0]}
	req := model.ChatRequest{
		Messages:     agentMessages(nil, screen1),
		Tools:        tap,
		MaxTokens:    40,
		Constrain:    true,
		ValidIndices: []int{0, 1, 2},
	}
	path := localtest.Model(t, 1)
	for _, unbatched := range []bool{false, true} {
		o := run(t, open(t, path, Options{Unbatched: unbatched}), req, 0)
		res := toolparse.Parse(o.content, toolparse.Options{Tools: tap})
		if len(res.Calls) != 1 || len(res.Errors) != 0 {
			t.Errorf("unbatched=%v: answer %q parsed as %+v", unbatched, o.content, res)
		}
		switch {
		case unbatched && o.stats.ForcedTokens != 0:
			t.Errorf("unbatched: %d tokens forced", o.stats.ForcedTokens)
		case !unbatched && !strings.Contains(o.content, "<tool_call>tap<arg_key>index</arg_key><arg_value>"):
			t.Errorf("answer %q", o.content)
		case !unbatched && (o.stats.ForcedTokens < 4 || o.stats.ForcedTokens >= o.stats.GeneratedTokens):
			// "tap<arg_key>index</arg_key><arg_value>" after <tool_call>,
			// and "</arg_value></tool_call>" after the index.
			t.Errorf("%d of %d tokens forced", o.stats.ForcedTokens, o.stats.GeneratedTokens)
		}
		t.Logf("unbatched=%v: %q: %d tokens, %d forced", unbatched, o.content, o.stats.GeneratedTokens, o.stats.ForcedTokens)
	}
}
