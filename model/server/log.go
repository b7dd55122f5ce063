package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/model"
)

// reqLog collects what a request's log line says. Handlers fill it; the
// server writes it once the handler returned.
type reqLog struct {
	start  time.Time
	now    func() time.Time
	method string
	path   string
	remote string

	mu      sync.Mutex
	status  int
	stream  bool
	stats   model.Stats
	counted bool // stats are a turn's
	finish  string
	queued  time.Duration
	first   time.Duration // to the first generated text
	err     string
}

type logKey struct{}

// logOf returns the request's log record (a throwaway one outside
// ServeHTTP, e.g. in a handler called directly by a test).
func logOf(r *http.Request) *reqLog {
	if rl, ok := r.Context().Value(logKey{}).(*reqLog); ok {
		return rl
	}
	return &reqLog{start: time.Now(), now: time.Now}
}

// fail answers an error and records it.
func (rl *reqLog) fail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody(status, code, msg))
	rl.mu.Lock()
	rl.status, rl.err = status, msg
	rl.mu.Unlock()
}

// line renders the record: time, request, status, then what is known.
func (rl *reqLog) line() string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var b strings.Builder
	status := rl.status
	if status == 0 {
		status = http.StatusOK
	}
	fmt.Fprintf(&b, "%s %s %s %d %s", rl.start.UTC().Format(time.RFC3339), rl.method, pathText(rl.path), status, rl.remote)
	if rl.stream {
		b.WriteString(" stream")
	}
	if rl.counted {
		s := rl.stats
		fmt.Fprintf(&b, " prompt=%d cached=%d completion=%d reasoning=%d", s.PromptTokens, s.CachedTokens, s.GeneratedTokens, s.ThinkTokens)
	}
	if rl.finish != "" {
		fmt.Fprintf(&b, " finish=%s", rl.finish)
	}
	if rl.queued > 0 {
		fmt.Fprintf(&b, " queued=%.2fs", rl.queued.Seconds())
	}
	if rl.first > 0 {
		fmt.Fprintf(&b, " first=%.2fs", rl.first.Seconds())
	}
	fmt.Fprintf(&b, " total=%.2fs", rl.now().Sub(rl.start).Seconds())
	if rl.err != "" {
		fmt.Fprintf(&b, " error=%q", rl.err)
	}
	return b.String()
}

// pathText keeps a client's path to one printable token.
func pathText(p string) string {
	if len(p) > 200 {
		p = p[:200] + "..."
	}
	for _, r := range p {
		if r <= ' ' || r == 0x7f || r == '"' {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}
