package simulator

import "testing"

func TestConditions(t *testing.T) {
	vars := map[string]string{"on": "true", "off": "false", "empty": "", "n": "12", "s": "dial", "q": "dev opt", "qs": "  "}
	e := envFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	tests := []struct {
		src  string
		want bool
	}{
		{"on", true}, {"off", false}, {"empty", false}, {"missing", false}, {"!off", true}, {"!on", false},
		{"s == dial", true}, {"s == 'dial'", true}, {`s == "keyboard"`, false}, {"s != keyboard", true},
		{"n >= 1", true}, {"n <= 12", true}, {"n < 12", false}, {"n > 12", false}, {"s > 1", false},
		{"q ~= 'Developer options'", true}, {"q ~= 'Display options'", false}, {"qs ~= anything", false},
		{"s ~= Dialer", true},
	}
	for _, tc := range tests {
		c, err := parseCond(tc.src)
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if got := c.eval(e); got != tc.want {
			t.Errorf("%q = %v, want %v", tc.src, got, tc.want)
		}
	}
	for _, bad := range []string{"", "  ", "== x", "n >= many", "a b", "1x", "!"} {
		if _, err := parseCond(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTemplates(t *testing.T) {
	vars := map[string]string{"h": "07", "m": "5", "w": "Wi-Fi"}
	e := envFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	tests := map[string]string{
		"${h|int}:${m|pad2}": "7:05", "${w|upper} on": "WI-FI on", "plain": "plain", "${m}${m}": "55", "": "",
	}
	for src, want := range tests {
		tm, err := parseTmpl(src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got := tm.expand(e); got != want {
			t.Errorf("%q = %q, want %q", src, got, want)
		}
	}
	for _, bad := range []string{"${", "${h", "${h|bold}", "${1x}", "${}"} {
		if _, err := parseTmpl(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
