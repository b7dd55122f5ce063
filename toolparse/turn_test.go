package toolparse

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/reasoning"
)

// stream splits text as a backend does while it streams, in chunks of n
// bytes. closed is ParseTurn's: no reasoning is left open.
func stream(text string, inThinking bool, n int) (r, c string, closed bool) {
	s := reasoning.NewSplitter(inThinking)
	var rb, cb strings.Builder
	for i := 0; i < len(text); i += n {
		rr, cc, _ := s.Feed(text[i:min(i+n, len(text))])
		rb.WriteString(rr)
		cb.WriteString(cc)
	}
	fr, fc := s.Flush()
	rb.WriteString(fr)
	cb.WriteString(fc)
	return rb.String(), cb.String(), !s.InReasoning()
}

// TestParseTurnMatchesParse checks the loop's path against droidgo
// parse's on the corpus: an output streamed through the backends'
// splitter and parsed from its parts gives what Parse gives for the
// whole text. Outputs that place think tags where only Parse can see
// them (a </think> the prompt did not open for, text before a <think>)
// are left out: the splitter cannot take back what it gave out.
func TestParseTurnMatchesParse(t *testing.T) {
	compared := 0
	for _, c := range loadCorpus(t) {
		if !c.opts.InThinking && lateTags(c.text) {
			continue
		}
		compared++
		r, a, closed := stream(c.text, c.opts.InThinking, 5)
		got, want := ParseTurn(r, a, closed, c.opts), Parse(c.text, c.opts)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nParseTurn %+v\nParse     %+v", c.name, got, want)
		}
	}
	if compared < 100 {
		t.Fatalf("only %d corpus cases compared", compared)
	}
}

// lateTags reports whether an output not started in reasoning has think
// tags after its start.
func lateTags(text string) bool {
	body := strings.TrimLeft(text, spaces)
	body = strings.TrimPrefix(body, tagThink)
	if len(body) < len(strings.TrimLeft(text, spaces)) { // began with <think>
		_, after, _ := strings.Cut(body, tagThinkEnd)
		return strings.Contains(after, tagThink)
	}
	return strings.Contains(text, tagThink) || strings.Contains(text, tagThinkEnd)
}

// FuzzParseTurn checks that parsing a turn from its parts keeps Parse's
// promises, and gives what Parse gives for the same turn written out
// whole (reasoning, </think>, answer) after a prompt that opened <think>.
func FuzzParseTurn(f *testing.F) {
	for _, c := range loadCorpus(f) {
		if r, a, ok := strings.Cut(c.text, tagThinkEnd); ok {
			f.Add(r, a, true)
		} else {
			f.Add(c.text, "", false)
		}
	}
	f.Add("abc<|User|>def", "<tool_call>swipe<arg_key>direction</arg_key><arg_value>up</arg_value></tool_call>", true)
	f.Add("plan<|im_end|>x", "tap(1)", true)
	f.Add("", "<|assistant|>tap(1)", true)
	f.Fuzz(func(t *testing.T, r, a string, closed bool) {
		got := ParseTurn(r, a, closed, Options{})
		checkInvariants(t, r+a, got)
		if strings.Contains(r, tagThink) || strings.Contains(r, tagThinkEnd) || strings.TrimSpace(r) == "" {
			return // the written-out form would read other parts, or another header
		}
		whole := r
		if closed || a != "" {
			whole += tagThinkEnd + a
		}
		if want := Parse(whole, Options{InThinking: true}); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseTurn(%q, %q, %v) = %+v\nParse = %+v", r, a, closed, got, want)
		}
	})
}
