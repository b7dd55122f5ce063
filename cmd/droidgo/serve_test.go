package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/model/local/localtest"
)

// lockedBuffer is a buffer a running command writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is a `droidgo serve` running in the test's process.
type served struct {
	url    string // the API root, http://127.0.0.1:PORT/v1
	stderr *lockedBuffer
	stop   func() result
}

var servingURL = regexp.MustCompile(` on (http://127\.0\.0\.1:\d+/v1) `)

// startServe runs `droidgo serve ARGS --port 0` until the test ends (or
// stop is called) and returns its address once it listens.
func startServe(t *testing.T, h *harness, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- executeWith(h.deps(ctx, strings.NewReader(""), &out, &errb), append(append([]string{"serve"}, args...), "--port", "0"))
	}()
	var once sync.Once
	var res result
	s := &served{stderr: &errb, stop: func() result {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				res = result{code, out.String(), errb.String()}
			case <-time.After(30 * time.Second):
				t.Error("droidgo serve did not stop within 30 s of its context")
			}
		})
		return res
	}}
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := servingURL.FindStringSubmatch(out.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case code := <-done:
			t.Fatalf("droidgo serve exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("droidgo serve did not start\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requestLines returns the server's log lines of chat requests.
func (s *served) requestLines() []string {
	var lines []string
	for _, l := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(l, " POST /v1/chat/completions ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestServeRunEndpoint: droidgo run with --endpoint solves the Wi-Fi task
// through droidgo serve (a script model), over real HTTP on 127.0.0.1.
func TestServeRunEndpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := startServe(t, h, "--model", scriptFor("wifi", "0s"), "--model-name", "spark")
	r := newHarness(t).run(context.Background(), "run", "--sim", "wifi", "--endpoint", s.url, "--no-tui", "--poll", "1ms")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s\nserver:\n%s", r.code, r.stdout, r.stderr, s.stderr.String())
	}
	sr := s.stop()
	if sr.code != 0 {
		t.Errorf("serve: exit %d: %s", sr.code, sr.stderr)
	}
	lines := s.requestLines()
	if len(lines) != 5 {
		t.Errorf("%d logged requests, want one per step (5):\n%s", len(lines), sr.stderr)
	}
	for _, l := range lines {
		if !strings.Contains(l, " 200 ") || !strings.Contains(l, " stream ") || !strings.Contains(l, "finish=tool_calls") {
			t.Errorf("log line %q", l)
		}
	}
	if !strings.Contains(sr.stdout, `serving script:wifi.txt as "spark" on http://127.0.0.1:`) {
		t.Errorf("stdout %q", sr.stdout)
	}
}

func TestServeUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "70000", "--model", "script:x"}, "--port"},
		{[]string{"serve", "--parallel", "0", "--model", "script:x"}, "--parallel"},
		{[]string{"serve", "--max-tokens", "0", "--model", "script:x"}, "--max-tokens"},
		{[]string{"serve", "--max-body", "10", "--model", "script:x"}, "--max-body"},
		{[]string{"serve", "--port", "0"}, "droidgo pull"},
		{[]string{"serve", "extra"}, "unknown command"},
	} {
		r := droidgo(t, context.Background(), tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, r.code, r.stderr)
		}
	}
}

// TestServeEvalParallel runs eval with eight phones at once through droidgo
// serve over a tiny random model: every task runs, every model turn is a
// request the server logs, the thinking budget's early close reaches the
// server as a client going away, and the answers, produced under the
// constraint, are calls the phones carry out.
func TestServeEvalParallel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := startServe(t, h, "--model", localtest.Model(t, 11), "--parallel", "8")
	suite, err := eval.Load("tasks")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tk := range suite.Tasks[:8] {
		names = append(names, regexp.QuoteMeta(tk.Name))
	}
	filter := "^tasks/(" + strings.Join(names, "|") + ")$"
	r := h.run(context.Background(), "eval", "--suite", "tasks", "--filter", filter, "--endpoint", s.url, "--parallel", "8", "--max-steps", "2", "--think-budget", "12", "--json")
	evalJSON(t, r)
	var res eval.Results
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 8 {
		t.Fatalf("%d tasks", len(res.Tasks))
	}
	steps := 0
	for _, tr := range res.Tasks {
		if tr.NotRun || tr.Steps == 0 || tr.GeneratedTokens == 0 {
			t.Errorf("%s: %+v", tr.Name, tr)
		}
		steps += tr.Steps
	}
	// The server logs a request when its handler returns, which can be
	// after the client has read the last chunk: stopping the server waits
	// for every handler, so the log is complete.
	if sr := s.stop(); sr.code != 0 {
		t.Errorf("serve: exit %d: %s", sr.code, sr.stderr)
	}
	lines := s.requestLines()
	var answered, cut int
	for _, l := range lines {
		switch {
		case strings.Contains(l, "finish=tool_calls"):
			answered++
		case strings.Contains(l, "finish=cancelled"):
			cut++
		}
	}
	// Each step: a turn whose reasoning the budget cut (the client hangs
	// up and asks again without thinking), then the answer.
	if answered < steps || cut == 0 {
		t.Errorf("%d steps, %d answered and %d cut requests in the log:\n%s", steps, answered, cut, strings.Join(lines, "\n"))
	}
}

// node returns the node binary and the directory with the openai package
// installed (.ci/run installs it), or skips.
func nodeClient(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs("testdata/node")
	node, err := exec.LookPath("node")
	_, perr := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json"))
	if err == nil && perr == nil {
		return node, dir
	}
	if os.Getenv("DROIDGO_REQUIRE_NODE") == "1" {
		t.Fatalf("node or the openai npm package is missing (npm ci --prefix cmd/droidgo/testdata/node) and DROIDGO_REQUIRE_NODE=1: %v %v", err, perr)
	}
	t.Skip("SKIPPED, NOT PASSED: node or the openai npm package is missing (run: npm ci --prefix cmd/droidgo/testdata/node; DROIDGO_REQUIRE_NODE=1 makes this a failure)")
	return "", ""
}

// TestServeOpenAINodeClient: the official openai npm package streams a
// tool call from droidgo serve (the in-process engine with a tiny random
// model, answers under the constraint) and reads tool_calls, reasoning and
// usage; a wrong key is its AuthenticationError.
func TestServeOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, dir := nodeClient(t)
	h := newHarness(t)
	s := startServe(t, h, "--model", localtest.Model(t, 3), "--model-name", "spark", "--api-key", "sesame")
	cmd := exec.Command(node, filepath.Join(dir, "client.mjs"), s.url, "sesame")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s\nserver:\n%s", err, out, s.stderr.String())
	}
	var got struct {
		Streamed struct {
			Calls     []struct{ Name, Arguments string }
			Finish    string
			Reasoning int
			Usage     struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		Whole struct {
			Calls  []struct{ Name, Arguments string }
			Finish string
		}
		WrongKey struct {
			Status int
			Name   string
		}
		Models []string
	}
	if err := json.Unmarshal(lastLine(out), &got); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	valid := func(calls []struct{ Name, Arguments string }) bool {
		if len(calls) != 1 {
			return false
		}
		var args map[string]any
		return json.Unmarshal([]byte(calls[0].Arguments), &args) == nil && regexp.MustCompile(`^[a-z_]+$`).MatchString(calls[0].Name)
	}
	st := got.Streamed
	if !valid(st.Calls) || st.Finish != "tool_calls" || st.Usage.PromptTokens == 0 || st.Usage.CompletionTokens == 0 || st.Reasoning == 0 {
		t.Errorf("streamed: %+v", st)
	}
	if !valid(got.Whole.Calls) || got.Whole.Finish != "tool_calls" {
		t.Errorf("whole: %+v", got.Whole)
	}
	if got.WrongKey.Status != 401 || got.WrongKey.Name != "AuthenticationError" {
		t.Errorf("wrong key: %+v", got.WrongKey)
	}
	if fmt.Sprint(got.Models) != "[spark]" {
		t.Errorf("models %v", got.Models)
	}
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// curl runs curl with args, or skips without it.
func curl(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("DROIDGO_REQUIRE_CURL") == "1" {
			t.Fatal("curl is not installed and DROIDGO_REQUIRE_CURL=1")
		}
		t.Skip("SKIPPED, NOT PASSED: curl is not installed (apt-get install curl; DROIDGO_REQUIRE_CURL=1 makes this a failure)")
	}
	return exec.Command(bin, append([]string{"-sS", "--max-time", "60"}, args...)...)
}

// TestServeCurl talks to droidgo serve with curl: a streamed tool call, a
// client killed mid-stream (its generation stops, the next request is
// served at once), an oversized body, a wrong key and a flood of requests
// past the queue.
func TestServeCurl(t *testing.T) {
	t.Parallel()
	curl(t) // skips without curl
	h := newHarness(t)
	// A slow script model: a turn takes seconds, so a client can be
	// killed in the middle of one.
	turn := "--- turn\n" + strings.Repeat("The screen shows the settings list and the task asks for Wi-Fi. ", 4) +
		"</think><tool_call>tap<arg_key>index</arg_key><arg_value>0</arg_value></tool_call>\n"
	path := filepath.Join(t.TempDir(), "slow.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat(turn, 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, h, "--model", "script:"+path+"?pace=30ms", "--model-name", "spark", "--api-key", "sesame", "--parallel", "1", "--queue", "1", "--max-body", "16384")
	body := func(stream bool) string {
		b, _ := json.Marshal(map[string]any{
			"model": "spark", "stream": stream,
			"messages": []any{map[string]any{"role": "user", "content": "Task: Turn on Wi-Fi\n\nCurrent screen:\n[0] text Settings"}},
			"tools":    json.RawMessage(droidgoToolsJSON(t)),
		})
		return string(b)
	}
	auth := "Authorization: Bearer sesame"

	// A client killed mid-stream.
	c := curl(t, "-N", "-H", auth, "-d", body(true), s.url+"/chat/completions")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stdout)
	var seen strings.Builder
	for {
		line, err := br.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			t.Fatalf("stream ended before any reasoning: %v\n%s\nserver:\n%s", err, seen.String(), s.stderr.String())
		}
		if strings.Contains(line, `"reasoning_content"`) {
			break
		}
	}
	killed := time.Now()
	c.Process.Kill()
	c.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.stderr.String(), "finish=cancelled") {
		if time.Now().After(deadline) {
			t.Fatalf("no cancelled request in the log:\n%s", s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("the generation stopped %s after its client was killed", d)
	}

	// A streamed tool call (the script's next turn).
	out, err := curl(t, "-N", "-H", auth, "-d", body(true), s.url+"/chat/completions").Output()
	if err != nil {
		t.Fatalf("curl: %v", err)
	}
	text := string(out)
	for _, want := range []string{`"reasoning_content":`, `"tool_calls":[{"index":0,"id":"call_`, `"function":{"name":"tap","arguments":"{\"index\":0}"}`, `"finish_reason":"tool_calls"`, "data: [DONE]"} {
		if !strings.Contains(text, want) {
			t.Errorf("stream lacks %s:\n%s", want, text)
		}
	}

	// Refusals with their statuses.
	for _, tc := range []struct {
		name string
		args []string
		code string
	}{
		{"oversized", []string{"-H", auth, "-d", strings.Repeat(" ", 16384) + body(false)}, "413"},
		{"wrong key", []string{"-H", "Authorization: Bearer open", "-d", body(false)}, "401"},
		{"no key", []string{"-d", body(false)}, "401"},
	} {
		out, err := curl(t, append(tc.args, "-o", "/dev/null", "-w", "%{http_code}", s.url+"/chat/completions")...).Output()
		if err != nil || string(out) != tc.code {
			t.Errorf("%s: %q %v", tc.name, out, err)
		}
	}
	if !strings.Contains(s.stderr.String(), `413 127.0.0.1:`) || !strings.Contains(s.stderr.String(), "the request body is larger than 16384 bytes") {
		t.Errorf("the oversized body is not logged:\n%s", s.stderr.String())
	}

	// A flood: one request runs, one waits, the rest are turned away with
	// a time to come back.
	var wg sync.WaitGroup
	codes := make(chan string, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := curl(t, "-H", auth, "-d", body(false), "-o", "/dev/null", "-w", "%{http_code} %header{retry-after}", s.url+"/chat/completions").Output()
			codes <- string(out)
		}()
	}
	wg.Wait()
	close(codes)
	n := map[string]int{}
	for c := range codes {
		code, retry, _ := strings.Cut(c, " ")
		n[code]++
		if code == "429" && (retry == "" || retry == "0") {
			t.Errorf("429 without Retry-After: %q", c)
		}
	}
	if n["429"] != 10 || n["200"] != 2 {
		t.Errorf("flood of 12 against 1 slot and 1 place in the queue: %v", n)
	}
}

func droidgoToolsJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "model", "chat", "testdata", "droidgo-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
