package shell_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/device/shell"
	"github.com/droidgo/droidgo/simulator/adbd"
)

var quoteCases = []string{
	"", "plain", "with space", "it's", `"dq"`, "$(id)", "`id`", "a;b", "a|b", "a&&b", "a>b", "a<b",
	"*", "?", "[a]", "{a,b}", "~", "#c", "\\", `'\''`, "new\nline", "tab\tx", "ünï", "-n", "a=b", "!",
	"%s", "''", "'", "\"'\"'",
}

// TestQuoteRealShell runs each quoted word through the machine's real POSIX
// shells (dash, and mksh, Android's shell, when installed) and checks the
// word comes out literally.
func TestQuoteRealShell(t *testing.T) {
	var shells []string
	for _, sh := range []string{"mksh", "dash", "sh"} {
		if p, err := exec.LookPath(sh); err == nil {
			shells = append(shells, p)
		}
	}
	if len(shells) == 0 {
		t.Fatal("no POSIX shell on this machine")
	}
	for _, sh := range shells {
		for _, s := range quoteCases {
			out, err := exec.Command(sh, "-c", "printf '%s' "+shell.Quote(s)).Output()
			if err != nil {
				t.Errorf("%s: printf %s: %v", sh, shell.Quote(s), err)
				continue
			}
			if string(out) != s {
				t.Errorf("%s: Quote(%q) = %s came out as %q", sh, s, shell.Quote(s), out)
			}
		}
	}
}

func TestShellLineSplit(t *testing.T) {
	for _, s := range quoteCases {
		argv := []string{"input", "text", s, "x"}
		line, err := shell.ShellLine(argv...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := adbd.Split(line)
		if err != nil || !slices.Equal(got, argv) {
			t.Errorf("Split(ShellLine(%q)) = %q, %v", argv, got, err)
		}
	}
	if _, err := shell.ShellLine("echo", "a\x00b"); err == nil {
		t.Error("ShellLine accepted a NUL byte")
	}
}

// FuzzQuote: any word without NUL, quoted, is one word to the strict
// splitter, with the same content.
func FuzzQuote(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			if _, err := shell.ShellLine(s); err == nil {
				t.Fatal("ShellLine accepted NUL")
			}
			return
		}
		got, err := adbd.Split("input text " + shell.Quote(s))
		if err != nil || len(got) != 3 || got[2] != s {
			t.Fatalf("Split(quoted %q) = %q, %v", s, got, err)
		}
	})
}

func TestInputTextArg(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"hello", "hello", true},
		{"hello world", "hello%sworld", true},
		{"100% sure", "100%%ssure", true},
		{"%", "%", true},
		{"a%", "a%", true},
		{"%s", "", false},
		{"x\ny", "", false},
		{"é", "", false},
		{"\t", "", false},
		{"\x7f", "", false},
	}
	for _, tt := range tests {
		got, err := shell.InputTextArg(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("InputTextArg(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err == nil && shell.DecodeInputText(got) != tt.in {
			t.Errorf("DecodeInputText(InputTextArg(%q)) = %q", tt.in, shell.DecodeInputText(got))
		}
	}
}

// FuzzInputText: whatever InputTextArg accepts, Android's input decodes back
// to the same text, and it accepts all printable ASCII without "%s".
func FuzzInputText(f *testing.F) {
	for _, s := range []string{"a b", "%", "% s", "%%s", "x%", "%s", "100%  s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		arg, err := shell.InputTextArg(s)
		printable := !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e })
		if err != nil {
			if printable && !strings.Contains(s, "%s") {
				t.Fatalf("InputTextArg(%q) refused printable text: %v", s, err)
			}
			return
		}
		if strings.Contains(arg, " ") || shell.DecodeInputText(arg) != s {
			t.Fatalf("InputTextArg(%q) = %q decodes to %q", s, arg, shell.DecodeInputText(arg))
		}
	})
}

func TestIsPackageName(t *testing.T) {
	for s, want := range map[string]bool{
		"com.android.settings": true, "a.b": true, "com.a_b.c1": true,
		"settings": false, "com..x": false, "1com.x": false, "com.x;reboot": false, "com.x y": false,
		"com.x\n": false, ".com.x": false, "com.x.": false,
	} {
		if got := shell.IsPackageName(s); got != want {
			t.Errorf("IsPackageName(%q) = %v", s, got)
		}
	}
}

func TestQuoteSafeWordsUnchanged(t *testing.T) {
	for _, s := range []string{"input", "tap", "540", "/sdcard/window_dump.xml", "com.android.settings", "android.intent.category.LAUNCHER"} {
		if q := shell.Quote(s); q != s {
			t.Errorf("Quote(%q) = %q, want it unchanged", s, q)
		}
	}
	if !bytes.Equal([]byte(shell.Quote("a b")), []byte("'a b'")) {
		t.Error("Quote(a b) not single-quoted")
	}
}

func BenchmarkQuoteTypeArg(b *testing.B) {
	text := `Meet at 7 o'clock; bring "snacks" & $5 (cash) | ok?`
	for b.Loop() {
		arg, err := shell.InputTextArg(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := shell.ShellLine("input", "text", arg); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeInputText(t *testing.T) {
	for in, want := range map[string]string{"a%sb": "a b", "%%s": "% ", "%": "%", "%s%s": "  ", "100%": "100%", "%x%s": "%x "} {
		if got := shell.DecodeInputText(in); got != want {
			t.Errorf("DecodeInputText(%q) = %q, want %q", in, got, want)
		}
	}
}
