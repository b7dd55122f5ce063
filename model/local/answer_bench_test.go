package local

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
)

// answerPlan splits an answer into the passes the stream makes: each
// chosen token with the forced tokens that follow it (which ride along in
// its forward pass).
func answerPlan(tb testing.TB, b *Backend, answer string, valid []int) [][]int {
	k := newConstraint(b, action.Tools, valid)
	var plan [][]int
	rest := answer
	for rest != "" {
		// The token the model would choose: the first of the text's
		// canonical tokenization.
		id := b.tok.Encode(rest, true)[0]
		piece := b.tok.Piece(id)
		if !strings.HasPrefix(rest, piece) || !k.allowed(id) {
			tb.Fatalf("%q: token %q does not continue the answer", rest, piece)
		}
		k.add(id)
		rest = rest[len(piece):]
		group := []int{id}
		if f := string(k.forced()); f != "" && strings.HasPrefix(rest, f) {
			for _, fid := range b.tok.Encode(f, true) {
				k.add(fid)
				group = append(group, fid)
			}
			rest = rest[len(f):]
		}
		plan = append(plan, group)
	}
	return plan
}

// The answer phase of one tap call, the same tokens both ways: one forward
// pass per token (before) or one per chosen token with the dictated ones
// batched in (now), alternated, from the same restored prompt state.
// DROIDGO_BENCH_MODEL names the model (e.g. the full-size random 1.7B);
// without it the test is skipped.
func TestAnswerPhaseTiming(t *testing.T) {
	path := os.Getenv("DROIDGO_BENCH_MODEL")
	if path == "" {
		t.Skip("DROIDGO_BENCH_MODEL not set")
	}
	b := open(t, path, Options{Threads: 2})
	req := agentRequest(nil, false)
	text, err := b.render(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.eng.Prefill(ctx, b.tok.Encode(text, true)); err != nil {
		t.Fatal(err)
	}
	start := b.eng.Save()
	plan := answerPlan(t, b, "<tool_call>tap<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>", []int{0, 1, 2})
	n := 0
	for _, g := range plan {
		n += len(g)
	}
	run := func(batched bool) time.Duration {
		if err := b.eng.Restore(start); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		for _, g := range plan {
			if batched {
				if _, err := b.eng.Eval(ctx, g, 0); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for _, id := range g {
				if _, err := b.eng.Eval(ctx, []int{id}, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		return time.Since(t0)
	}
	for round := range 2 {
		one, batch := run(false), run(true)
		t.Logf("round %d: %d answer tokens in %d passes: one by one %.2f s, batched %.2f s (%.1fx)", round+1, n, len(plan), one.Seconds(), batch.Seconds(), one.Seconds()/batch.Seconds())
	}
}
