package constrain

import (
	"math/rand/v2"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/toolparse"
)

// pieces are token-like strings a model could emit: the special tokens,
// tool and key names whole and in parts, digits, letters and noise.
var pieces = []string{
	"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
	"tap", "long_", "press", "long_press", "type_text", "swipe", "press_key", "open_app", "wait", "task_complete",
	"index", "text", "direction", "key", "name", "seconds", "summary", "in", "dex",
	"up", "down", "left", "right", "back", "home", "enter",
	"0", "1", "2", "3", "4", "7", "9", "12", ".", "5",
	"a", "Wi-Fi", " ", "\n", "<", "</", ">", "\"", "{", "}", "Settings", "; reboot",
}

func init() {
	// Like a byte-level vocabulary, every single character is a token too,
	// so a constrained model can never reach a dead end.
	for _, r := range "<>/_abcdefghijklmnopqrstuvwxyz0123456789" {
		pieces = append(pieces, string(r))
	}
}

// A random walk that only takes pieces the constraint accepts must end in
// text toolparse reads as exactly one valid call with an index on screen:
// whatever a model's weights prefer, the constrained answer parses.
func TestConstrainedWalksParse(t *testing.T) {
	valid := []int{0, 3, 7, 12}
	onScreen := map[int64]bool{0: true, 3: true, 7: true, 12: true}
	c := New(action.Tools, valid)
	rng := rand.New(rand.NewPCG(1, 2))
	complete := 0
	for walk := 0; walk < 600; walk++ {
		s := ""
		for step := 0; step < 80; step++ {
			if _, done := c.Check(s); done {
				break
			}
			var next []string
			for _, p := range pieces {
				if v, _ := c.Check(s + p); v {
					next = append(next, p)
				}
			}
			if len(next) == 0 {
				t.Fatalf("dead end after %q", s)
			}
			s += next[rng.IntN(len(next))]
		}
		if _, done := c.Check(s); !done {
			continue // a long string value; the walk ran out of steps
		}
		complete++
		r := toolparse.Parse(s, toolparse.Options{})
		if len(r.Calls) != 1 || len(r.Errors) != 0 || r.Format != toolparse.FormatNative {
			t.Fatalf("%q parsed as %+v", s, r)
		}
		if idx, ok := r.Calls[0].Arguments["index"]; ok && !onScreen[idx.(int64)] {
			t.Fatalf("%q: index %v not on screen", s, idx)
		}
	}
	if complete < 200 {
		t.Fatalf("only %d of 600 walks completed", complete)
	}
}
