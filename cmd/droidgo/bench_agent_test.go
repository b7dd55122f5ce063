package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/local/localtest"
)

// bench agent runs the real engine on the simulator and reports every
// step with the field names; the second run loads the prefix from
// the disk cache, --cold does not; cache ls and clear see the entry.
func TestBenchAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := localtest.Model(t, 7)
	// One cache for all the commands (droidgo() would make a new one).
	droidgo := func(t *testing.T, ctx context.Context, args ...string) result {
		t.Helper()
		return h.run(ctx, args...)
	}
	bench := func(extra ...string) benchAgentJSON {
		t.Helper()
		args := append([]string{"bench", "agent", "--sim", "wifi", "--model", path, "--steps", "2", "--threads", "2", "--json"}, extra...)
		r := droidgo(t, context.Background(), args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", extra, r.code, r.stderr)
		}
		var out benchAgentJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %v: %s", extra, err, r.stdout)
		}
		// The exact field names of the contract.
		var raw map[string]any
		_ = json.Unmarshal([]byte(r.stdout), &raw)
		steps, _ := raw["steps"].([]any)
		if len(steps) == 0 || raw["model"] == nil || raw["threads"] != float64(2) {
			t.Fatalf("%v: output %s", extra, r.stdout)
		}
		for _, k := range []string{"step", "prompt_tokens", "cached_tokens", "disk_tokens", "ttft_s", "prefill_s", "think_tokens", "think_s", "answer_tokens", "forced_tokens", "answer_s", "overhead_s", "total_s"} {
			if _, ok := steps[0].(map[string]any)[k]; !ok {
				t.Errorf("step without %q: %s", k, r.stdout)
			}
		}
		for _, s := range out.Steps {
			if s.PromptTokens == 0 || s.TotalS <= 0 || s.TTFTS <= 0 || s.AnswerTokens == 0 || s.ForcedTokens > s.AnswerTokens {
				t.Errorf("%v: step %+v", extra, s)
			}
		}
		return out
	}
	cold := bench()
	if d := cold.Steps[0].DiskTokens; d != 0 {
		t.Errorf("first run: %d tokens from disk", d)
	}
	warm := bench()
	s1 := warm.Steps[0]
	if s1.DiskTokens == 0 || s1.CachedTokens != s1.DiskTokens {
		t.Errorf("second run, step 1: %d cached, %d from disk", s1.CachedTokens, s1.DiskTokens)
	}
	if d := bench("--cold").Steps[0].DiskTokens; d != 0 {
		t.Errorf("--cold: %d tokens from disk", d)
	}

	r := droidgo(t, context.Background(), "cache", "ls", "--json")
	var ls struct {
		Dir     string           `json:"dir"`
		Entries []cacheEntryJSON `json:"entries"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ls) != nil || len(ls.Entries) != 1 || ls.Entries[0].Tokens != s1.DiskTokens {
		t.Fatalf("cache ls: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if !strings.HasSuffix(ls.Dir, "droidgo/kv") {
		t.Errorf("cache dir %s", ls.Dir)
	}
	r = droidgo(t, context.Background(), "cache", "clear", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"removed":1`) {
		t.Errorf("cache clear: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r = droidgo(t, context.Background(), "cache", "ls"); r.code != 0 || !strings.Contains(r.stdout, "0 entries") {
		t.Errorf("cache ls after clear: %s", r.stdout)
	}
	if r = droidgo(t, context.Background(), "bench", "agent", "--steps", "0", "--model", path); r.code != 2 {
		t.Errorf("--steps 0: exit %d", r.code)
	}
}

// run saves the prompt prefix by default; the setting (file, environment)
// and --no-prompt-cache turn it off.
func TestRunPromptCacheSetting(t *testing.T) {
	t.Parallel()
	path := localtest.Model(t, 7)
	for _, tc := range []struct {
		name  string
		env   string
		flag  bool
		saved bool
	}{{"default", "", false, true}, {"env off", "false", false, false}, {"flag off", "", true, false}} {
		h := newHarness(t)
		h.env["XDG_CACHE_HOME"] = t.TempDir()
		h.env["DROIDGO_PROMPT_CACHE"] = tc.env
		args := []string{"run", "--sim", "wifi", "--model", path, "--json", "--max-steps", "1", "--no-think"}
		if tc.flag {
			args = append(args, "--no-prompt-cache")
		}
		if r := h.run(context.Background(), args...); r.code != 0 && r.code != 1 {
			t.Fatalf("%s: exit %d: %s", tc.name, r.code, r.stderr)
		}
		o := h.run(context.Background(), "cache", "ls", "--json")
		var ls struct {
			Entries []cacheEntryJSON `json:"entries"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &ls); err != nil {
			t.Fatalf("cache ls: %v: %s", err, o.stdout)
		}
		if saved := len(ls.Entries) > 0; saved != tc.saved {
			t.Errorf("%s: saved = %v: %s", tc.name, saved, o.stdout)
		}
	}
}

// bench agent --parallel runs several agents on one engine, each on its own
// phone, and reports the wall time, the memory and every agent's steps;
// each agent's steps are what a lone agent's are.
func TestBenchAgentParallel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env["XDG_CACHE_HOME"] = t.TempDir()
	path := localtest.Model(t, 7)
	args := []string{"bench", "agent", "--sim", "wifi", "--model", path, "--steps", "2", "--threads", "2", "--cold", "--json"}
	r := h.run(context.Background(), append(args, "--parallel", "3")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, k := range []string{"model", "threads", "parallel", "wall_s", "rss_mb", "model_mb", "prefix_mb", "kv_mb", "agents"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q: %s", k, r.stdout)
		}
	}
	var out benchAgentsJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Parallel != 3 || len(out.Agents) != 3 || out.WallS <= 0 || out.RSSMB <= 0 || out.PrefixMB <= 0 || out.KVMB <= 0 || out.ModelMB <= 0 {
		t.Fatalf("output %+v", out)
	}
	one := h.run(context.Background(), args...)
	var alone benchAgentJSON
	if one.code != 0 || json.Unmarshal([]byte(one.stdout), &alone) != nil {
		t.Fatalf("alone: exit %d: %s", one.code, one.stderr)
	}
	for _, a := range out.Agents {
		if len(a.Steps) != len(alone.Steps) {
			t.Errorf("agent %d: %d steps, alone %d", a.Agent, len(a.Steps), len(alone.Steps))
			continue
		}
		for i, s := range a.Steps {
			w := alone.Steps[i]
			if s.PromptTokens != w.PromptTokens || s.ThinkTokens != w.ThinkTokens || s.AnswerTokens != w.AnswerTokens {
				t.Errorf("agent %d step %d: %d prompt, %d think, %d answer tokens; alone %d, %d, %d", a.Agent, i+1, s.PromptTokens, s.ThinkTokens, s.AnswerTokens, w.PromptTokens, w.ThinkTokens, w.AnswerTokens)
			}
		}
	}
	if r := h.run(context.Background(), "bench", "agent", "--parallel", "0", "--model", path); r.code != 2 {
		t.Errorf("--parallel 0: exit %d", r.code)
	}
}
