package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
)

// fakeClock moves only when the loop sleeps, so tests never wait.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// call renders a native Spark tool call.
func call(name string, kv ...string) string {
	var b strings.Builder
	b.WriteString("<tool_call>" + name)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString("<arg_key>" + kv[i] + "</arg_key><arg_value>" + kv[i+1] + "</arg_value>")
	}
	b.WriteString("</tool_call>")
	return b.String()
}

// turn is a thinking turn ending in a call.
func thinkThen(thought, callText string) string { return thought + "</think>\n" + callText }

type run struct {
	res    Result
	events []Event
	phone  *fakePhone
	model  *script.Backend
}

func (r run) of(t EventType) []Event {
	var out []Event
	for _, e := range r.events {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func (r run) warnings() string {
	var out []string
	for _, e := range r.of(EvWarning) {
		out = append(out, e.Text)
	}
	return strings.Join(out, "\n")
}

// lastUserPrompt returns the user message of the last prompt event.
func (r run) lastUserPrompt() string {
	ps := r.of(EvPrompt)
	if len(ps) == 0 {
		return ""
	}
	m := ps[len(ps)-1].Messages
	return m[len(m)-1].Content
}

func runTurns(t *testing.T, phone *fakePhone, turns []string, mod func(*Config)) run {
	t.Helper()
	if phone == nil {
		phone = newFakePhone()
	}
	clock := newClock()
	backend := script.New(&script.Script{Name: t.Name(), Turns: turns}, script.Options{})
	var events []Event
	cfg := Config{
		Task:         "Turn on Wi-Fi",
		Device:       phone,
		DeviceName:   "fake",
		Model:        backend,
		Think:        true,
		PollInterval: 10 * time.Millisecond,
		Now:          clock.Now,
		Sleep:        clock.Sleep,
		OnEvent:      func(e Event) { events = append(events, e) },
	}
	if mod != nil {
		mod(&cfg)
	}
	res := Run(context.Background(), cfg)
	if len(events) == 0 || events[len(events)-1].Type != EvFinished {
		t.Fatalf("the last event is not finished: %v", events)
	}
	if got := *events[len(events)-1].Result; got != res {
		t.Errorf("finished event result %+v != returned %+v", got, res)
	}
	return run{res: res, events: events, phone: phone, model: backend}
}

var wifiTurns = []string{
	thinkThen("The home screen. Settings has the Wi-Fi switch.", call("open_app", "name", "Settings")),
	thinkThen("Wi-Fi lives under Network & internet.", call("tap", "index", `{{index "Network & internet"}}`)),
	thinkThen("The Wi-Fi switch is off; tap it.", call("tap", "index", `{{index "Wi-Fi" "switch"}}`)),
	thinkThen("Wi-Fi is on now.", call("task_complete", "summary", "Wi-Fi is on")),
}

func TestSolvesTask(t *testing.T) {
	r := runTurns(t, nil, wifiTurns, func(c *Config) {
		c.Verify = func(context.Context) error { return nil }
	})
	if !r.res.Success || r.res.Reason != "task_complete" || r.res.Summary != "Wi-Fi is on" || r.res.Steps != 4 {
		t.Fatalf("result = %+v; warnings:\n%s", r.res, r.warnings())
	}
	if !r.phone.vars["wifi"] {
		t.Error("Wi-Fi is not on")
	}
	want := []string{"open Settings", "tap 540 260", "tap 540 260"}
	if got := r.phone.did(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("device actions = %q, want %q", got, want)
	}
	if w := r.warnings(); w != "" {
		t.Errorf("unexpected warnings:\n%s", w)
	}
	// Each step: started, prompt, stats, call, action, (screen change).
	if n := len(r.of(EvStepStarted)); n != 4 {
		t.Errorf("%d step_started events, want 4", n)
	}
	if n := len(r.of(EvScreenChange)); n != 3 {
		t.Errorf("%d screen_change events, want 3", n)
	}
	for _, e := range r.of(EvScreenChange) {
		if e.Changed == nil || !*e.Changed {
			t.Errorf("step %d: screen did not change", e.Step)
		}
	}
	if len(r.of(EvThinking)) == 0 || len(r.of(EvAnswer)) == 0 {
		t.Error("no thinking or answer tokens were emitted")
	}
	for _, e := range r.of(EvStepStarted) {
		if e.Screen == nil || e.Screen.XML == "" || e.Screen.Fingerprint == "" || len(e.Screen.Elements) == 0 {
			t.Fatalf("step %d: incomplete screen %+v", e.Step, e.Screen)
		}
	}
	acts := r.of(EvAction)
	if acts[1].Element == nil || *acts[1].Element != 0 || acts[1].Detail != "tap 540 260" {
		t.Errorf("second action = %+v", acts[1])
	}
}

func TestVerifyFailureFailsTheRun(t *testing.T) {
	r := runTurns(t, nil, []string{thinkThen("Done, I think.", call("task_complete", "summary", "done"))}, func(c *Config) {
		c.Verify = func(context.Context) error { return errors.New("Wi-Fi is off") }
	})
	if r.res.Success || !strings.Contains(r.res.Reason, "Wi-Fi is off") {
		t.Fatalf("result = %+v", r.res)
	}
}

func TestPromptIsCompact(t *testing.T) {
	r := runTurns(t, nil, wifiTurns[:3], nil)
	prompts := r.of(EvPrompt)
	if len(prompts) != 4 { // the fourth step finds no turn in the script
		t.Fatalf("%d prompts, want 4", len(prompts))
	}
	msgs := prompts[3].Messages
	if len(msgs) != 2 || msgs[0].Role != model.RoleSystem || msgs[1].Role != model.RoleUser {
		t.Fatalf("messages = %+v", msgs)
	}
	user := msgs[1].Content
	for _, want := range []string{"Task: Turn on Wi-Fi", `step 1: open_app(name="Settings") -> screen changed`, `step 2: tap(index=0) "Network & internet" -> screen changed`, `"Wi-Fi"`} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q:\n%s", want, user)
		}
	}
	// The screens of earlier steps are summarised, not repeated.
	for _, old := range []string{"Pay now", "Bluetooth", "Clock"} {
		if strings.Contains(user, old) {
			t.Errorf("prompt repeats an earlier screen's element %q:\n%s", old, user)
		}
	}
}

func TestMalformedOutputIsRecovered(t *testing.T) {
	// The format slip seen from the real model: a bracket tag and an
	// unterminated JSON object.
	turns := []string{
		thinkThen("Open settings.", `[open_app] {"tool": "open_app", "parameters": {"name": "Settings"}`),
		thinkThen("Done.", call("task_complete", "summary", "opened")),
	}
	r := runTurns(t, nil, turns, nil)
	calls := r.of(EvToolCall)
	if len(calls) != 2 || calls[0].Call == nil || calls[0].Call.Name != "open_app" {
		t.Fatalf("tool calls = %+v", calls)
	}
	if len(calls[0].Parse.Recoveries) == 0 || calls[0].Parse.Raw == "" {
		t.Errorf("parse info lacks the recoveries or raw text: %+v", calls[0].Parse)
	}
	if got := r.phone.screen(); got != "settings" {
		t.Errorf("screen = %s, want settings", got)
	}
	if !r.res.Success {
		t.Errorf("result = %+v", r.res)
	}
}

func TestNoCallGetsOneCorrectivePrompt(t *testing.T) {
	turns := []string{
		thinkThen("Hmm.", "I would open the settings app now."),
		thinkThen("Sorry.", call("open_app", "name", "Settings")),
		thinkThen("Done.", call("task_complete", "summary", "opened")),
	}
	r := runTurns(t, nil, turns, nil)
	if !r.res.Success || r.res.Steps != 2 {
		t.Fatalf("result = %+v", r.res)
	}
	prompts := r.of(EvPrompt)
	if len(prompts) != 3 {
		t.Fatalf("%d prompts, want 3", len(prompts))
	}
	corr := prompts[1].Messages
	if len(corr) != 4 || corr[2].Role != model.RoleAssistant || corr[2].Content != "I would open the settings app now." {
		t.Fatalf("corrective conversation = %+v", corr)
	}
	last := corr[3].Content
	for _, want := range []string{"no valid tool call", "tap, long_press, type_text, swipe, press_key, open_app, wait, task_complete", "Valid element indices: 0-1"} {
		if !strings.Contains(last, want) {
			t.Errorf("corrective prompt lacks %q:\n%s", want, last)
		}
	}
	if got := r.of(EvToolCall); got[0].Call != nil || len(got[0].Parse.Errors) == 0 {
		t.Errorf("first tool_call event = %+v", got[0])
	}
}

func TestNoCallTwiceIsAFailedStep(t *testing.T) {
	bad := thinkThen("Hmm.", "no idea")
	r := runTurns(t, nil, []string{bad, bad, bad, bad, bad, bad}, nil)
	if r.res.Success || !strings.Contains(r.res.Reason, "3 failed steps in a row") || r.res.Steps != 3 {
		t.Fatalf("result = %+v", r.res)
	}
	if r.model.Used() != 6 {
		t.Errorf("%d turns used, want 6 (one corrective turn per step)", r.model.Used())
	}
	if len(r.phone.did()) != 0 {
		t.Errorf("the phone was touched: %v", r.phone.did())
	}
}

func TestThinkingPastTheBudgetIsClosed(t *testing.T) {
	long := strings.Repeat("Let me think about which element is right. ", 50)
	turns := []string{
		thinkThen(long, call("open_app", "name", "Settings")),
		thinkThen("Done.", call("task_complete", "summary", "opened")),
	}
	r := runTurns(t, nil, turns, func(c *Config) { c.ThinkBudget = 40 })
	if !r.res.Success {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	if !strings.Contains(r.warnings(), "budget of 40 tokens") {
		t.Errorf("no budget warning:\n%s", r.warnings())
	}
	thinking := 0
	for _, e := range r.events {
		if e.Type == EvThinking && e.Step == 1 {
			thinking++
		}
	}
	if thinking != 40 {
		t.Errorf("%d thinking tokens in step 1, want 40 (the budget)", thinking)
	}
	if r.phone.screen() != "settings" {
		t.Errorf("the call after the closed reasoning was not run")
	}
}

// noClose wraps a backend whose streams cannot close the reasoning, like
// an HTTP server's.
type noClose struct {
	model.Backend
	mu    sync.Mutex
	think []bool
}

func (n *noClose) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	n.mu.Lock()
	n.think = append(n.think, req.Think)
	n.mu.Unlock()
	s, err := n.Backend.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	return noCloseStream{s}, nil
}

type noCloseStream struct{ model.Stream }

func (noCloseStream) CloseReasoning() error { return model.ErrUnsupported }

func TestThinkingBudgetFallsBackToThinkingOff(t *testing.T) {
	long := strings.Repeat("Still thinking about it. ", 40)
	turns := []string{
		long, // never closes its reasoning
		thinkThen("(skipped with thinking off)", call("open_app", "name", "Settings")),
		thinkThen("Done.", call("task_complete", "summary", "opened")),
	}
	var nc *noClose
	r := runTurns(t, nil, turns, func(c *Config) {
		c.ThinkBudget = 20
		nc = &noClose{Backend: c.Model}
		c.Model = nc
	})
	if !r.res.Success {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	if fmt.Sprint(nc.think) != "[true false true]" {
		t.Errorf("think flags of the requests = %v, want [true false true]", nc.think)
	}
	if !strings.Contains(r.warnings(), "asking again with thinking off") {
		t.Errorf("no fallback warning:\n%s", r.warnings())
	}
}

func TestIndexNotOnScreenIsNotRun(t *testing.T) {
	turns := []string{
		thinkThen("Tap it.", call("tap", "index", "99")),
		thinkThen("Oops.", call("open_app", "name", "Settings")),
		thinkThen("Done.", call("task_complete", "summary", "ok")),
	}
	r := runTurns(t, nil, turns, nil)
	if !r.res.Success {
		t.Fatalf("result = %+v", r.res)
	}
	acts := r.of(EvAction)
	if acts[0].Error == "" || !strings.Contains(acts[0].Error, "index 99 is not on the screen; valid indices are 0-1") {
		t.Errorf("first action = %+v", acts[0])
	}
	if got := r.phone.did(); len(got) != 1 || got[0] != "open Settings" {
		t.Errorf("device actions = %q; the invalid tap must not run", got)
	}
	second := r.of(EvPrompt)[1].Messages[1].Content
	if !strings.Contains(second, "Error: tap(index=99) was not run: index 99 is not on the screen") {
		t.Errorf("the next prompt does not report the error:\n%s", second)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		call, want string
	}{
		{call("press_key", "key", "launch_missiles"), `"launch_missiles" is not`},
		{call("type_text", "text", ""), "text is empty"},
		{call("open_app", "name", "Nonexistent"), "unknown app"},
		{call("tap"), "index"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			r := runTurns(t, nil, []string{thinkThen("x", tt.call), thinkThen("x", call("task_complete", "summary", "s"))}, nil)
			all := ""
			for _, e := range r.of(EvAction) {
				all += e.Error + "\n"
			}
			for _, e := range r.of(EvToolCall) {
				if e.Parse != nil {
					all += strings.Join(e.Parse.Errors, "\n")
				}
			}
			if !strings.Contains(all, tt.want) {
				t.Errorf("errors %q lack %q", all, tt.want)
			}
			for _, a := range r.phone.did() {
				if !strings.HasPrefix(a, "open") {
					t.Errorf("an invalid call ran: %s", a)
				}
			}
		})
	}
}

func TestToggleUndoneWarnsThenStops(t *testing.T) {
	wifi := call("tap", "index", `{{index "Wi-Fi"}}`)
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("Network.", call("tap", "index", `{{index "Network & internet"}}`)),
		thinkThen("Switch it on.", wifi),
		thinkThen("Hmm, tap it again.", wifi), // undoes its own work
		thinkThen("Put it back.", wifi),       // a correction, not a loop
		thinkThen("And off again.", wifi),     // undone a second time
		thinkThen("unused", call("task_complete", "summary", "x")),
	}
	r := runTurns(t, nil, turns, nil)
	if r.res.Success || !strings.Contains(r.res.Reason, `undid its own change again ("Wi-Fi" turned off)`) || r.res.Steps != 6 {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	if ch := r.of(EvScreenChange); ch[2].Detail != `"Wi-Fi" turned on` || ch[3].Detail != `"Wi-Fi" turned off` {
		t.Errorf("screen changes do not name the switch: %q, %q", ch[2].Detail, ch[3].Detail)
	}
	ws := r.of(EvWarning)
	if len(ws) != 2 || ws[0].Step != 4 || !strings.Contains(ws[0].Text, `you turned "Wi-Fi" off, undoing your own change`) {
		t.Fatalf("warnings = %+v", ws)
	}
	if !strings.Contains(r.of(EvPrompt)[4].Messages[1].Content, `Warning: you turned "Wi-Fi" off`) {
		t.Error("the model was not told about the undo")
	}
	if !strings.Contains(r.of(EvPrompt)[4].Messages[1].Content, `step 4: tap(index=0) "Wi-Fi" -> screen changed, "Wi-Fi" turned off`) {
		t.Errorf("the history does not show the switch:\n%s", r.of(EvPrompt)[4].Messages[1].Content)
	}
}

func TestLoopBetweenTwoScreensStops(t *testing.T) {
	net := call("tap", "index", `{{index "Network & internet"}}`)
	back := call("press_key", "key", "back")
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("In.", net), thinkThen("Out.", back), thinkThen("In.", net), thinkThen("Out.", back), thinkThen("In.", net),
	}
	r := runTurns(t, nil, turns, nil)
	if r.res.Success || !strings.Contains(r.res.Reason, "looping between two screens") {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	if r.res.Steps != 4 {
		t.Errorf("stopped after %d steps, want 4 (warned at 3: settings -> internet -> settings)", r.res.Steps)
	}
	if ws := r.of(EvWarning); len(ws) < 1 || ws[0].Step != 3 || !strings.Contains(ws[0].Text, "back and forth") {
		t.Errorf("warnings = %+v", ws)
	}
}

func TestSameActionOnUnchangedScreenStops(t *testing.T) {
	about := call("tap", "index", `{{index "About phone"}}`)
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("About.", about), thinkThen("Again.", about), thinkThen("Again.", about), thinkThen("unused", about),
	}
	r := runTurns(t, nil, turns, nil)
	if r.res.Success || !strings.Contains(r.res.Reason, "repeated on the same screen") || r.res.Steps != 4 {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	ch := r.of(EvScreenChange)
	if *ch[1].Changed {
		t.Error("tapping a plain text reported a changed screen")
	}
	if !strings.Contains(r.of(EvPrompt)[2].Messages[1].Content, "but the screen did not change") {
		t.Errorf("the model was not told the screen did not change:\n%s", r.of(EvPrompt)[2].Messages[1].Content)
	}
}

func TestDumpThatFailsTwiceIsRetried(t *testing.T) {
	phone := newFakePhone()
	phone.failDumps = 2
	r := runTurns(t, phone, wifiTurns, nil)
	if !r.res.Success {
		t.Fatalf("result = %+v", r.res)
	}
	if !strings.Contains(r.warnings(), "the screen dump failed 2 time(s) before it worked") {
		t.Errorf("warnings:\n%s", r.warnings())
	}
	if strings.Contains(r.of(EvPrompt)[0].Messages[1].Content, "could not be read") {
		t.Error("a dump that recovered was reported to the model")
	}
}

func TestDumpThatKeepsFailingIsReportedThenStops(t *testing.T) {
	phone := newFakePhone()
	r := runTurns(t, phone, []string{
		thinkThen("Wait.", call("wait", "seconds", "1")),
		thinkThen("Wait.", call("wait", "seconds", "2")),
		thinkThen("Wait.", call("wait", "seconds", "3")),
	}, func(c *Config) {
		// The first screen reads; then the phone stops answering.
		collect := c.OnEvent
		c.OnEvent = func(e Event) {
			collect(e)
			if e.Type == EvAction {
				phone.mu.Lock()
				phone.failDumps = 1000
				phone.mu.Unlock()
			}
		}
	})
	if r.res.Success || !strings.Contains(r.res.Reason, "the screen could not be read 3 times in a row") {
		t.Fatalf("result = %+v", r.res)
	}
	if !strings.Contains(r.res.Reason, "could not get idle state") {
		t.Errorf("the reason does not say why: %s", r.res.Reason)
	}
	p := r.lastUserPrompt()
	if !strings.Contains(p, "The screen could not be read") || !strings.Contains(p, "Current screen: unreadable") {
		t.Errorf("the model was not told:\n%s", p)
	}
}

func TestTruncatedDumpIsUsedAfterRetries(t *testing.T) {
	phone := newFakePhone()
	phone.truncate = true
	r := runTurns(t, phone, []string{thinkThen("Open.", call("open_app", "name", "Settings")), thinkThen("Done.", call("task_complete", "summary", "x"))}, nil)
	if !r.res.Success {
		t.Fatalf("result = %+v, warnings:\n%s", r.res, r.warnings())
	}
	if !strings.Contains(r.warnings(), "using an incomplete screen dump") {
		t.Errorf("warnings:\n%s", r.warnings())
	}
	if s := r.of(EvStepStarted)[0].Screen; s == nil || len(s.Elements) == 0 {
		t.Errorf("the partial screen was not used: %+v", s)
	}
}

func TestOtherDumpErrorsEndTheRun(t *testing.T) {
	phone := newFakePhone()
	phone.dumpErr = errors.New("device offline")
	r := runTurns(t, phone, wifiTurns, nil)
	if r.res.Success || r.res.Reason != "dump screen: device offline" || r.res.Steps != 0 {
		t.Fatalf("result = %+v", r.res)
	}
}

func TestSettleWaitsForTwoEqualDumps(t *testing.T) {
	phone := newFakePhone()
	phone.animate = 3
	r := runTurns(t, phone, wifiTurns[3:], nil)
	if !r.res.Success {
		t.Fatalf("result = %+v", r.res)
	}
	// 3 moving dumps, then two equal ones.
	if phone.dumps != 5 {
		t.Errorf("%d dumps, want 5", phone.dumps)
	}
	if strings.Contains(r.of(EvStepStarted)[0].Screen.Prompt, "loading") {
		t.Error("the screen was used before it settled")
	}
}

func TestSettleTimesOut(t *testing.T) {
	phone := newFakePhone()
	phone.animate = 1000
	r := runTurns(t, phone, wifiTurns[3:], func(c *Config) { c.SettleTimeout = 100 * time.Millisecond })
	if !strings.Contains(r.warnings(), "did not settle within 100ms") {
		t.Errorf("warnings:\n%s", r.warnings())
	}
	if !r.res.Success {
		t.Errorf("result = %+v", r.res)
	}
}

func TestSensitiveActions(t *testing.T) {
	pay := thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`))
	pin := thinkThen("PIN.", call("type_text", "index", `{{index "PIN"}}`, "text", "1234"))
	name := thinkThen("Name.", call("type_text", "index", `{{index "Name"}}`, "text", "Ada"))
	done := thinkThen("Done.", call("task_complete", "summary", "x"))
	open := thinkThen("Settings.", call("open_app", "name", "Settings"))
	tests := []struct {
		name     string
		turns    []string
		approver func(*[]ApprovalRequest) Approver
		step     bool
		wantDid  []string
		wantText string
		asked    int
	}{
		{"refused without approver", []string{open, pay, done}, nil, false,
			[]string{"open Settings"}, `needs approval: label "Pay now" matches the sensitive word "Pay"`, 0},
		{"password refused without approver", []string{open, pin, done}, nil, false,
			[]string{"open Settings"}, `needs approval: typing into the password field "PIN"`, 0},
		{"approved", []string{open, pay, done}, verdict(Approve), false,
			[]string{"open Settings", "tap 540 560"}, "", 1},
		{"skipped", []string{open, pay, done}, verdict(Skip), false,
			[]string{"open Settings"}, "skipped by the user", 1},
		{"plain field needs nothing", []string{open, name, done}, nil, false,
			[]string{"open Settings", "tap 540 860", `type "Ada"`}, "", 0},
		{"step mode asks for every action", []string{open, name, done}, verdict(Approve), true,
			[]string{"open Settings", "tap 540 860", `type "Ada"`}, "", 2},
	}
	// ConsultAlways hands every action to the approver but announces only
	// those that must wait.
	t.Run("consult always", func(t *testing.T) {
		var asked []ApprovalRequest
		r := runTurns(t, nil, []string{open, pay, done}, func(c *Config) {
			c.ConsultAlways = true
			c.Approver = verdict(Approve)(&asked)
		})
		if len(asked) != 2 || asked[0].Why != "" || asked[1].Why != ApprovalSensitive || asked[0].Reason != "" {
			t.Errorf("asked %+v", asked)
		}
		if ev := r.of(EvApproval); len(ev) != 1 || ev[0].Approval != ApprovalSensitive || !strings.Contains(ev[0].Text, "Pay") {
			t.Errorf("approval events %+v", ev)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []ApprovalRequest
			r := runTurns(t, nil, tt.turns, func(c *Config) {
				c.StepMode = tt.step
				if tt.approver != nil {
					c.Approver = tt.approver(&asked)
				}
			})
			if got := r.phone.did(); strings.Join(got, "|") != strings.Join(tt.wantDid, "|") {
				t.Errorf("device actions = %q, want %q", got, tt.wantDid)
			}
			if len(asked) != tt.asked || len(r.of(EvApproval)) != tt.asked {
				t.Errorf("asked %d times (%d approval events), want %d", len(asked), len(r.of(EvApproval)), tt.asked)
			}
			if tt.wantText != "" {
				found := false
				for _, e := range r.of(EvAction) {
					found = found || strings.Contains(e.Error+e.Detail, tt.wantText)
				}
				if !found {
					t.Errorf("no action event says %q: %+v", tt.wantText, r.of(EvAction))
				}
			}
		})
	}
}

func verdict(v Verdict) func(*[]ApprovalRequest) Approver {
	return func(asked *[]ApprovalRequest) Approver {
		return func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			*asked = append(*asked, req)
			return Decision{Verdict: v}, nil
		}
	}
}

func TestApproverEditAndAbort(t *testing.T) {
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`)),
		thinkThen("Done.", call("task_complete", "summary", "x")),
	}
	r := runTurns(t, nil, turns, func(c *Config) {
		c.Approver = func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			return Decision{Verdict: Edit, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(0)}}}, nil
		}
	})
	if got := r.phone.screen(); got != "internet" {
		t.Errorf("screen = %s; the edited call (tap Network & internet) did not run", got)
	}
	r = runTurns(t, nil, turns, func(c *Config) {
		c.Approver = func(ctx context.Context, req ApprovalRequest) (Decision, error) {
			return Decision{Verdict: Abort}, nil
		}
	})
	if r.res.Success || r.res.Reason != "stopped by the user" {
		t.Errorf("result = %+v", r.res)
	}
}

// TestApproverEditIsChecked: an edited call goes through the same schema
// check as the model's (toolparse.Coerce, then action.Validate), so an
// Approver may hand back loosely typed values, and a call outside the
// schema is not run.
func TestApproverEditIsChecked(t *testing.T) {
	turns := []string{
		thinkThen("Settings.", call("open_app", "name", "Settings")),
		thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`)),
		thinkThen("Done.", call("task_complete", "summary", "x")),
	}
	tests := []struct {
		name    string
		edit    action.Call
		screen  string // the phone's screen at the end
		wantErr string // in the refused edit's action event
	}{
		{"an int and a name in another case are coerced", action.Call{Name: "Tap", Arguments: map[string]any{"index": 0}}, "internet", ""},
		{"a number as a string is coerced", action.Call{Name: "tap", Arguments: map[string]any{"index": "0"}}, "internet", ""},
		{"a wait over the schema's bound is refused", action.Call{Name: "wait", Arguments: map[string]any{"seconds": 99}}, "settings", "seconds 99 is out of range; it must be between 0 and 30"},
		{"a key outside the enum is refused", action.Call{Name: "press_key", Arguments: map[string]any{"key": "teleport"}}, "settings", `key "teleport" is not valid`},
		{"an unknown tool is refused", action.Call{Name: "fly"}, "settings", `unknown tool "fly"`},
		{"an index not on the screen is refused", action.Call{Name: "tap", Arguments: map[string]any{"index": int64(40)}}, "settings", "index 40 is not on the screen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTurns(t, nil, turns, func(c *Config) {
				c.Approver = func(ctx context.Context, req ApprovalRequest) (Decision, error) {
					return Decision{Verdict: Edit, Call: tt.edit}, nil
				}
			})
			if got := r.phone.screen(); got != tt.screen {
				t.Errorf("screen = %s, want %s", got, tt.screen)
			}
			errs := ""
			for _, e := range r.of(EvAction) {
				errs += e.Error + "\n"
			}
			if tt.wantErr == "" && strings.TrimSpace(errs) != "" || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("action errors %q, want %q", errs, tt.wantErr)
			}
		})
	}
}

func TestStepBudget(t *testing.T) {
	turns := []string{
		thinkThen("a", call("open_app", "name", "Settings")),
		thinkThen("b", call("tap", "index", "0")),
		thinkThen("c", call("tap", "index", "0")),
	}
	r := runTurns(t, nil, turns, func(c *Config) { c.MaxSteps = 2 })
	if r.res.Success || r.res.Reason != "step budget exhausted: 2 steps without task_complete" || r.res.Steps != 2 {
		t.Fatalf("result = %+v", r.res)
	}
}

func TestCancelEndsWithAResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	phone := newFakePhone()
	clock := newClock()
	var events []Event
	res := Run(ctx, Config{
		Task: "t", Device: phone, Model: script.New(&script.Script{Name: "s", Turns: wifiTurns}, script.Options{}),
		Think: true, Now: clock.Now, Sleep: clock.Sleep,
		OnEvent: func(e Event) {
			events = append(events, e)
			if e.Type == EvThinking && e.Step == 2 {
				cancel()
			}
		},
	})
	if res.Success || res.Reason != "cancelled" || res.Steps != 2 {
		t.Fatalf("result = %+v", res)
	}
	if last := events[len(events)-1]; last.Type != EvFinished {
		t.Fatalf("last event = %s", last.Type)
	}
}

func TestModelErrorEndsTheRun(t *testing.T) {
	r := runTurns(t, nil, wifiTurns[:1], nil)
	if r.res.Success || !strings.Contains(r.res.Reason, "model: script") || !strings.Contains(r.res.Reason, "has no turn 2") {
		t.Fatalf("result = %+v", r.res)
	}
}

func TestSwipeCoordinates(t *testing.T) {
	turns := []string{
		thinkThen("Scroll.", call("swipe", "direction", "up")),
		thinkThen("Scroll.", call("swipe", "direction", "left", "index", "1")),
		thinkThen("Done.", call("task_complete", "summary", "x")),
	}
	r := runTurns(t, nil, turns, nil)
	want := []string{"swipe 540 1920 540 480", "swipe 864 410 216 410"}
	if got := r.phone.did(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("swipes = %q, want %q", got, want)
	}
}

func TestMatchWord(t *testing.T) {
	words := DefaultSensitive
	for label, want := range map[string]string{
		"Pay now": "Pay", "BUY": "Buy", "Send message": "Send", "delete": "Delete",
		"Payment": "", "Sender": "", "Undeleted": "", "Re-send": "Send", "": "",
	} {
		if got := matchWord(words, label); got != want {
			t.Errorf("matchWord(%q) = %q, want %q", label, got, want)
		}
	}
}

// spy records the requests a backend receives.
type spy struct {
	model.Backend
	reqs []model.ChatRequest
}

func (s *spy) Chat(ctx context.Context, req model.ChatRequest) (model.Stream, error) {
	s.reqs = append(s.reqs, req)
	return s.Backend.Chat(ctx, req)
}

func TestChatRequest(t *testing.T) {
	var sp *spy
	runTurns(t, nil, wifiTurns[:2], func(c *Config) {
		sp = &spy{Backend: c.Model}
		c.Model = sp
		c.Constrain = true
		c.MaxTokens = 777
		c.Sampling = model.Sampling{Temperature: 1, TopP: 0.95}
	})
	if len(sp.reqs) < 2 {
		t.Fatalf("%d requests", len(sp.reqs))
	}
	req := sp.reqs[1]
	if len(req.Tools) != len(action.Tools) || req.Tools[0].Name != action.Tools[0].Name {
		t.Errorf("tools = %v", action.Names(req.Tools))
	}
	if !req.Think || !req.Constrain || req.MaxTokens != 777 || req.Sampling.TopP != 0.95 {
		t.Errorf("request = %+v", req)
	}
	// The second request is about the settings screen and its 6 rows.
	if fmt.Sprint(req.ValidIndices) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("valid indices = %v", req.ValidIndices)
	}
	if !strings.Contains(req.Messages[0].Content, "exactly one tool call") {
		t.Errorf("system prompt = %q", req.Messages[0].Content)
	}
}

// BenchmarkStep measures the loop's own cost per step (dump parsing,
// settling, prompt building, parsing the answer) with an instant model and
// phone.
func BenchmarkStep(b *testing.B) {
	clock := newClock()
	steps := 0
	for b.Loop() {
		res := Run(context.Background(), Config{
			Task: "Turn on Wi-Fi", Device: newFakePhone(), Think: true,
			Model: script.New(&script.Script{Name: "b", Turns: wifiTurns}, script.Options{}),
			Now:   clock.Now, Sleep: clock.Sleep,
		})
		if !res.Success {
			b.Fatal(res)
		}
		steps += res.Steps
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps)/1e3, "µs/step")
}

// FuzzModelOutput feeds arbitrary model output to the loop: whatever the
// model says, the run ends with a result, nothing panics, and no call that
// failed validation reaches the phone.
func FuzzModelOutput(f *testing.F) {
	f.Add("x</think>" + call("tap", "index", "0"))
	f.Add(`[tap] {"tool": "tap", "parameters": {"index": 1}`)
	f.Add("</think>" + call("type_text", "text", "\"; reboot; echo \"", "index", "3"))
	f.Add("</think>" + call("swipe", "direction", "sideways") + call("press_key", "key", "home"))
	f.Add("</think>{\"name\": \"wait\", \"arguments\": {\"seconds\": 1e309}}")
	f.Add("</think>" + call("open_app", "name", "Settings") + "\x00" + call("tap", "index", "-1"))
	f.Fuzz(func(t *testing.T, out string) {
		turns := strings.Split(out, "\x00")
		if len(turns) > 6 {
			turns = turns[:6]
		}
		phone := newFakePhone()
		clock := newClock()
		var last Event
		res := Run(context.Background(), Config{
			Task: "t", Device: phone, Think: true, MaxSteps: 3, ThinkBudget: 50,
			Model: script.New(&script.Script{Name: "f", Turns: turns}, script.Options{}),
			Now:   clock.Now, Sleep: clock.Sleep,
			OnEvent: func(e Event) { last = e },
		})
		if last.Type != EvFinished || *last.Result != res || res.Reason == "" {
			t.Fatalf("run ended without a proper result: %+v / %+v", last, res)
		}
		for _, a := range phone.did() {
			if strings.HasPrefix(a, "tap") || strings.HasPrefix(a, "long") {
				var x, y int
				fmt.Sscanf(a[strings.Index(a, " ")+1:], "%d %d", &x, &y)
				if x < 0 || y < 0 || x > fakeW || y > fakeH {
					t.Fatalf("tapped off the screen: %s", a)
				}
			}
		}
	})
}

func TestHistoryLinesAreBounded(t *testing.T) {
	r := &runner{step: 3}
	r.addHistory(`type_text(text="` + strings.Repeat("garbage ", 500) + `") -> screen changed`)
	r.addHistory(`tap(index=2) "Wi-Fi" -> screen changed`)
	if n := len([]rune(r.history[0])); n > maxHistoryLine+len("step 3: ") || !strings.HasSuffix(r.history[0], "…") {
		t.Errorf("long line kept at %d runes: %q", n, r.history[0])
	}
	if r.history[1] != `step 3: tap(index=2) "Wi-Fi" -> screen changed` {
		t.Errorf("short line changed: %q", r.history[1])
	}
}

// TestOutcomesTellTheModel: every way a call can end is told to the model
// twice from one place, in the history line and in a note of the next
// prompt, and both name the element by its label.
func TestOutcomesTellTheModel(t *testing.T) {
	open := thinkThen("Settings.", call("open_app", "name", "Settings"))
	pay := thinkThen("Pay.", call("tap", "index", `{{index "Pay now"}}`))
	done := thinkThen("Done.", call("task_complete", "summary", "x"))
	tests := []struct {
		name     string
		turns    []string
		approver Approver
		history  string // in the third prompt's history
		note     string // in the third prompt's notes
	}{
		{"skipped", []string{open, pay, done}, func(context.Context, ApprovalRequest) (Decision, error) { return Decision{Verdict: Skip}, nil },
			`tap(index=2) "Pay now" -> skipped by the user`, `tap(index=2) "Pay now" was skipped by the user. Do something else.`},
		{"refused", []string{open, pay, done}, nil,
			`tap(index=2) "Pay now" -> refused: needs approval`, `tap(index=2) "Pay now" was not run: it needs the user's approval (label "Pay now" matches the sensitive word "Pay")`},
		{"edit refused", []string{open, pay, done}, func(context.Context, ApprovalRequest) (Decision, error) {
			return Decision{Verdict: Edit, Call: action.Call{Name: "tap", Arguments: map[string]any{"index": int64(40)}}}, nil
		}, `tap(index=40) -> the user's edit is invalid: index 40 is not on the screen`,
			`Error: tap(index=40) (the user's edit of your tap(index=2) "Pay now") was not run: index 40 is not on the screen`},
		{"invalid", []string{open, thinkThen("Type.", call("type_text", "text", "", "index", `{{index "Name"}}`)), done}, nil,
			`type_text(text="", index=4) "Name" -> error: text is empty`, `Error: type_text(text="", index=4) "Name" was not run: text is empty.`},
		{"unchanged", []string{open, thinkThen("About.", call("tap", "index", `{{index "About phone"}}`)), done}, nil,
			`tap(index=5) "About phone" -> screen did not change`, `tap(index=5) "About phone" was done, but the screen did not change.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTurns(t, nil, tt.turns, func(c *Config) { c.Approver = tt.approver })
			ps := r.of(EvPrompt)
			if len(ps) < 3 {
				t.Fatalf("%d prompts", len(ps))
			}
			third := ps[2].Messages[1].Content
			if !strings.Contains(third, "step 2: "+tt.history) {
				t.Errorf("history lacks %q:\n%s", tt.history, third)
			}
			if !strings.Contains(third, tt.note) {
				t.Errorf("notes lack %q:\n%s", tt.note, third)
			}
		})
	}
}
