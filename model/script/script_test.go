package script

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		turns    []string
		err      string
	}{
		{"two turns", "# comment\n\n--- turn 1: a\nA</think>x\n--- turn\nB\n", []string{"A</think>x", "B"}, ""},
		{"crlf", "--- turn\r\nA\r\nB\r\n--- turn\r\nC", []string{"A\nB", "C"}, ""},
		{"empty turn kept", "--- turn\n--- turn\nB", []string{"", "B"}, ""},
		{"text before turns", "hello\n--- turn\nA", nil, "x.txt:1: text before the first"},
		{"no turns", "# only comments\n", nil, "no turns"},
		{"bad placeholder", "--- turn\n{{index \"a\\q\"}}", nil, "turn 1: placeholder"},
		{"not utf8", "--- turn\n\xff", nil, "not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.txt", []byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(s.Turns, "|") != strings.Join(tt.turns, "|") {
				t.Errorf("turns = %q, want %q", s.Turns, tt.turns)
			}
		})
	}
}

const screenMsg = `Task: x

Previous actions:
- step 1: tap(index=3) -> screen changed

Current screen:
Screen of com.android.settings, 1080x2400:
[0] text "Network & internet"
[1] button "Internet, Off"
[2] switch "Airplane mode" off
[3] button "Wi-Fi"
[4] switch "Wi-Fi" off
[5] button "Hotspot & tethering, Off"
12: older style "Bluetooth"
`

func TestResolve(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{`{{index "Wi-Fi"}}`, "3", ""},
		{`{{index "Wi-Fi" "switch"}}`, "4", ""},
		{`{{ index "Internet" }}`, "1", ""}, // before the comma of "Internet, Off"
		{`{{index "hotspot"}}`, "5", ""},    // substring, any case
		{`{{index "Airplane mode" "button"}}`, "", "no element \"Airplane mode\" (button)"},
		{`{{index "Bluetooth"}}`, "12", ""},
		{`{{index "Nope"}}`, "", `no element "Nope"`},
		{`a {{not a placeholder}} b`, `a {{not a placeholder}} b`, ""},
		{`{{index "Wi-Fi"}}/{{index "Network & internet"}}`, "3/0", ""},
	}
	for _, tt := range tests {
		got, err := resolve(tt.in, screenMsg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolve(%s): err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolve(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// History lines are not elements.
	if _, err := resolve(`{{index "step"}}`, screenMsg); err == nil {
		t.Error("a history line was taken for an element")
	}
}

func TestTokensJoinBack(t *testing.T) {
	for _, s := range []string{
		"", "Hello world.", "a</think>\n<tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>",
		"  spaces\t\tand\n\nnewlines ", "ünïcödé 日本語 emoji 🙂 done", "x </think>y",
	} {
		toks := Tokens(s)
		if strings.Join(toks, "") != s {
			t.Errorf("Tokens(%q) = %q does not join back", s, toks)
		}
	}
	toks := Tokens("thinking. </think><tool_call>")
	if toks[len(toks)-2] != "</think>" || toks[len(toks)-1] != "<tool_call>" {
		t.Errorf("tags are not single tokens: %q", toks)
	}
}

// play collects a whole turn.
func play(t *testing.T, b *Backend, req model.ChatRequest, closeAfter int) (reasoning, content string, closed bool, n int) {
	t.Helper()
	st, err := b.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		d, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Reasoning != "" {
			n++
			reasoning += d.Reasoning
		}
		content += d.Content
		closed = closed || d.ReasoningClosed
		if closeAfter > 0 && n == closeAfter {
			if err := st.CloseReasoning(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := st.Stats(); s.GeneratedTokens == 0 || s.PromptTokens == 0 {
		t.Errorf("stats = %+v", s)
	}
	return
}

func TestStream(t *testing.T) {
	s := &Script{Name: "t", Turns: []string{
		"I think a lot about this.</think>\n<tool_call>tap<arg_key>index</arg_key><arg_value>{{index \"Wi-Fi\"}}</arg_value></tool_call>",
	}}
	msgs := []model.Message{{Role: model.RoleUser, Content: screenMsg}}

	r, c, closed, _ := play(t, New(s, Options{}), model.ChatRequest{Messages: msgs, Think: true}, 0)
	if r != "I think a lot about this." || !closed || c != "\n<tool_call>tap<arg_key>index</arg_key><arg_value>3</arg_value></tool_call>" {
		t.Errorf("think on: reasoning %q, content %q, closed %v", r, c, closed)
	}
	r, c, _, _ = play(t, New(s, Options{}), model.ChatRequest{Messages: msgs, Think: false}, 0)
	if r != "" || !strings.HasPrefix(c, "<tool_call>tap") {
		t.Errorf("think off: reasoning %q, content %q", r, c)
	}
	// Closing the reasoning jumps to </think>.
	r, c, closed, n := play(t, New(s, Options{}), model.ChatRequest{Messages: msgs, Think: true}, 2)
	if r != "I think" || n != 2 || !closed || !strings.Contains(c, "<arg_value>3</arg_value>") {
		t.Errorf("closed early: reasoning %q (%d), content %q, closed %v", r, n, c, closed)
	}
	// A turn without </think> is closed and ends.
	s2 := &Script{Name: "t", Turns: []string{"thinking forever and ever"}}
	r, c, closed, _ = play(t, New(s2, Options{}), model.ChatRequest{Messages: msgs, Think: true}, 1)
	if r != "thinking" || c != "" || !closed {
		t.Errorf("no </think>: reasoning %q, content %q, closed %v", r, c, closed)
	}
}

func TestTurnsRunOut(t *testing.T) {
	b := New(&Script{Name: "t.txt", Turns: []string{"a"}}, Options{})
	if _, err := b.Chat(context.Background(), model.ChatRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Chat(context.Background(), model.ChatRequest{})
	if err == nil || !strings.Contains(err.Error(), "script t.txt has no turn 2 (it has 1)") {
		t.Errorf("err = %v", err)
	}
	if b.Used() != 1 {
		t.Errorf("used = %d", b.Used())
	}
}

func TestUnresolvedPlaceholderFailsTheCall(t *testing.T) {
	b := New(&Script{Name: "t", Turns: []string{`{{index "Nope"}}`}}, Options{})
	_, err := b.Chat(context.Background(), model.ChatRequest{Messages: []model.Message{{Role: model.RoleUser, Content: screenMsg}}})
	if err == nil || !strings.Contains(err.Error(), `turn 1: no element "Nope" on the screen`) {
		t.Errorf("err = %v", err)
	}
}

func TestPlaceholderSkipsCorrectiveMessage(t *testing.T) {
	b := New(&Script{Name: "t", Turns: []string{`{{index "Wi-Fi" "switch"}}`}}, Options{})
	msgs := []model.Message{
		{Role: model.RoleUser, Content: screenMsg},
		{Role: model.RoleAssistant, Content: "prose"},
		{Role: model.RoleUser, Content: "Your answer had no valid tool call."},
	}
	_, c, _, _ := play(t, b, model.ChatRequest{Messages: msgs}, 0)
	if c != "4" {
		t.Errorf("content = %q, want 4", c)
	}
}

func TestPace(t *testing.T) {
	var slept time.Duration
	var now time.Time
	opts := Options{
		Pace:  25 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error { slept += d; now = now.Add(d); return nil },
		Now:   func() time.Time { return now },
	}
	b := New(&Script{Name: "t", Turns: []string{"one two three</think>four"}}, opts)
	st, err := b.Chat(context.Background(), model.ChatRequest{Think: true, Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Next(); err != nil {
			break
		}
	}
	if slept != 5*25*time.Millisecond {
		t.Errorf("slept %v for 5 tokens", slept)
	}
	if s := st.Stats(); s.GeneratedTokens != 5 || s.DecodeRate() < 39 || s.DecodeRate() > 51 {
		t.Errorf("stats = %+v, rate %.1f", s, s.DecodeRate())
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := New(&Script{Name: "t", Turns: []string{"a b c"}}, Options{})
	st, err := b.Chat(ctx, model.ChatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/s.txt"
	if err := writeFile(path, "--- turn\nhi\n"); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		path:                 "",
		path + "?pace=0":     "",
		path + "?pace=10ms":  "",
		path + "?pace=fast":  "want a duration",
		path + "?pace=1h":    "between 0 and 10s",
		path + "?speed=2":    "unknown option",
		dir + "/missing.txt": "read script",
		"":                   "no script file given",
		"?pace=0":            "no script file given",
	} {
		b, err := Open(spec, Options{})
		if want == "" {
			if err != nil || b.Name() != "script:s.txt" {
				t.Errorf("Open(%q) = %v, %v", spec, b, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) err = %v, want %q", spec, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("--- turn\nA</think><tool_call>tap</tool_call>\n--- turn 2\n{{index \"x\" \"y\"}}")
	f.Add("# c\n--- turn\r\n{{index \"\\\"\"}}")
	f.Add("x\n--- turn")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse("f", []byte(in))
		if err != nil {
			return
		}
		b := New(s, Options{})
		for range s.Turns {
			st, err := b.Chat(context.Background(), model.ChatRequest{Think: true, Messages: []model.Message{{Role: model.RoleUser, Content: screenMsg}}})
			if err != nil {
				continue
			}
			for {
				if _, err := st.Next(); err != nil {
					break
				}
			}
		}
	})
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// A turn stops at ChatRequest.MaxTokens, as a model's output is cut there.
func TestMaxTokensCutsTheTurn(t *testing.T) {
	s := &Script{Name: "t", Turns: []string{"one two three four five six</think><tool_call>wait</tool_call>"}}
	msgs := []model.Message{{Role: model.RoleUser, Content: screenMsg}}
	r, c, closed, _ := play(t, New(s, Options{}), model.ChatRequest{Messages: msgs, Think: true, MaxTokens: 3}, 0)
	if r != "one two three" || c != "" || closed {
		t.Errorf("cut at 3: reasoning %q, content %q, closed %v", r, c, closed)
	}
	r, c, closed, _ = play(t, New(s, Options{}), model.ChatRequest{Messages: msgs, Think: true, MaxTokens: 100}, 0)
	if r != "one two three four five six" || !closed || c != "<tool_call>wait</tool_call>" {
		t.Errorf("not cut: reasoning %q, content %q, closed %v", r, c, closed)
	}
}
