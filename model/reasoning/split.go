// Package reasoning splits a model's streamed output into its reasoning
// and its answer as the tokens arrive, for backends whose engine or server
// gives one stream of text: Spark-style output opens the reasoning with
// <think> and closes it with </think>. FeedDeltas turns each chunk into
// the model.Delta values a backend streams; the loop's parser
// (toolparse.ParseTurn) then takes the two parts as they are.
package reasoning

import (
	"strings"

	"github.com/droidgo/droidgo/model"
)

// The tags around the reasoning.
const (
	Open  = "<think>"
	Close = "</think>"
)

const spaces = " \t\r\n"

// Splitter separates streamed model output into reasoning and answer as
// it arrives. A leading <think> opens the reasoning (a repeat of the one
// the prompt opened is dropped), </think> closes it, and a </think> at the
// very start of an output that was not in reasoning is dropped (an empty
// reasoning closed at once). A tag split across chunks is handled by
// holding back a possible tag prefix until the next chunk decides it;
// Flush releases what is still held at the end.
//
// Unlike toolparse.Parse, the Splitter cannot take back text it already
// gave out as answer, so a </think> appearing later in an output that did
// not start in reasoning stays in the answer: pass inThinking when the
// prompt opened <think>.
type Splitter struct {
	thinking bool   // inside the reasoning
	closed   bool   // a </think> ended the reasoning
	started  bool   // the first non-space text was seen
	held     string // text not yet given out
}

// NewSplitter returns a splitter; inThinking says the prompt already opened
// <think>, so the output starts inside the reasoning.
func NewSplitter(inThinking bool) *Splitter {
	return &Splitter{thinking: inThinking}
}

// InReasoning reports whether the output is currently inside the reasoning.
func (s *Splitter) InReasoning() bool { return s.thinking }

// Closed reports whether a </think> has ended the reasoning.
func (s *Splitter) Closed() bool { return s.closed }

// Feed takes the next chunk and returns the reasoning and answer text it
// completes; closedNow is true for the chunk that closes the reasoning.
// Both parts may be empty while a possible tag is held back.
func (s *Splitter) Feed(chunk string) (reasoning, content string, closedNow bool) {
	s.held += chunk
	var r strings.Builder
	for {
		if !s.started {
			t := strings.TrimLeft(s.held, spaces)
			if t == "" || properPrefix(t, Open) || (!s.thinking && properPrefix(t, Close)) {
				break // only space so far, or maybe the start of a tag
			}
			s.started = true
			switch {
			case strings.HasPrefix(t, Open):
				s.thinking = true
				s.held = t[len(Open):]
			case !s.thinking && strings.HasPrefix(t, Close):
				s.held = t[len(Close):]
				s.closed, closedNow = true, true
			case s.thinking:
				s.held = t
			}
			continue
		}
		if s.thinking {
			if i := strings.Index(s.held, Close); i >= 0 {
				r.WriteString(s.held[:i])
				s.held = s.held[i+len(Close):]
				s.thinking, s.closed, closedNow = false, true, true
				continue
			}
			n := len(s.held) - partialSuffix(s.held, Close)
			r.WriteString(s.held[:n])
			s.held = s.held[n:]
			break
		}
		content = s.held
		s.held = ""
		break
	}
	return r.String(), content, closedNow
}

// Flush returns what is still held back at the end of the output.
func (s *Splitter) Flush() (reasoning, content string) {
	h := s.held
	s.held = ""
	if s.thinking {
		return h, ""
	}
	if !s.started {
		h = strings.TrimLeft(h, spaces)
	}
	return "", h
}

func properPrefix(s, tag string) bool { return len(s) < len(tag) && strings.HasPrefix(tag, s) }

// partialSuffix returns the length of the longest suffix of s that is a
// proper prefix of tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// FeedDeltas is Feed for a backend's stream: it appends to dst the deltas
// chunk completes, in order: its reasoning, the delta that marks the close,
// its answer.
func (s *Splitter) FeedDeltas(dst []model.Delta, chunk string) []model.Delta {
	r, c, closedNow := s.Feed(chunk)
	return appendDeltas(dst, r, c, closedNow)
}

// FlushDeltas is Flush for a backend's stream.
func (s *Splitter) FlushDeltas(dst []model.Delta) []model.Delta {
	r, c := s.Flush()
	return appendDeltas(dst, r, c, false)
}

func appendDeltas(dst []model.Delta, r, c string, closed bool) []model.Delta {
	if r != "" {
		dst = append(dst, model.Delta{Reasoning: r})
	}
	if closed {
		dst = append(dst, model.Delta{ReasoningClosed: true})
	}
	if c != "" {
		dst = append(dst, model.Delta{Content: c})
	}
	return dst
}
