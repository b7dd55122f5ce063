package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/eval"
	"github.com/droidgo/droidgo/model"
)

// seededModel answers every turn with task_complete, its summary naming
// the request's sampling (so a run's result shows the sampling it got),
// and keeps every request.
type seededModel struct {
	mu   sync.Mutex
	reqs []model.ChatRequest
}

func (m *seededModel) Name() string { return "seeded" }

func (m *seededModel) Chat(_ context.Context, req model.ChatRequest) (model.Stream, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	s := req.Sampling
	summary := fmt.Sprintf("t=%g p=%g seed=%d", s.Temperature, s.TopP, s.Seed)
	return &oneDelta{d: model.Delta{ReasoningClosed: true,
		ToolCalls: []action.Call{{Name: action.TaskComplete, Arguments: map[string]any{"summary": summary}}}}}, nil
}

func (m *seededModel) requests() []model.ChatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.ChatRequest(nil), m.reqs...)
}

// oneDelta is a stream of one delta.
type oneDelta struct {
	d    model.Delta
	done bool
}

func (s *oneDelta) Next() (model.Delta, error) {
	if s.done {
		return model.Delta{}, io.EOF
	}
	s.done = true
	return s.d, nil
}
func (s *oneDelta) CloseReasoning() error { return nil }
func (s *oneDelta) Close() error          { return nil }
func (s *oneDelta) Stats() model.Stats    { return model.Stats{} }

// withFileModel makes the harness's model files open as m, keeping the
// settings each opening was given.
func withFileModel(h *harness, m model.Backend) *[]*config.Config {
	var got []*config.Config
	var mu sync.Mutex
	h.setup = func(d *deps) {
		d.modelOpeners["file"] = func(_ context.Context, spec string, cfg *config.Config) (model.Backend, error) {
			mu.Lock()
			got = append(got, cfg)
			mu.Unlock()
			return m, nil
		}
	}
	return &got
}

// TestModelOpenersGetTheCommandsSettings: run and eval open a model file
// with their own settings, the configuration merged with their flags (an
// opener that read the configuration again would miss the flags).
func TestModelOpenersGetTheCommandsSettings(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--sim", "wifi", "--no-tui"},
		{"eval", "--suite", "tasks", "--filter", "^tasks/wifi$"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.env["DROIDGO_KV_TYPE"] = "f32"
			got := withFileModel(h, &seededModel{})
			r := h.run(context.Background(), append(args, "--model", "/models/x.gguf", "--think-budget", "77", "--top-p", "0.5")...)
			if len(*got) != 1 {
				t.Fatalf("the model file was opened %d times (exit %d, %s)", len(*got), r.code, r.stderr)
			}
			cfg := (*got)[0]
			if cfg == nil || cfg.ThinkBudget != 77 || cfg.Sources["think_budget"] != (config.Source{Origin: config.FromFlag, Name: "think-budget"}) ||
				cfg.TopP != 0.5 || cfg.KVType != "f32" || cfg.Sources["kv_type"].Origin != config.FromEnv {
				t.Errorf("the opener got %+v", cfg)
			}
		})
	}
}

// TestSamplingSettings: temperature, top_p and seed come from the
// defaults, the file, the environment and the flags like every setting,
// reach every request of the run, and are checked against their ranges
// wherever they come from.
func TestSamplingSettings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want model.Sampling
	}{
		{"defaults", nil, nil, model.Sampling{Temperature: config.DefaultTemperature, TopP: config.DefaultTopP}},
		{"environment", map[string]string{"DROIDGO_TEMPERATURE": "0.7", "DROIDGO_TOP_P": "0.8", "DROIDGO_SEED": "42"}, nil, model.Sampling{Temperature: 0.7, TopP: 0.8, Seed: 42}},
		{"flags over environment", map[string]string{"DROIDGO_SEED": "42"}, []string{"--temperature", "0", "--top-p", "1", "--seed", "9"}, model.Sampling{Temperature: 0, TopP: 1, Seed: 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			for k, v := range c.env {
				h.env[k] = v
			}
			m := &seededModel{}
			withFileModel(h, m)
			r := h.run(context.Background(), append([]string{"run", "--sim", "wifi", "--no-tui", "--model", "/models/x.gguf"}, c.args...)...)
			reqs := m.requests()
			if len(reqs) == 0 {
				t.Fatalf("no request (exit %d): %s", r.code, r.stderr)
			}
			for _, req := range reqs {
				if req.Sampling != c.want {
					t.Errorf("request sampling %+v, want %+v", req.Sampling, c.want)
				}
			}
		})
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--temperature", "2.5"}, nil, "--temperature must be at most 2, not 2.5"},
		{[]string{"--temperature", "-1"}, nil, "--temperature: -1 is negative"},
		{[]string{"--top-p", "0"}, nil, "--top-p must be more than 0, not 0"},
		{[]string{"--top-p", "1.5"}, nil, "--top-p must be at most 1, not 1.5"},
		{[]string{"--seed", "-3"}, nil, "--seed: -3 is negative"},
		{nil, map[string]string{"DROIDGO_TOP_P": "nan"}, `DROIDGO_TOP_P: "nan" is not a number`},
		{nil, map[string]string{"DROIDGO_TEMPERATURE": "9"}, "DROIDGO_TEMPERATURE: must be at most 2, not 9"},
	} {
		for _, cmd := range []string{"run", "eval"} {
			h := newHarness(t)
			for k, v := range bad.env {
				h.env[k] = v
			}
			r := h.run(context.Background(), append([]string{cmd, "--model", "script:x.txt"}, bad.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, bad.want) {
				t.Errorf("%s %q %v: exit %d, %q; want 2 and %q", cmd, bad.args, bad.env, r.code, r.stderr, bad.want)
			}
		}
	}
}

// TestEvalSeedsDoNotDependOnParallel: a seeded evaluation gives each task
// and repeat its own seed, from --seed and the run's identity alone, so it
// gives the same results at any --parallel; another --seed gives others.
func TestEvalSeedsDoNotDependOnParallel(t *testing.T) {
	t.Parallel()
	results := func(seed, parallel string) *eval.Results {
		t.Helper()
		h := newHarness(t)
		h.fakeClock()
		withFileModel(h, &seededModel{})
		r := h.run(context.Background(), "eval", "--model", "/models/x.gguf", "--json", "--repeat", "2", "--parallel", parallel,
			"--seed", seed, "--filter", "^(tasks/(wifi|alarm|bluetooth)|decisions/qs-.*)$")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var res eval.Results
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		// Timings depend on the schedule; the parallelism is the one
		// setting that differs.
		for i := range res.Tasks {
			res.Tasks[i].Seconds = 0
		}
		for i := range res.Decisions {
			res.Decisions[i].Seconds = 0
		}
		res.Config.Parallel = 0
		return &res
	}
	one, many := results("7", "1"), results("7", "4")
	a, _ := json.Marshal(one)
	b, _ := json.Marshal(many)
	if string(a) != string(b) {
		t.Errorf("--seed 7 gives other results at --parallel 4:\n%s\n%s", a, b)
	}
	if one.Config.Seed != 7 || len(one.Tasks) < 6 || len(one.Decisions) < 2 {
		t.Fatalf("config %+v, %d tasks, %d decisions", one.Config, len(one.Tasks), len(one.Decisions))
	}
	seen := map[string]bool{}
	for _, r := range one.Tasks {
		seen[r.Summary] = true
	}
	if len(seen) != len(one.Tasks) {
		t.Errorf("%d task runs had %d seeds: %v", len(one.Tasks), len(seen), seen)
	}
	other := results("8", "1")
	if other.Tasks[0].Summary == one.Tasks[0].Summary {
		t.Errorf("--seed 8 gives the same seed as --seed 7: %s", other.Tasks[0].Summary)
	}
}

// TestSamplingReachesAServer: --temperature, --top-p and --seed reach an
// OpenAI-compatible server as temperature, top_p and seed on every
// request; --temperature 0 asks it for greedy decoding.
func TestSamplingReachesAServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want map[string]any
	}{
		{[]string{"--temperature", "0.5", "--top-p", "0.9", "--seed", "42"}, map[string]any{"temperature": 0.5, "top_p": 0.9, "seed": 42.0}},
		{[]string{"--temperature", "0"}, map[string]any{"temperature": 0.0}},
	} {
		srv, reqs := scriptServer(t, filepath.Join(fixturesDir, "scripts", "wifi.txt"), false)
		r := droidgo(t, context.Background(), append([]string{"run", "--sim", "wifi", "--endpoint", srv.URL + "/v1", "--model-name", "m", "--no-tui", "--poll", "1ms"}, c.args...)...)
		srv.Close()
		if r.code != 0 || len(*reqs) == 0 {
			t.Fatalf("%v: exit %d, %d requests: %s", c.args, r.code, len(*reqs), r.stderr)
		}
		for _, req := range *reqs {
			for k, v := range c.want {
				if req[k] != v {
					t.Errorf("%v: request %s = %v, want %v", c.args, k, req[k], v)
				}
			}
		}
	}
}
