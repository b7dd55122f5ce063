package adb_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/device/shell"
	"github.com/droidgo/droidgo/simulator/adbd"
)

// adversarial are texts a model might produce, hostile or merely awkward.
var adversarial = []string{
	`"; reboot; echo "`,
	`$(rm -rf /sdcard)`,
	"`reboot`",
	"a | b",
	"a && reboot",
	"x > /sdcard/pwned",
	"x < /etc/passwd",
	"it's",
	`say "hi"`,
	`'; reboot; echo '`,
	`'\''`,
	`back\slash \\ \n`,
	"${HOME} $HOME $0 $$ $?",
	"*?[a-z]{a,b}~#",
	"semi;colon&amp(paren)",
	"100% sure",
	"%",
	"trailing %",
	"% s",
	"hello world",
	"  leading and trailing  ",
	"-n",
	"--",
	"a=b c=d",
	"!",
	"if then fi",
}

// needIME can be typed only through ADB Keyboard.
var needIME = []string{
	"line1\nline2",
	"\nreboot",
	"tab\there",
	"héllo wörld",
	"日本語",
	"emoji 😀",
	"%s",
	"50%solution",
	"carriage\rreturn",
}

// TestAdversarialTyping proves, through the real adb server and the fake
// device's strict shell, that each text arrives as exactly one `input text`
// whose argument the phone decodes to the literal text, with nothing else
// run; and that texts input cannot carry are refused without typing.
func TestAdversarialTyping(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		feats := adbd.DefaultFeatures
		name := "shell_v2"
		if !v2 {
			feats, name = []string{"cmd", "stat_v2"}, "shell_v1"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t, adbd.Options{Features: feats})
			d := r.open(t)
			ctx := ctxT(t)
			for _, text := range adversarial {
				before := len(r.fake.Commands())
				if err := d.Type(ctx, text); err != nil {
					t.Errorf("Type(%q): %v", text, err)
					continue
				}
				cmds := r.fake.Commands()[before:]
				if len(cmds) != 1 {
					t.Errorf("Type(%q) ran %d commands, want 1: %+v", text, len(cmds), cmds)
					continue
				}
				c := cmds[0]
				if c.Rejected != "" || len(c.Argv) != 3 || c.Argv[0] != "input" || c.Argv[1] != "text" {
					t.Errorf("Type(%q) sent %q (argv %q, rejected %q), want one input text", text, c.Line, c.Argv, c.Rejected)
					continue
				}
				if got := shell.DecodeInputText(c.Argv[2]); got != text {
					t.Errorf("Type(%q): the phone's input decodes %q", text, got)
				}
				typed := r.phone.Typed()
				if typed[len(typed)-1] != text {
					t.Errorf("Type(%q): phone received %q", text, typed[len(typed)-1])
				}
			}
			if got, want := len(r.phone.Typed()), len(adversarial); got != want {
				t.Errorf("phone typed %d texts, want %d", got, want)
			}
			// Texts input text cannot carry: refused, nothing typed, and not
			// even an input command sent.
			for _, text := range append(needIME, "nul\x00byte", "\x00") {
				before := len(r.fake.Commands())
				typedBefore := len(r.phone.Typed())
				err := d.Type(ctx, text)
				if err == nil {
					t.Errorf("Type(%q) without ADB Keyboard succeeded", text)
				}
				if strings.Contains(text, "\x00") {
					if !errors.Is(err, shell.ErrNUL) {
						t.Errorf("Type(%q) = %v, want ErrNUL", text, err)
					}
				} else if err != nil && !strings.Contains(err.Error(), "ADB Keyboard") {
					t.Errorf("Type(%q) = %v, want advice about ADB Keyboard", text, err)
				}
				for _, c := range r.fake.Commands()[before:] {
					if c.Rejected != "" || (len(c.Argv) > 0 && (c.Argv[0] == "input" || c.Argv[0] == "am")) {
						t.Errorf("refused Type(%q) still sent %q", text, c.Line)
					}
				}
				if len(r.phone.Typed()) != typedBefore {
					t.Errorf("refused Type(%q) typed %q", text, r.phone.Typed()[typedBefore:])
				}
			}
		})
	}
}

// TestADBKeyboardTyping: with ADB Keyboard active, text input cannot carry
// goes as one base64 broadcast and arrives literally; NUL is still refused.
func TestADBKeyboardTyping(t *testing.T) {
	r := newRig(t, adbd.Options{ADBKeyboard: true})
	d := r.open(t)
	ctx := ctxT(t)
	for _, text := range append(slices.Clone(needIME), `"; reboot; echo "`+"\n$(id)") {
		before := len(r.fake.Commands())
		if err := d.Type(ctx, text); err != nil {
			t.Errorf("Type(%q): %v", text, err)
			continue
		}
		typed := r.phone.Typed()
		if len(typed) == 0 || typed[len(typed)-1] != text {
			t.Errorf("Type(%q): phone received %q", text, typed)
		}
		var broadcasts int
		for _, c := range r.fake.Commands()[before:] {
			if c.Rejected != "" {
				t.Errorf("Type(%q): device shell refused %q", text, c.Line)
			}
			if len(c.Argv) > 1 && c.Argv[0] == "am" && c.Argv[1] == "broadcast" {
				broadcasts++
			}
			if len(c.Argv) > 0 && c.Argv[0] == "input" {
				t.Errorf("Type(%q) used input: %q", text, c.Line)
			}
		}
		if broadcasts != 1 {
			t.Errorf("Type(%q) sent %d broadcasts, want 1", text, broadcasts)
		}
	}
	if err := d.Type(ctx, "a\x00b"); !errors.Is(err, shell.ErrNUL) {
		t.Errorf("Type with NUL = %v, want ErrNUL", err)
	}
}

// TestADBKeyboardInstalledNotActive: the error says exactly how to enable it.
func TestADBKeyboardInstalledNotActive(t *testing.T) {
	r := newRig(t, adbd.Options{ADBKeyboard: true})
	d := r.open(t)
	ctx := ctxT(t)
	if _, err := d.Run(ctx, "ime", "set", "com.google.android.inputmethod.latin/com.android.inputmethod.latin.LatinIME"); err != nil {
		t.Fatal(err)
	}
	err := d.Type(ctx, "héllo")
	if err == nil || !strings.Contains(err.Error(), "ime set "+shell.ADBKeyboardIME) {
		t.Errorf("Type with ADB Keyboard inactive = %v, want the ime set command", err)
	}
	if len(r.phone.Typed()) != 0 {
		t.Errorf("typed %q", r.phone.Typed())
	}
}
