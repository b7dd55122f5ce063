// Package config holds droidgo's settings: built-in defaults, overridden by
// the configuration file ($XDG_CONFIG_HOME/droidgo/config.toml), overridden
// by environment variables, overridden by command-line flags. It remembers
// where each value came from so `droidgo config` can say.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/droidgo/droidgo/internal/cpuset"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/model"
)

// Settings are the effective values.
type Settings struct {
	Model       string   // a GGUF file, an HF directory or script:FILE
	Endpoint    string   // an OpenAI-compatible server URL
	ModelName   string   // the model name on Endpoint
	Device      string   // the ADB serial
	MaxSteps    int      // step budget of a run
	Think       bool     // thinking on
	ThinkBudget int      // reasoning tokens before the loop closes the reasoning
	Threads     int      // engine threads; 0 = one per chosen core
	CPUs        string   // the CPUs the engine runs on ("4-7"); "" = the fastest cores
	Repack      bool     // interleave K-quant weights in the background after loading
	Constrain   bool     // constrained answers in the in-process engine
	PromptCache bool     // keep the fixed prompt prefix's KV state on disk
	WeightCache bool     // keep the repacked (interleaved) weights on disk
	KVType      string   // KV cache element type of the in-process engine: f16 or f32
	Sensitive   []string // labels whose taps always wait for approval
	Temperature float64  // sampling temperature; 0 is greedy decoding
	TopP        float64  // nucleus sampling threshold
	Seed        int      // sampling seed
	Vote        int      // chains per turn that vote on the call (1: no vote)
}

// Key describes one setting.
type Key struct {
	Name    string // in the file, e.g. max_steps
	Env     string // environment variable, e.g. DROIDGO_MAX_STEPS
	Kind    string // "string", "int", "float", "bool" or "list"
	Default string
	Help    string
	field   func(*Settings) any
}

// MaxThreads bounds the threads setting and every --threads flag: each
// engine thread is an OS thread locked to its goroutine, and the engine
// refuses more (spark.MaxThreads, which a test keeps equal).
const MaxThreads = 256

// limit is the range of a number setting: at least min (more than min
// when above), at most max.
type limit struct {
	min, max float64
	above    bool // min itself is out of range
}

// limits are the ranges of the number settings. Every source (file,
// environment, flag) is checked against them when it is read, so `droidgo
// config` refuses what a run would, and the flags that mean the same
// without being settings (model bench -t, model chat --temp) use them too
// (Key.Check, CheckFlag). A number setting without a row here only must
// not be negative.
var limits = map[string]limit{
	"max_steps":   {min: 1, max: math.Inf(1)},
	"threads":     {min: 0, max: MaxThreads},
	"temperature": {min: 0, max: MaxTemperature},
	"top_p":       {min: 0, max: 1, above: true},
	"vote":        {min: 1, max: loop.MaxVote},
}

// stringChecks are the forms of the text settings that have one, checked
// for every source like the limits (an empty value is the default).
var stringChecks = map[string]func(string) error{
	"cpus": func(v string) error { _, err := cpuset.ParseList(v); return err },
}

// MaxTemperature bounds the temperature setting: beyond 2 (the OpenAI
// API's own bound) a small model's tokens are noise.
const MaxTemperature = 2

// The sampling defaults are Spark's official settings; a temperature of 0
// means greedy decoding.
const (
	DefaultTemperature = 1.0
	DefaultTopP        = 0.95
)

// DefaultThinkBudget is the reasoning budget of a step (think_budget)
// when no file, variable or flag sets one. (loop.Config's zero value is no
// budget at all; droidgo's settings start from this one.)
const DefaultThinkBudget = 1024

// Keys lists every setting, in the order `droidgo config` shows them. The
// defaults of a run's step budget and sensitive labels are the loop's own.
var Keys = []Key{
	{"model", "DROIDGO_MODEL", "string", "", "model file (GGUF), HF directory or script:FILE", func(s *Settings) any { return &s.Model }},
	{"endpoint", "DROIDGO_ENDPOINT", "string", "", "OpenAI-compatible server URL, used instead of a model file", func(s *Settings) any { return &s.Endpoint }},
	{"model_name", "DROIDGO_MODEL_NAME", "string", "", "model name on the endpoint (default: the server's only model)", func(s *Settings) any { return &s.ModelName }},
	{"device", "ANDROID_SERIAL", "string", "", "ADB serial of the phone (default: the only attached device)", func(s *Settings) any { return &s.Device }},
	{"max_steps", "DROIDGO_MAX_STEPS", "int", strconv.Itoa(loop.DefaultMaxSteps), "step budget of a run", func(s *Settings) any { return &s.MaxSteps }},
	{"think", "DROIDGO_THINK", "bool", "true", "let the model reason before it answers", func(s *Settings) any { return &s.Think }},
	{"think_budget", "DROIDGO_THINK_BUDGET", "int", strconv.Itoa(DefaultThinkBudget), "reasoning tokens per step before the reasoning is closed", func(s *Settings) any { return &s.ThinkBudget }},
	{"threads", "DROIDGO_THREADS", "int", "0", "threads of the in-process engine (0: one per core it runs on)", func(s *Settings) any { return &s.Threads }},
	{"cpus", "DROIDGO_CPUS", "string", "", "CPUs the in-process engine runs on, pinned, as a list like 4-7 or 0,2,4 (empty: the fastest cores, one thread each; on phones and hybrid CPUs the slower cores are left out)", func(s *Settings) any { return &s.CPUs }},
	{"repack", "DROIDGO_REPACK", "bool", "true", "interleave the model's Q4_K/Q6_K/Q8_0 weights in the background after loading, for faster decoding (false: keep the file's layout)", func(s *Settings) any { return &s.Repack }},
	{"constrain", "DROIDGO_CONSTRAIN", "bool", "true", "limit the in-process model's answers to valid tool calls", func(s *Settings) any { return &s.Constrain }},
	{"prompt_cache", "DROIDGO_PROMPT_CACHE", "bool", "true", "keep the KV state of the fixed prompt prefix (system prompt and tools) in $XDG_CACHE_HOME/droidgo/kv and load it in the next run instead of recomputing it", func(s *Settings) any { return &s.PromptCache }},
	{"weights_cache", "DROIDGO_WEIGHTS_CACHE", "bool", "true", "keep the repack's interleaved weights in $XDG_CACHE_HOME/droidgo/weights (about the model file's size) and map them in the next run instead of copying them into fresh memory again", func(s *Settings) any { return &s.WeightCache }},
	{"kv_type", "DROIDGO_KV_TYPE", "string", "f16", "KV cache type of the in-process engine: f16 (half the memory, llama.cpp's default) or f32", func(s *Settings) any { return &s.KVType }},
	{"sensitive", "DROIDGO_SENSITIVE", "list", strings.Join(loop.DefaultSensitive, ","), "labels whose taps always wait for approval (comma-separated in the environment)", func(s *Settings) any { return &s.Sensitive }},
	{"temperature", "DROIDGO_TEMPERATURE", "float", formatFloat(DefaultTemperature), "sampling temperature of the model's turns (0: greedy, always the most likely token)", func(s *Settings) any { return &s.Temperature }},
	{"top_p", "DROIDGO_TOP_P", "float", formatFloat(DefaultTopP), "nucleus sampling: draw from the most likely tokens that make up this much probability (1: all)", func(s *Settings) any { return &s.TopP }},
	{"seed", "DROIDGO_SEED", "int", "0", "sampling seed: the same seed, model and screens give the same run (eval derives each task's and repeat's seed from it)", func(s *Settings) any { return &s.Seed }},
	{"vote", "DROIDGO_VOTE", "int", "1", "thinking chains per step, decoded together from the same prompt; the call most of them agree on is taken (1: one chain)", func(s *Settings) any { return &s.Vote }},
}

// Config is the effective settings and where each came from.
type Config struct {
	Settings
	// Path is the configuration file consulted (it may not exist).
	Path string
	// Sources maps a key name to where its value came from.
	Sources map[string]Source
}

// Origin is the kind of place a setting's value came from. The origins
// are ordered by authority: a flag overrides the environment, which
// overrides the file, which overrides the default.
type Origin int

// Origins, in increasing authority.
const (
	FromDefault Origin = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where one setting's value came from.
type Source struct {
	Origin Origin
	// Name is the environment variable (FromEnv) or the flag without its
	// dashes (FromFlag).
	Name string
}

// String says where a value came from as `droidgo config` shows it:
// "default", "file", "env NAME" or "flag --NAME".
func (s Source) String() string {
	switch s.Origin {
	case FromFile:
		return "file"
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag --" + s.Name
	}
	return "default"
}

// Path returns the configuration file's location: DROIDGO_CONFIG if set,
// else $XDG_CONFIG_HOME/droidgo/config.toml, else ~/.config/droidgo/config.toml.
func Path(getenv func(string) string) string {
	if p := getenv("DROIDGO_CONFIG"); p != "" {
		return p
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "droidgo", "config.toml")
}

// Load builds the configuration from defaults, the file and the
// environment. getenv is os.Getenv outside tests. A missing file is not an
// error, unless DROIDGO_CONFIG names it; a malformed one is, with its line.
func Load(getenv func(string) string) (*Config, error) {
	c := &Config{Path: Path(getenv), Sources: map[string]Source{}}
	for _, k := range Keys {
		if err := c.set(k, k.Default, Source{Origin: FromDefault}); err != nil {
			panic("config: bad default for " + k.Name) // a programming error, caught by tests
		}
	}
	if err := c.loadFile(getenv("DROIDGO_CONFIG") != ""); err != nil {
		return nil, err
	}
	for _, k := range Keys {
		if v, ok := lookupEnv(getenv, k.Env); ok {
			if err := c.set(k, v, Source{Origin: FromEnv, Name: k.Env}); err != nil {
				return nil, fmt.Errorf("environment variable %s: %w", k.Env, err)
			}
		}
	}
	return c, nil
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func (c *Config) loadFile(named bool) error {
	data, err := os.ReadFile(c.Path)
	if errors.Is(err, os.ErrNotExist) {
		if named {
			// A file asked for by name that is not there is a typo, not
			// an empty configuration.
			return fmt.Errorf("DROIDGO_CONFIG names %s, which does not exist", c.Path)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read configuration: %w", err)
	}
	raw := map[string]any{}
	_, err = toml.Decode(string(data), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d: %s", c.Path, pe.Position.Line, pe.Message)
		}
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		k, ok := Lookup(name)
		line := keyLine(data, name)
		at := c.Path
		if line > 0 {
			at = fmt.Sprintf("%s:%d", c.Path, line)
		}
		if !ok {
			return fmt.Errorf("%s: unknown setting %q (known: %s)", at, name, strings.Join(keyNames(), ", "))
		}
		if err := c.setValue(k, raw[name], Source{Origin: FromFile}); err != nil {
			return fmt.Errorf("%s: %s: %w", at, name, err)
		}
	}
	return nil
}

// keyLine finds the line that sets a top-level key, for error messages.
func keyLine(data []byte, name string) int {
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "["+name+"]" || l == "[["+name+"]]" {
			return i + 1
		}
		if strings.HasPrefix(l, name) {
			rest := strings.TrimSpace(strings.TrimPrefix(l, name))
			if strings.HasPrefix(rest, "=") {
				return i + 1
			}
		}
	}
	return 0
}

func keyNames() []string {
	out := make([]string, len(Keys))
	for i, k := range Keys {
		out[i] = k.Name
	}
	return out
}

// Lookup returns the setting named name.
func Lookup(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

// setValue stores a value decoded from TOML.
func (c *Config) setValue(k Key, v any, source Source) error {
	switch k.Kind {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string, got %s", tomlKind(v))
		}
		return c.set(k, s, source)
	case "int":
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("want a whole number, got %s", tomlKind(v))
		}
		return c.set(k, strconv.FormatInt(n, 10), source)
	case "float":
		switch n := v.(type) {
		case float64:
			return c.set(k, formatFloat(n), source)
		case int64: // `temperature = 1` is a number too
			return c.set(k, strconv.FormatInt(n, 10), source)
		}
		return fmt.Errorf("want a number, got %s", tomlKind(v))
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("want true or false, got %s", tomlKind(v))
		}
		return c.set(k, strconv.FormatBool(b), source)
	case "list":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want a list of strings, got %s", tomlKind(v))
		}
		items := make([]string, len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want a list of strings, item %d is %s", i+1, tomlKind(e))
			}
			if strings.Contains(s, ",") {
				return fmt.Errorf("item %q contains a comma", s)
			}
			items[i] = s
		}
		return c.set(k, strings.Join(items, ","), source)
	}
	return fmt.Errorf("unknown kind %s", k.Kind)
}

// tomlKind names the TOML kind of a decoded value, as the file's author
// wrote it (not Go's type names).
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "a whole number"
	case float64:
		return "a decimal number"
	case bool:
		return "true or false"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a [section] table"
	}
	return "a date or time"
}

// set parses a textual value into the setting.
func (c *Config) set(k Key, v string, source Source) error {
	switch p := k.field(&c.Settings).(type) {
	case *string:
		if check := stringChecks[k.Name]; check != nil && strings.TrimSpace(v) != "" {
			if err := check(v); err != nil {
				return err
			}
		}
		*p = v
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if err := k.Check(n); err != nil {
			return err
		}
		*p = n
	case *float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%q is not a number", v)
		}
		if err := k.CheckFloat(f); err != nil {
			return err
		}
		*p = f
	case *bool:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*p = b
	case *[]string:
		var items []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		*p = items
	}
	c.Sources[k.Name] = source
	return nil
}

// Check reports whether n is a valid value of the int setting k: not
// negative, and within its limits when it has some. Flags that are not
// settings but mean the same (model bench -t, model chat --threads) use it
// too, so a limit is the same everywhere.
func (k Key) Check(n int) error {
	if n < 0 {
		return fmt.Errorf("%d is negative", n)
	}
	return k.CheckFloat(float64(n))
}

// CheckFloat reports whether f is within the limits of the number setting
// k (not negative when it has none).
func (k Key) CheckFloat(f float64) error {
	lim, ok := limits[k.Name]
	if !ok {
		lim = limit{min: 0, max: math.Inf(1)}
	}
	switch {
	case lim.above && f <= lim.min:
		return rangeError(fmt.Sprintf("must be more than %s, not %s", formatFloat(lim.min), formatFloat(f)))
	case f < lim.min && lim.min == 0:
		return fmt.Errorf("%s is negative", formatFloat(f))
	case f < lim.min:
		return rangeError(fmt.Sprintf("must be at least %s, not %s", formatFloat(lim.min), formatFloat(f)))
	case f > lim.max:
		return rangeError(fmt.Sprintf("must be at most %s, not %s", formatFloat(lim.max), formatFloat(f)))
	}
	return nil
}

// formatFloat writes a number as short as it reads back: 1, 0.95, 1e-05.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// rangeError is a value out of its setting's range; it reads after the
// setting's or flag's name ("--threads must be at most 256, not 1000").
type rangeError string

func (e rangeError) Error() string { return string(e) }

// flagError names the flag in err: "--NAME must ..." for a range error,
// "--NAME: ..." for others.
func flagError(flag string, err error) error {
	var re rangeError
	if errors.As(err, &re) {
		return fmt.Errorf("--%s %w", flag, err)
	}
	return fmt.Errorf("--%s: %w", flag, err)
}

// CheckFlag checks the value of a flag that sets the int setting name,
// with the flag's name in the message.
func CheckFlag(name, flag string, n int) error {
	return checkFlag(name, flag, func(k Key) error { return k.Check(n) })
}

// CheckStringFlag checks the value of a flag that sets the text setting
// name (model bench --cpus), with the flag's name in the message.
func CheckStringFlag(name, flag, v string) error {
	return checkFlag(name, flag, func(k Key) error {
		if check := stringChecks[k.Name]; check != nil && strings.TrimSpace(v) != "" {
			return check(v)
		}
		return nil
	})
}

// CheckFloatFlag checks the value of a flag that sets the float setting
// name, with the flag's name in the message.
func CheckFloatFlag(name, flag string, f float64) error {
	return checkFlag(name, flag, func(k Key) error { return k.CheckFloat(f) })
}

func checkFlag(name, flag string, check func(Key) error) error {
	k, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	if err := check(k); err != nil {
		return flagError(flag, err)
	}
	return nil
}

// SetFlag records a value given on the command line for setting name.
func (c *Config) SetFlag(name, value, flag string) error {
	k, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown setting %q", name)
	}
	if err := c.set(k, value, Source{Origin: FromFlag, Name: flag}); err != nil {
		return flagError(flag, err)
	}
	return nil
}

// Value renders a setting's current value as text.
func (c *Config) Value(name string) string {
	k, ok := Lookup(name)
	if !ok {
		return ""
	}
	switch p := k.field(&c.Settings).(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return formatFloat(*p)
	case *bool:
		return strconv.FormatBool(*p)
	case *[]string:
		return strings.Join(*p, ",")
	}
	return ""
}

// Loop is the part of a run's loop.Config the settings decide: the step
// budget, thinking and its budget, the constraint, the sensitive labels
// and the sampling. Every command that runs the agent (run, eval, bench
// agent) starts from it and adds the task, the phone, the model, the
// clock and the consumers. The token bound of a turn is the loop's rule
// (loop.TurnTokens), applied where MaxTokens is left 0.
func (s *Settings) Loop() loop.Config {
	lc := loop.Config{
		MaxSteps:    s.MaxSteps,
		Think:       s.Think,
		ThinkBudget: s.ThinkBudget,
		Constrain:   s.Constrain,
		Sensitive:   s.Sensitive,
		Sampling:    model.Sampling{Temperature: s.Temperature, TopP: s.TopP, Seed: uint64(s.Seed)},
		Vote:        s.Vote,
	}
	if s.Vote > 1 && s.Temperature == 0 {
		// Greedy chains all say the same.
		lc.Warnings = append(lc.Warnings, fmt.Sprintf("vote %d with temperature 0: greedy decoding gives every chain the same answer, so the vote only costs time", s.Vote))
	}
	return lc
}
