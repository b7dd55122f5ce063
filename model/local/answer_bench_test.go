package local

import (
	"context"
	"os"
	"strings"
	"testing"

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
// batched in (now), from the same restored prompt state. DROIDGO_BENCH_MODEL
// names the model (e.g. the full-size random 1.7B); without it the
// benchmark is skipped. Run with -benchtime=2x -count=2 to alternate.
func BenchmarkAnswerPhase(b *testing.B) {
	path := os.Getenv("DROIDGO_BENCH_MODEL")
	if path == "" {
		b.Skip("DROIDGO_BENCH_MODEL not set")
	}
	be, err := Open(path, Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	text, err := be.render(agentRequest(nil, false))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := be.eng.Prefill(ctx, be.tok.Encode(text, true)); err != nil {
		b.Fatal(err)
	}
	start := be.eng.Save()
	plan := answerPlan(b, be, "<tool_call>tap<arg_key>index</arg_key><arg_value>2</arg_value></tool_call>", []int{0, 1, 2})
	n := 0
	for _, g := range plan {
		n += len(g)
	}
	b.Logf("%d answer tokens in %d passes", n, len(plan))
	for _, batched := range []bool{false, true} {
		name := "one-by-one"
		if batched {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if err := be.eng.Restore(start); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, g := range plan {
					if batched {
						if _, err := be.eng.Eval(ctx, g, 0); err != nil {
							b.Fatal(err)
						}
						continue
					}
					for _, id := range g {
						if _, err := be.eng.Eval(ctx, []int{id}, 0); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
