package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/internal/cpuset"
	"github.com/droidgo/droidgo/internal/sysmem"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model/kernels"
)

// run's header says which cores run the model: the run_started event's
// engine (JSON) and the plain printer's "engine:" line, from the automatic
// choice or from --cpus and --threads.
func TestRunSaysWhichCores(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	allowed, err := cpuset.Allowed()
	if err != nil || len(allowed) == 0 {
		t.Skipf("no affinity mask here: %v", err)
	}
	cpu := allowed[len(allowed)-1]
	args := []string{"run", "Turn on Wi-Fi", "--sim", "wifi", "--model", path, "--max-steps", "1", "--think-budget", "4", "--poll", "1ms"}
	for _, tc := range []struct {
		name       string
		flags      []string
		env        map[string]string
		threads    int
		cpus       []int
		coresMatch string
	}{
		{name: "default", coresMatch: "CPU"},
		{name: "--cpus", flags: []string{"--cpus", cpuset.FormatList([]int{cpu})}, threads: 1, cpus: []int{cpu}, coresMatch: "(flag --cpus)"},
		{name: "--cpus --threads", flags: []string{"--cpus", cpuset.FormatList([]int{cpu}), "-t", "2"}, threads: 2, cpus: []int{cpu}, coresMatch: "(flag --cpus)"},
		{name: "DROIDGO_CPUS", env: map[string]string{"DROIDGO_CPUS": cpuset.FormatList([]int{cpu})}, threads: 1, cpus: []int{cpu}, coresMatch: "(env DROIDGO_CPUS)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for k, v := range tc.env {
				h.env[k] = v
			}
			r := h.run(context.Background(), append(append(slices.Clone(args), tc.flags...), "--json")...)
			if r.code != 0 && r.code != 1 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var ev loop.Event
			if err := json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &ev); err != nil || ev.Type != loop.EvRunStarted {
				t.Fatalf("first event %q: %v", strings.SplitN(r.stdout, "\n", 2)[0], err)
			}
			e := ev.Engine
			if e == nil {
				t.Fatalf("run_started has no engine: %s", strings.SplitN(r.stdout, "\n", 2)[0])
			}
			if e.Threads < 1 || (tc.threads > 0 && e.Threads != tc.threads) || e.Kernels != kernels.ISA() || !strings.Contains(e.Cores, tc.coresMatch) || e.NotPinned != "" {
				t.Errorf("engine %+v, want %d threads, cores like %q, kernels %s", e, tc.threads, tc.coresMatch, kernels.ISA())
			}
			if tc.cpus != nil && !slices.Equal(e.CPUs, tc.cpus) {
				t.Errorf("engine pinned to %v, want %v", e.CPUs, tc.cpus)
			}
			r = h.run(context.Background(), append(slices.Clone(args), tc.flags...)...)
			if !strings.Contains(r.stdout, "engine:   "+e.String()+"\n") {
				t.Errorf("the plain header does not say %q:\n%s", e.String(), r.stdout)
			}
		})
	}
}

// --cpus and --threads are checked in one place for every command that
// takes them, as the cpus and threads settings are: a bad list or a CPU
// this process may not use is a usage error (exit 2) naming where it came
// from.
func TestCPUsChecked(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"run", "x", "--sim", "wifi", "--model", path, "--cpus", "3-1"}, want: "--cpus"},
		{args: []string{"run", "x", "--sim", "wifi", "--model", path, "--cpus", "1023"}, want: "flag --cpus"},
		{args: []string{"run", "x", "--sim", "wifi", "--model", path, "--threads", "-1"}, want: "--threads"},
		{args: []string{"run", "x", "--sim", "wifi", "--model", path}, env: map[string]string{"DROIDGO_CPUS": "0-"}, want: "DROIDGO_CPUS"},
		{args: []string{"eval", "--model", path, "--cpus", "x"}, want: "--cpus"},
		{args: []string{"serve", "--model", path, "--cpus", "x"}, want: "--cpus"},
		{args: []string{"bench", "agent", "--model", path, "--cpus", "x"}, want: "--cpus"},
		{args: []string{"model", "bench", path, "--cpus", "x"}, want: "--cpus"},
		{args: []string{"model", "bench", path, "--cpus", "1023"}, want: "flag --cpus"},
		{args: []string{"model", "logits", path, "--tokens", "1", "--cpus", "5000"}, want: "--cpus"},
		{args: []string{"model", "chat", path, "--cpus", ""}, env: map[string]string{"DROIDGO_THREADS": "9999"}, want: "DROIDGO_THREADS"},
	} {
		h := newHarness(t)
		for k, v := range tc.env {
			h.env[k] = v
		}
		r := h.run(context.Background(), tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming %s", tc.env, tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// A model the machine has no memory for is refused before it runs, with
// the numbers (a fake /proc/meminfo here): exit 2, like a setting that
// cannot work on this machine.
func TestModelTooBigForMemory(t *testing.T) {
	t.Parallel()
	path := makeRandom(t)
	h := newHarness(t)
	h.setup = func(d *deps) {
		d.meminfo = func() (sysmem.Info, error) { return sysmem.Info{Total: 64 << 20, Available: 9 << 20}, nil }
	}
	r := h.run(context.Background(), "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", path, "--max-steps", "1")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2: %s", r.code, r.stderr)
	}
	for _, want := range []string{"does not fit in memory", "weights ", "KV cache ", "positions at f16", "8 MiB kept free", "MemAvailable is 9 MiB", "MemTotal 64 MiB"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
	if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("the refusal is not one line: %q", r.stderr)
	}
	// --vote 3 counts three sequences' KV.
	r = h.run(context.Background(), "run", "Turn on Wi-Fi", "--sim", "wifi", "--model", path, "--max-steps", "1", "--vote", "3")
	if r.code != 2 || !strings.Contains(r.stderr, "in each of 3 sequences") {
		t.Errorf("--vote 3: exit %d: %s", r.code, r.stderr)
	}
}
