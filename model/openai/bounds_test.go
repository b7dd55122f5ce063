package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// endless streams chunks until the client goes away, and reports on gone
// whether it did.
func endless(chunk string, gone chan<- bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", chunk); err != nil {
				gone <- true
				return
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				gone <- true
				return
			}
		}
		gone <- false
	}
}

// TestServerIgnoringMaxTokens streams tokens without end: droidgo stops at
// the budget it asked for, closes the stream and says why.
func TestServerIgnoringMaxTokens(t *testing.T) {
	gone := make(chan bool, 1)
	b := newTestBackend(t, endless(delta("content", "tap "), gone), nil)
	r := noThink
	r.MaxTokens = 100
	s, err := b.Chat(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	_, content, _, _, err := collect(t, s)
	if err != nil {
		t.Fatalf("a budget stop is the end of the turn, not an error: %v", err)
	}
	if n := strings.Count(content, "tap "); n != 100 {
		t.Errorf("%d tokens taken of a budget of 100", n)
	}
	if st := s.Stats().Stopped; !strings.Contains(st, "more than the 100 tokens") {
		t.Errorf("Stopped = %q", st)
	}
	if !<-gone {
		t.Error("the stream was not closed: the server kept sending for 20 s")
	}
}

// TestAnswerCap streams big chunks with no token budget: the answer stops
// at maxAnswer bytes.
func TestAnswerCap(t *testing.T) {
	gone := make(chan bool, 1)
	b := newTestBackend(t, endless(delta("reasoning_content", strings.Repeat("x", 64<<10)), gone), nil)
	s, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	reasoning, _, _, _, err := collect(t, s)
	if err != nil || len(reasoning) > maxAnswer || len(reasoning) < maxAnswer/2 {
		t.Errorf("%d bytes of reasoning, err %v", len(reasoning), err)
	}
	if !strings.Contains(s.Stats().Stopped, "MiB") || !<-gone {
		t.Errorf("Stopped = %q", s.Stats().Stopped)
	}
}

// TestLineCap sends one data line without end: an error, not 100 MB in
// memory.
func TestLineCap(t *testing.T) {
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"`)
		piece := strings.Repeat("a", 1<<20)
		for range 100 {
			if _, err := io.WriteString(w, piece); err != nil {
				return
			}
		}
	}, nil)
	s, err := b.Chat(context.Background(), noThink)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, err = collect(t, s)
	if !errors.Is(err, ErrStreamBroken) || !strings.Contains(err.Error(), "line longer than 2 MiB") {
		t.Errorf("err %v", err)
	}
}

// TestSeveralModelsNeedAName: with no model named, a server serving more
// than one is refused with their names.
func TestSeveralModelsNeedAName(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"spark-a"},{"id":"spark-b"}]}`)
	})
	_, err := New(context.Background(), Config{BaseURL: srv})
	if err == nil || !strings.Contains(err.Error(), "spark-a, spark-b") || !strings.Contains(err.Error(), "--model-name") {
		t.Errorf("err %v", err)
	}
}

func newTestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// FuzzSSE feeds arbitrary bytes to the stream reader as a server's
// answer: it must end (EOF or an error), never panic, and never hand out
// more than the answer cap.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: "+delta("content", "hi")+"\n\ndata: [DONE]\n\n"), 5)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"tap\",\"arguments\":\"{\\\"index\\\": 3}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n"), 0)
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\"}}\n: keep-alive\nevent: x\n"), 1)
	f.Fuzz(func(t *testing.T, body []byte, maxTokens int) {
		resp := &http.Response{Body: io.NopCloser(bytes.NewReader(body))}
		s := newSSEStream(context.Background(), resp, time.Minute, maxTokens%8 == 0, maxTokens%64)
		defer s.Close()
		total := 0
		for range 1 << 20 {
			d, err := s.Next()
			if err != nil {
				return
			}
			total += len(d.Reasoning) + len(d.Content)
			if total > maxAnswer+maxLine {
				t.Fatalf("%d bytes handed out", total)
			}
		}
		t.Fatal("the stream never ended")
	})
}

// TestStreamCap: keep-alive comments without end (no token, no text) end
// the turn with an error at maxStream bytes instead of holding it forever.
func TestStreamCap(t *testing.T) {
	gone := make(chan bool, 1)
	b := newTestBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		comment := ": " + strings.Repeat("k", 64<<10) + "\n"
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, comment); err != nil {
				break
			}
		}
		gone <- true
	}, nil)
	s, err := b.Chat(context.Background(), noThink)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, err = collect(t, s)
	if !errors.Is(err, ErrStreamBroken) || !strings.Contains(err.Error(), "64 MiB without finishing") {
		t.Errorf("err %v", err)
	}
	<-gone
}
