package adbd

import (
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	ok := []struct {
		line string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"echo hello", []string{"echo", "hello"}},
		{"input text 'a b'", []string{"input", "text", "a b"}},
		{`input text 'it'\''s'`, []string{"input", "text", "it's"}},
		{`echo "a \"b\" \\ \x"`, []string{"echo", `a "b" \ \x`}},
		{`echo a\ b`, []string{"echo", "a b"}},
		{"echo ''", []string{"echo", ""}},
		{"echo a#b x~", []string{"echo", "a#b", "x~"}},
		{"echo a=b", []string{"echo", "a=b"}},
		{"echo 'a;b|c&d$(e)`f`'", []string{"echo", "a;b|c&d$(e)`f`"}},
		{"echo 'new\nline'", []string{"echo", "new\nline"}},
		{"echo \t x", []string{"echo", "x"}},
		{"'if' x", []string{"if", "x"}},
		{"echo ünïcode", []string{"echo", "ünïcode"}},
		{"echo %s@+,:.-/", []string{"echo", "%s@+,:.-/"}},
	}
	for _, tt := range ok {
		got, err := Split(tt.line)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
	bad := []string{
		"echo a; reboot", "echo a & reboot", "a && b", "a || b", "a | b", "echo a > f", "cat < f",
		"echo $(id)", "echo `id`", "echo $HOME", "echo ${x}", `echo "$x"`, "echo \"`id`\"",
		"echo a\nreboot", "echo a\rb", "(id)", "{ id; }", "echo {a,b}", "ls *", "ls ?", "ls [ab]",
		"# comment", "echo ~", "X=1 id", "if true", "! id", "echo 'unterminated", `echo "unterminated`,
		"echo trailing\\", "echo a\\\nb", "echo a\x00b", "echo 'a\x00b'", "echo \x01", "echo \"a\x00\"",
	}
	for _, line := range bad {
		if got, err := Split(line); err == nil {
			t.Errorf("Split(%q) = %q, want a refusal", line, got)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"echo hi", "input text 'a'\\''b'", `echo "a\"b"`, "a;b", "$(x)", "'", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := Split(line)
		if err != nil {
			return
		}
		// Accepted lines never contain an unquoted operator; rejoining the
		// words single-quoted must give the same words back.
		var re string
		for i, w := range words {
			if i > 0 {
				re += " "
			}
			re += "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := Split(re)
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("Split(%q) = %q; requoted %q gives %q, %v", line, words, re, again, err)
		}
	})
}

// TestSplitAgreesWithRealShell generates command lines from shell-special
// characters and checks that for every line Split accepts, a real POSIX
// shell (dash; mksh too when installed) sees exactly the same words.
func TestSplitAgreesWithRealShell(t *testing.T) {
	var shells []string
	for _, sh := range []string{"mksh", "dash"} {
		if p, err := exec.LookPath(sh); err == nil {
			shells = append(shells, p)
		}
	}
	if len(shells) == 0 {
		t.Skip("no dash or mksh to compare with")
	}
	alphabet := []string{"a", "b", " ", "'", `"`, `\`, "$", "`", ";", "|", "&", "<", ">", "(", ")", "{", "}",
		"*", "?", "[", "]", "#", "~", "=", "%", "!", "\t", "\n", "é", "-", "x y", "''", `\'`, `"\"`, `\\`}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for i := 0; i < 3000 && accepted < 400; i++ {
		var b strings.Builder
		for n := 1 + rng.IntN(8); n > 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		line := b.String()
		words, err := Split(line)
		if err != nil {
			continue
		}
		accepted++
		for _, sh := range shells {
			// The shell parses line as the arguments of f, which prints them.
			out, err := exec.Command(sh, "-c", `f() { for w in "$@"; do printf '%s\0' "$w"; done; }; f `+line).Output()
			if err != nil {
				t.Errorf("%s rejected %q, which Split accepted as %q: %v", sh, line, words, err)
				continue
			}
			got := strings.Split(string(out), "\x00")
			got = got[:len(got)-1]
			if !slices.Equal(got, words) && !(len(got) == 0 && len(words) == 0) {
				t.Errorf("%q: Split = %q, %s = %q", line, words, sh, got)
			}
		}
	}
	if accepted < 100 {
		t.Errorf("only %d generated lines were accepted; the comparison proves little", accepted)
	}
}
