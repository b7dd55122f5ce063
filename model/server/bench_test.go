package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/local"
	"github.com/droidgo/droidgo/model/openai"
)

// BenchmarkServeVsInProcess measures the decode throughput of N clients
// streaming from droidgo serve against the same N turns asked of the
// in-process backend directly, interleaved round by round on the same
// engine. It needs a model file (speed does not depend on the weights: a
// full-size random one will do):
//
//	DROIDGO_BENCH_MODEL=/work/models/full-q4_k_m.gguf [DROIDGO_BENCH_CLIENTS=8] \
//	  go test ./model/server -run '^$' -bench ServeVsInProcess -benchtime 3x
//
// The rate is the one of all N sequences decoding together: the tokens
// that arrived between the moment every client had its first token and the
// moment the first client finished, over that time. Each round logs both
// rates; the metrics are their means.
func BenchmarkServeVsInProcess(b *testing.B) {
	path := os.Getenv("DROIDGO_BENCH_MODEL")
	if path == "" {
		b.Skip("set DROIDGO_BENCH_MODEL to a model file")
	}
	clients := 8
	if s := os.Getenv("DROIDGO_BENCH_CLIENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("DROIDGO_BENCH_CLIENTS=%q", s)
		}
		clients = n
	}
	const gen = 128
	backend, err := local.Open(path, local.Options{Repack: true})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	s, err := New(Config{Backend: backend, Parallel: clients})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	client, err := openai.New(ctx, openai.Config{BaseURL: "http://" + ln.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}

	// Each client its own prompt of about 128 tokens after a shared system
	// message, thinking off, no tools: a plain decode of gen tokens.
	reqs := make([]model.ChatRequest, clients)
	for i := range reqs {
		var words []string
		for w := range 100 {
			words = append(words, fmt.Sprintf("w%d-%d", i, w))
		}
		reqs[i] = model.ChatRequest{
			Messages: []model.Message{
				{Role: model.RoleSystem, Content: "You are a helpful assistant."},
				{Role: model.RoleUser, Content: strings.Join(words, " ")},
			},
			MaxTokens: gen,
			Sampling:  model.Sampling{Temperature: 1, TopP: 1, Seed: uint64(i + 1)},
		}
	}
	var inproc, served []float64
	measure := func(name string, be model.Backend) float64 {
		r, err := round(be, reqs)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Logf("%s: %.1f tok/s with %d sequences (%d tokens in %.2f s; first tokens after %.2f s)", name, r.rate, clients, r.tokens, r.window.Seconds(), r.start.Seconds())
		return r.rate
	}
	// One untimed round each warms the caches and the repack.
	measure("warm-up in-process", backend)
	measure("warm-up serve", client)
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			inproc = append(inproc, measure("in-process", backend))
			served = append(served, measure("serve", client))
		} else {
			served = append(served, measure("serve", client))
			inproc = append(inproc, measure("in-process", backend))
		}
	}
	mean := func(xs []float64) float64 {
		t := 0.0
		for _, x := range xs {
			t += x
		}
		return t / float64(len(xs))
	}
	b.ReportMetric(mean(inproc), "inproc_tok/s")
	b.ReportMetric(mean(served), "serve_tok/s")
	b.ReportMetric(mean(served)/mean(inproc), "serve/inproc")
	b.Logf("in-process %.1f-%.1f tok/s, serve %.1f-%.1f tok/s over %d rounds", slices.Min(inproc), slices.Max(inproc), slices.Min(served), slices.Max(served), b.N)
}

type roundResult struct {
	rate   float64
	tokens int
	window time.Duration // all sequences decoding
	start  time.Duration // until every one had its first token
}

// round runs the requests at once on be and measures their joint decode.
func round(be model.Backend, reqs []model.ChatRequest) (roundResult, error) {
	type stamp struct{ times []time.Time }
	stamps := make([]stamp, len(reqs))
	errs := make([]error, len(reqs))
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := be.Chat(context.Background(), req)
			if err != nil {
				errs[i] = err
				return
			}
			defer st.Close()
			for {
				d, err := st.Next()
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					errs[i] = err
					return
				}
				if d.Content != "" || d.Reasoning != "" {
					stamps[i].times = append(stamps[i].times, time.Now())
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return roundResult{}, err
	}
	var allFirst, firstEnd time.Time
	for i, s := range stamps {
		if len(s.times) < 2 {
			return roundResult{}, fmt.Errorf("request %d produced %d pieces", i, len(s.times))
		}
		if f := s.times[0]; f.After(allFirst) {
			allFirst = f
		}
		if e := s.times[len(s.times)-1]; firstEnd.IsZero() || e.Before(firstEnd) {
			firstEnd = e
		}
	}
	if !firstEnd.After(allFirst) {
		return roundResult{}, errors.New("a request ended before the last one started: no window with every sequence decoding")
	}
	n := 0
	for _, s := range stamps {
		for _, t := range s.times {
			if t.After(allFirst) && !t.After(firstEnd) {
				n++
			}
		}
	}
	w := firstEnd.Sub(allFirst)
	return roundResult{rate: float64(n) / w.Seconds(), tokens: n, window: w, start: allFirst.Sub(t0)}, nil
}
