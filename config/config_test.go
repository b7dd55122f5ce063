package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "droidgo", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPrecedence(t *testing.T) {
	dir := writeConfig(t, "# defaults for my phone\nmax_steps = 30\nthink = false\nsensitive = [\"Pay\", \"Transfer\"]\nmodel = \"/models/spark.gguf\"\n")
	c, err := Load(env(map[string]string{"XDG_CONFIG_HOME": dir, "DROIDGO_MAX_STEPS": "12", "ANDROID_SERIAL": "emulator-5554"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetFlag("model", "script:x.txt", "model"); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"max_steps":    {"12", "env DROIDGO_MAX_STEPS"},
		"think":        {"false", "file"},
		"sensitive":    {"Pay,Transfer", "file"},
		"model":        {"script:x.txt", "flag --model"},
		"device":       {"emulator-5554", "env ANDROID_SERIAL"},
		"think_budget": {"1024", "default"},
	}
	for k, w := range want {
		if c.Value(k) != w[0] || c.Sources[k].String() != w[1] {
			t.Errorf("%s = %q from %q, want %q from %q", k, c.Value(k), c.Sources[k], w[0], w[1])
		}
	}
	if c.MaxSteps != 12 || c.Think || len(c.Sensitive) != 2 {
		t.Errorf("settings %+v", c.Settings)
	}
}

func TestMissingFileIsDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{"XDG_CONFIG_HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSteps != 20 || !c.Think || c.Sources["max_steps"].Origin != FromDefault {
		t.Errorf("%+v %v", c.Settings, c.Sources)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"syntax", "max_steps = 3\nthink = \n", nil, "config.toml:2:"},
		{"unknown key", "max_steps = 3\nmax_step = 4\n", nil, `config.toml:2: unknown setting "max_step"`},
		{"wrong type", "\nmax_steps = \"ten\"\n", nil, "config.toml:2: max_steps: want a whole number"},
		{"negative", "max_steps = -1\n", nil, "is negative"},
		{"list type", "sensitive = \"Pay\"\n", nil, "want a list of strings"},
		{"bad env", "", map[string]string{"DROIDGO_THINK": "maybe"}, `DROIDGO_THINK: "maybe" is not true or false`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"XDG_CONFIG_HOME": writeConfig(t, tc.file)}
			for k, v := range tc.env {
				e[k] = v
			}
			_, err := Load(env(e))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	if p := Path(env(map[string]string{"DROIDGO_CONFIG": "/x.toml", "XDG_CONFIG_HOME": "/c"})); p != "/x.toml" {
		t.Error(p)
	}
	if p := Path(env(map[string]string{"XDG_CONFIG_HOME": "/c"})); p != "/c/droidgo/config.toml" {
		t.Error(p)
	}
	if p := Path(env(map[string]string{"HOME": "/h"})); p != "/h/.config/droidgo/config.toml" {
		t.Error(p)
	}
}

// TestFileErrors: a [section] has its line, type errors name TOML's kinds,
// not Go's types, limits hold, and a DROIDGO_CONFIG that names no file is
// an error.
func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ file, want string }{
		{"max_steps = 3\n\n[model]\nx = 1\n", ":3: model: want a string, got a [section] table"},
		{"max_steps = 3\n[extra]\n", ":2: unknown setting \"extra\""},
		{"max_steps = \"ten\"\n", ":1: max_steps: want a whole number, got a string"},
		{"think = 1\n", ":1: think: want true or false, got a whole number"},
		{"sensitive = [1]\n", "item 1 is a whole number"},
		{"threads = 100000\n", ":1: threads: must be at most 256, not 100000"},
	}
	for i, c := range cases {
		p := filepath.Join(dir, fmt.Sprintf("c%d.toml", i))
		os.WriteFile(p, []byte(c.file), 0o644)
		_, err := Load(env(map[string]string{"DROIDGO_CONFIG": p}))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "int64") {
			t.Errorf("%q: err %v, want %q", c.file, err, c.want)
		}
	}
	if strings.Contains(fmt.Sprint(tomlKind(map[string]any{})), "map") {
		t.Error("a table is named by its Go type")
	}
	missing := filepath.Join(dir, "nope.toml")
	if _, err := Load(env(map[string]string{"DROIDGO_CONFIG": missing})); err == nil || !strings.Contains(err.Error(), "DROIDGO_CONFIG names "+missing+", which does not exist") {
		t.Errorf("missing DROIDGO_CONFIG: %v", err)
	}
	if _, err := Load(env(map[string]string{"XDG_CONFIG_HOME": dir})); err != nil {
		t.Errorf("a missing default file must be an empty configuration: %v", err)
	}
}

// TestLimitsEverywhere: max_steps = 0 is refused when the configuration is
// read, not first by a run.
func TestLimitsEverywhere(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(p, []byte("max_steps = 0\n"), 0o644)
	if _, err := Load(env(map[string]string{"DROIDGO_CONFIG": p})); err == nil || !strings.Contains(err.Error(), ":1: max_steps: must be at least 1, not 0") {
		t.Errorf("max_steps = 0: %v", err)
	}
	if _, err := Load(env(map[string]string{"DROIDGO_MAX_STEPS": "0", "XDG_CONFIG_HOME": t.TempDir()})); err == nil || !strings.Contains(err.Error(), "DROIDGO_MAX_STEPS") {
		t.Errorf("DROIDGO_MAX_STEPS=0: %v", err)
	}
}
