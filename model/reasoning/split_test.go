package reasoning

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model"
)

func TestSplitter(t *testing.T) {
	tests := []struct {
		name       string
		inThinking bool
		chunks     []string
		reasoning  string
		content    string
		closed     bool
	}{
		{"in thinking", true, []string{"look at ", "the screen</think>", "<tool_call>"}, "look at the screen", "<tool_call>", true},
		{"tag split", true, []string{"a</th", "ink>b"}, "a", "b", true},
		{"tag split in three", true, []string{"a<", "/thi", "nk>b"}, "a", "b", true},
		{"not a tag", true, []string{"a</th", "ings>b"}, "a</things>b", "", false},
		{"never closed", true, []string{"thinking and thinking</thi"}, "thinking and thinking</thi", "", false},
		{"leading think", false, []string{"\n<th", "ink>plan</think>\n", "tap"}, "plan", "\ntap", true},
		{"repeated think", true, []string{"<think>", "plan</think>x"}, "plan", "x", true},
		{"no reasoning", false, []string{"<tool", "_call>tap"}, "", "<tool_call>tap", false},
		{"empty reasoning closed", false, []string{"</th", "ink>", "answer"}, "", "answer", true},
		{"late close stays content", false, []string{"answer</think>more"}, "", "answer</think>more", false},
		{"partial think at end", false, []string{"<thi"}, "", "<thi", false},
		{"space only", false, []string{"  \n"}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSplitter(tt.inThinking)
			var r, c string
			closes := 0
			for _, ch := range tt.chunks {
				rr, cc, cl := s.Feed(ch)
				r += rr
				c += cc
				if cl {
					closes++
				}
			}
			fr, fc := s.Flush()
			r += fr
			c += fc
			if r != tt.reasoning || c != tt.content {
				t.Errorf("reasoning %q content %q, want %q %q", r, c, tt.reasoning, tt.content)
			}
			if s.Closed() != tt.closed || closes != map[bool]int{true: 1, false: 0}[tt.closed] {
				t.Errorf("Closed() = %v after %d closedNow, want %v", s.Closed(), closes, tt.closed)
			}
		})
	}
}

// FuzzSplitter checks that any chunking of an output gives the same split
// as feeding it whole.
func FuzzSplitter(f *testing.F) {
	for _, s := range []string{
		"look at the screen</think><tool_call>tap<arg_key>index</arg_key><arg_value>1</arg_value></tool_call>",
		"\n<think>plan</think>\ntap(1)", "<think><think>x</think>y", "</think>answer", "answer</think>more",
		"a</th", "<thi", "  \n", "a<|User|>b</think>c", "</thi</think>nk>",
	} {
		f.Add(s, true, uint8(3))
		f.Add(s, false, uint8(1))
	}
	f.Fuzz(func(t *testing.T, text string, inThinking bool, step uint8) {
		n := int(step%16) + 1
		whole := NewSplitter(inThinking)
		r0, c0, _ := whole.Feed(text)
		fr, fc := whole.Flush()
		r0, c0 = r0+fr, c0+fc
		s := NewSplitter(inThinking)
		var r, c strings.Builder
		closes := 0
		for i := 0; i < len(text); i += n {
			rr, cc, closed := s.Feed(text[i:min(i+n, len(text))])
			r.WriteString(rr)
			c.WriteString(cc)
			if closed {
				closes++
			}
		}
		fr, fc = s.Flush()
		r.WriteString(fr)
		c.WriteString(fc)
		if r.String() != r0 || c.String() != c0 {
			t.Fatalf("chunks of %d: reasoning %q content %q; whole: %q %q", n, r.String(), c.String(), r0, c0)
		}
		if closes > 1 || (closes == 1) != s.Closed() || s.Closed() != whole.Closed() {
			t.Fatalf("closedNow %d times, Closed()=%v, whole Closed()=%v", closes, s.Closed(), whole.Closed())
		}
	})
}

// TestDeltas: the deltas a backend streams keep the order of the text:
// reasoning, the close, the answer, and what Flush still held.
func TestDeltas(t *testing.T) {
	s := NewSplitter(true)
	var ds []model.Delta
	for _, ch := range []string{"look", " here</th", "ink>ta", "p</thi"} {
		ds = s.FeedDeltas(ds, ch)
	}
	ds = s.FlushDeltas(ds)
	want := []model.Delta{{Reasoning: "look"}, {Reasoning: " here"}, {ReasoningClosed: true}, {Content: "ta"}, {Content: "p</thi"}}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("deltas %+v, want %+v", ds, want)
	}
}
