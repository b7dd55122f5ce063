package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/local/localtest"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/script"
)

var evalScripts = filepath.Join(fixturesDir, "scripts", "eval")

func evalJSON(t *testing.T, r result) map[string]any {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return v
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func hasKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s has no %q (has %v)", what, k, keysOf(m))
		}
	}
}

// TestEvalJSONContract checks results.json's field names and the
// always-right scripts' scores through the command line.
func TestEvalJSONContract(t *testing.T) {
	t.Parallel()
	r := droidgo(t, context.Background(), "eval", "--model", "script:"+evalScripts, "--json", "--parallel", "4")
	v := evalJSON(t, r)
	hasKeys(t, "results", v, "model", "config", "tasks", "decisions", "summary")
	tasks := v["tasks"].([]any)
	if len(tasks) < 50 {
		t.Errorf("%d tasks, want at least 50", len(tasks))
	}
	for _, x := range tasks {
		tr := x.(map[string]any)
		hasKeys(t, "task", tr, "suite", "name", "repeat", "success", "reason", "steps", "seconds", "prompt_tokens", "generated_tokens", "recoveries")
		if tr["success"] != true {
			t.Errorf("%v: %v", tr["name"], tr["reason"])
		}
	}
	sum := v["summary"].(map[string]any)
	ts := sum["tasks"].(map[string]any)
	hasKeys(t, "summary.tasks", ts, "n", "success", "rate", "ci95")
	if ts["rate"] != 1.0 || ts["n"] != float64(len(tasks)) {
		t.Errorf("summary.tasks = %v", ts)
	}
	if ci := ts["ci95"].([]any); len(ci) != 2 || ci[1] != 1.0 || ci[0].(float64) < 0.9 {
		t.Errorf("ci95 = %v", ci)
	}
	dsum := sum["decisions"].(map[string]any)
	hasKeys(t, "summary.decisions", dsum, "n", "tool_correct", "action_correct")
	if dsum["n"].(float64) < 40 || dsum["action_correct"] != dsum["n"] || dsum["tool_correct"] != dsum["n"] {
		t.Errorf("summary.decisions = %v", dsum)
	}
	// Progress goes to stderr as plain lines when it is not a terminal.
	if !regexp.MustCompile(`(?m)^\[1/\d+\] tasks/`).MatchString(r.stderr) {
		t.Errorf("no progress lines on stderr:\n%s", r.stderr)
	}
}

func TestEvalDecisionsJSON(t *testing.T) {
	t.Parallel()
	r := droidgo(t, context.Background(), "eval", "--suite", "decisions", "--filter", "qs-", "--model", "script:"+filepath.Join(fixturesDir, "scripts", "wifi-wait.txt"), "--json")
	v := evalJSON(t, r)
	ds := v["decisions"].([]any)
	if len(ds) == 0 {
		t.Fatal("no decisions")
	}
	for _, x := range ds {
		d := x.(map[string]any)
		hasKeys(t, "decision", d, "suite", "name", "tool_correct", "action_correct", "call", "seconds")
		// The waiting model is never right on these screens.
		if d["tool_correct"] != false || d["action_correct"] != false {
			t.Errorf("%v scored %v/%v for %v", d["name"], d["tool_correct"], d["action_correct"], d["call"])
		}
		if c, _ := d["call"].(map[string]any); c["name"] != "wait" {
			t.Errorf("%v: call %v, want wait", d["name"], d["call"])
		}
	}
}

func TestEvalExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"eval", "--parallel", "0", "--model", "script:" + evalScripts}, 2, "--parallel"},
		{[]string{"eval", "--repeat", "-1", "--model", "script:" + evalScripts}, 2, "--repeat"},
		{[]string{"eval", "--filter", "(", "--model", "script:" + evalScripts}, 2, "--filter"},
		{[]string{"eval", "--suite", filepath.Join(dir, "nope"), "--model", "script:" + evalScripts}, 2, "nope"},
		{[]string{"eval", "--suite", dir, "--model", "script:" + evalScripts}, 2, "no scenario directories"},
		{[]string{"eval", "--model", "script:x", "--endpoint", "http://127.0.0.1:1"}, 2, "together"},
		{[]string{"eval", "extra"}, 2, ""},
		{[]string{"eval", "--unknown"}, 2, ""},
		{[]string{"eval", "--suite", "tasks", "--model", filepath.Join(dir, "missing.gguf")}, 1, "missing.gguf"},
		{[]string{"eval", "--suite", "tasks", "--model", "script:" + filepath.Join(dir, "missing")}, 1, "missing"},
		{[]string{"eval", "compare", "a.json"}, 2, ""},
		{[]string{"eval", "compare", filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")}, 1, "a.json"},
	} {
		r := droidgo(t, context.Background(), c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || !strings.HasPrefix(r.stderr, "droidgo: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line mentioning %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
	// A score of zero is still an evaluation that ran: exit 0.
	r := droidgo(t, context.Background(), "eval", "--suite", "tasks", "--filter", "wifi", "--model", "script:"+filepath.Join(fixturesDir, "scripts", "wifi-wait.txt"), "--max-steps", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "0/") {
		t.Errorf("zero score: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestEvalOutAndCompare writes results, recordings and a report, replays a
// recording and compares two runs.
func TestEvalOutAndCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	r := droidgo(t, context.Background(), "eval", "--suite", "tasks", "--model", "script:"+evalScripts, "--out", a)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"results.json", "report.html", "runs/tasks/wifi-r1.jsonl", "runs/tasks/wifi-r1.jsonl.txt"} {
		if _, err := os.Stat(filepath.Join(a, f)); err != nil {
			t.Error(err)
		}
	}
	res, err := eval.ReadResults(filepath.Join(a, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range res.Tasks {
		if tr.Recording == "" {
			t.Errorf("%s has no recording", tr.Name)
			continue
		}
		if rr := droidgo(t, context.Background(), "replay", "--no-tui", "--speed", "1000", filepath.Join(a, tr.Recording)); rr.code != 0 {
			t.Errorf("replay %s: exit %d %s", tr.Recording, rr.code, rr.stderr)
		}
		break
	}
	// B: the undoing model on the already-done tasks, the right one elsewhere.
	mixed := t.TempDir()
	undo, _ := filepath.Glob(filepath.Join(fixturesDir, "scripts", "eval-undo", "*.txt"))
	all, _ := filepath.Glob(filepath.Join(evalScripts, "*.txt"))
	for _, f := range append(all, undo...) { // undo scripts overwrite
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mixed, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = droidgo(t, context.Background(), "eval", "--suite", "tasks", "--model", "script:"+mixed, "--out", b)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = droidgo(t, context.Background(), "eval", "compare", filepath.Join(a, "results.json"), filepath.Join(b, "results.json"))
	if r.code != 0 {
		t.Fatalf("compare: exit %d %s", r.code, r.stderr)
	}
	for _, f := range undo {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		if !strings.Contains(r.stdout, "tasks/"+name+": success -> failure") {
			t.Errorf("compare does not list %s as changed:\n%s", name, r.stdout)
		}
	}
	n := len(undo)
	p := 2 * 1.0 / float64(int(1)<<n)
	if !strings.Contains(r.stdout, fmt.Sprintf("%d better in A only, 0 better in B only; exact McNemar p = %.4g", n, p)) {
		t.Errorf("compare output lacks the paired test (p = %.4g):\n%s", p, r.stdout)
	}
	r = droidgo(t, context.Background(), "eval", "compare", "--json", filepath.Join(a, "results.json"), filepath.Join(b, "results.json"))
	var cmp eval.Comparison
	if err := json.Unmarshal([]byte(r.stdout), &cmp); err != nil || cmp.TaskTest.OnlyA != n || cmp.TaskTest.Paired != len(res.Tasks) {
		t.Errorf("compare --json: %v %+v", err, cmp.TaskTest)
	}
}

// turnServer is an OpenAI-compatible server on 127.0.0.1 answering many
// phones at once from the always-right scripts. It keeps no state: the
// script is chosen by the task in the prompt and the turn by how many
// steps the prompt says were taken, so concurrent conversations cannot
// mix up. While meet is set, a request waits for a second to be in
// flight (see below).
func turnServer(t *testing.T, scripts map[string]*script.Script, meet *atomic.Bool) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var requests, peak atomic.Int64
	var inflight atomic.Int64
	earlier := regexp.MustCompile(`\((\d+) earlier steps not shown\)`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// A scripted answer takes microseconds, so requests of several
		// phones overlap only by chance: when asked, a request waits (10 s
		// at most) for another to arrive, which it does only if the client
		// really sends them at once.
		if meet.Load() {
			for deadline := time.Now().Add(10 * time.Second); peak.Load() < 2; {
				if time.Now().After(deadline) {
					meet.Store(false) // one wait is enough to fail the test
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []model.Message `json:"messages"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		task, _, _ := strings.Cut(strings.TrimPrefix(user, "Task: "), "\n")
		s := scripts[task]
		if s == nil {
			http.Error(w, `{"error":{"message":"unknown task"}}`, 400)
			return
		}
		turn := strings.Count(user, "\n- step ")
		if m := earlier.FindStringSubmatch(user); m != nil {
			k, _ := strconv.Atoi(m[1])
			turn += k
		}
		if turn >= len(s.Turns) {
			http.Error(w, `{"error":{"message":"no such turn"}}`, 400)
			return
		}
		st, err := script.New(&script.Script{Name: s.Name, Turns: s.Turns[turn:]}, script.Options{}).Chat(r.Context(), model.ChatRequest{Messages: req.Messages, Think: true})
		if err != nil {
			http.Error(w, `{"error":{"message":"`+err.Error()+`"}}`, 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(d map[string]any) {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for {
			d, err := st.Next()
			if err != nil {
				break
			}
			if d.Reasoning != "" {
				send(map[string]any{"reasoning_content": d.Reasoning})
			}
			if d.Content != "" {
				send(map[string]any{"content": d.Content})
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &requests, &peak
}

// TestEvalEndpointParallelEqualsSequential runs the tasks against a real
// HTTP server with eight phones at once and one at a time: the results
// are the same.
func TestEvalEndpointParallelEqualsSequential(t *testing.T) {
	t.Parallel()
	suite, err := eval.Load("tasks")
	if err != nil {
		t.Fatal(err)
	}
	// The server tells tasks apart by their text, so only tasks whose
	// text no other task shares take part.
	count := map[string]int{}
	for _, tk := range suite.Tasks {
		count[tk.Text]++
	}
	scripts := map[string]*script.Script{}
	var names []string
	for _, tk := range suite.Tasks {
		if count[tk.Text] > 1 {
			continue
		}
		s, err := script.Load(filepath.Join(evalScripts, tk.Name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		scripts[tk.Text] = s
		names = append(names, regexp.QuoteMeta(tk.Name))
	}
	if len(names) < 40 {
		t.Fatalf("only %d tasks with unique texts", len(names))
	}
	var meet atomic.Bool
	srv, requests, peak := turnServer(t, scripts, &meet)
	filter := "^tasks/(" + strings.Join(names, "|") + ")$"
	run := func(parallel int) *eval.Results {
		r := droidgo(t, context.Background(), "eval", "--suite", "tasks", "--filter", filter, "--endpoint", srv.URL, "--model-name", "spark", "--json", "--parallel", strconv.Itoa(parallel))
		evalJSON(t, r)
		var res eval.Results
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		return &res
	}
	seq := run(1)
	seqRequests := requests.Load()
	peak.Store(0)
	meet.Store(true)
	par := run(8)
	if s := seq.Summary.Tasks; s.N != len(names) || s.Success != s.N {
		t.Errorf("sequential: %+v", s)
		for _, tr := range seq.Tasks {
			if !tr.Success {
				t.Logf("%s: %s", tr.Name, tr.Reason)
			}
		}
	}
	if requests.Load() != 2*seqRequests {
		t.Errorf("%d requests in parallel, %d sequentially", requests.Load()-seqRequests, seqRequests)
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d requests at once under --parallel 8", peak.Load())
	}
	type outcome struct {
		success       bool
		reason        string
		steps, tokens int
	}
	key := func(res *eval.Results) map[string]outcome {
		m := map[string]outcome{}
		for _, tr := range res.Tasks {
			m[tr.Name] = outcome{tr.Success, tr.Reason, tr.Steps, tr.PromptTokens}
		}
		return m
	}
	ks, kp := key(seq), key(par)
	if len(ks) != len(kp) {
		t.Fatalf("%d vs %d tasks", len(ks), len(kp))
	}
	for name, o := range ks {
		if kp[name] != o {
			t.Errorf("%s: sequential %+v, parallel %+v", name, o, kp[name])
		}
	}
}

// eval with a model file and --parallel 4 runs the phones' turns together
// on one engine and gives the same results.json and the same recordings as
// --parallel 1 (but for the times), sampled with a seed and greedy: a turn's
// tokens do not depend on the turns beside it.
func TestEvalLocalParallelEqualsSequential(t *testing.T) {
	t.Parallel()
	// The model's weights are F32 (localtest.Model): its tokens decoded
	// together equal them decoded alone where the level keeps F32 products
	// batch invariant (every amd64 level; it runs in-process, at the
	// default level, so it cannot switch to another).
	if !kernels.BatchInvariantFor(quant.F32, false) {
		t.Skipf("kernel level %s does not keep F32 products batch invariant (kernels.BatchInvariantFor): --parallel may change a token's last bits", kernels.ISA())
	}
	path := localtest.Model(t, 11)
	filter := "^tasks/(wifi|alarm|bluetooth|qs-bluetooth)$"
	for _, sampling := range [][]string{{"--seed", "1"}, {"--temperature", "0"}} {
		run := func(parallel int) (map[string]any, map[string][]any) {
			out := t.TempDir()
			args := append([]string{"eval", "--suite", "tasks", "--filter", filter, "--model", path, "--max-steps", "2", "--think-budget", "8",
				"--parallel", strconv.Itoa(parallel), "--out", out, "--json"}, sampling...)
			r := droidgo(t, context.Background(), args...)
			evalJSON(t, r)
			var res map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatal(err)
			}
			recs := map[string][]any{}
			files, _ := filepath.Glob(filepath.Join(out, "runs", "tasks", "*.jsonl"))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					var ev any
					if err := json.Unmarshal([]byte(line), &ev); err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					recs[filepath.Base(f)] = append(recs[filepath.Base(f)], untimed(ev))
				}
			}
			if len(recs) != 4 {
				t.Fatalf("%d recordings in %s", len(recs), out)
			}
			return untimed(res).(map[string]any), recs
		}
		res1, recs1 := run(1)
		res4, recs4 := run(4)
		if c, ok := res4["config"].(map[string]any); ok {
			c["parallel"] = 1.0 // the one setting that differs
		}
		if !reflect.DeepEqual(res1, res4) {
			a, _ := json.Marshal(res1)
			b, _ := json.Marshal(res4)
			t.Errorf("%v: results.json at --parallel 1 and 4 differ:\n%s\n%s", sampling, a, b)
		}
		for name, r1 := range recs1 {
			if r4 := recs4[name]; !reflect.DeepEqual(r1, r4) {
				for i := range min(len(r1), len(r4)) {
					if !reflect.DeepEqual(r1[i], r4[i]) {
						a, _ := json.Marshal(r1[i])
						b, _ := json.Marshal(r4[i])
						t.Errorf("%v: %s event %d differs:\n%s\n%s", sampling, name, i, a, b)
						break
					}
				}
				if len(r1) != len(r4) {
					t.Errorf("%v: %s has %d events at --parallel 1, %d at 4", sampling, name, len(r1), len(r4))
				}
			}
		}
	}
}

// untimed drops what depends on the clock (times, durations, a turn's
// timing stats) from a decoded JSON value.
func untimed(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if k == "time" || k == "created" || k == "seconds" || k == "stats" || strings.HasSuffix(k, "_s") || strings.HasSuffix(k, "_ns") {
				delete(x, k)
				continue
			}
			x[k] = untimed(x[k])
		}
	case []any:
		for i := range x {
			x[i] = untimed(x[i])
		}
	}
	return v
}
