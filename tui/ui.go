package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/droidgo/droidgo/action"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/toolparse"
)

// Messages of the UI besides keys and window sizes.
type (
	// batchMsg carries the events taken from the queue in one go.
	batchMsg struct {
		items  []item
		closed bool
		at     time.Time
	}
	// tickMsg advances the elapsed-time clock.
	tickMsg time.Time
	// ctxDoneMsg says the context given to Run has ended, or the process
	// was interrupted.
	ctxDoneMsg struct{ why string }
	// forceQuitMsg ends the UI when the loop did not close in time.
	forceQuitMsg struct{}
)

// pane names the scrollable panes, in tab order.
type pane int

const (
	paneThinking pane = iota
	paneElements
	paneTimeline
	numPanes
)

func (p pane) String() string {
	return [...]string{"Thinking", "Screen", "Timeline"}[p]
}

// scroll is a pane's scroll state. With follow set the pane keeps its
// natural position (the newest text, or the target element) and offset is
// ignored; scrolling by hand clears it and G sets it again.
type scroll struct {
	offset int
	follow bool
}

// stepEntry is one row of the timeline.
type stepEntry struct {
	step       int
	call       *action.Call
	acted      bool
	outcome    loop.Outcome
	detail     string
	err        string
	recoveries []string
	parseErrs  []string
	changed    *bool
	notes      []string // why the step's call waited for approval
	vote       string   // how the chains of a voted turn agreed
	warnings   []string
	stats      *loop.StatsInfo
}

// ui is the UI's single bubbletea model (not called model: in droidgo that
// is the language model). Sub-views are plain methods over its state
// (view.go); nothing here does I/O: Update only changes state, answers
// approvals on buffered channels and flips the shared gate.
type ui struct {
	opts  Options
	gate  *gate
	clock func() time.Time
	wait  func(last time.Time) tea.Cmd // re-issued queue reader; nil in tests
	keys  keyMap
	st    styles
	help  help.Model

	width, height int
	now           time.Time

	// phone is the run shown; phones are all of them, in the order of
	// Options.Devices (one when the run drives one phone).
	*phone
	phones []*phone
	// pinned is set when the user chose the phone shown: no other phone
	// is brought on screen by itself until they answer a call.
	pinned bool

	focus pane
	// ver counts changes to what the screen and timeline panes draw; cache
	// holds their lines for the current ver.
	ver   int
	cache [numPanes]paneCache

	paused   bool
	stepMode bool

	editing bool
	input   textinput.Model
	editErr string

	closed   bool // the loop closed the UI: no more events
	stopping bool // quit was asked (or ctx ended): leave once closed
	userQuit bool
	message  string

	// observe, set by tests, sees the state after every Update, on the
	// UI's goroutine.
	observe func(*ui)
}

// phone is the state of one phone's run: what the panes, the header and
// the footer show when it is the phone on screen.
type phone struct {
	task, device, modelName string
	engine                  string // how the model runs (model.Engine)
	maxSteps, step          int
	tps                     float64
	started, finishedAt     time.Time

	turns    []*turn // the model's text, one per step; the last is the current
	screen   *loop.ScreenInfo
	target   *int
	timeline []*stepEntry
	result   *loop.Result

	scroll    [numPanes]scroll
	approvals []*approval // waiting for the user; the first is shown
}

func (m *ui) newPhone(device string) *phone {
	p := &phone{task: m.opts.Task, device: device, modelName: m.opts.Model, maxSteps: m.opts.MaxSteps, started: m.clock()}
	for i := range p.scroll {
		p.scroll[i].follow = true
	}
	m.phones = append(m.phones, p)
	return p
}

func newUI(opts Options, g *gate, clock func() time.Time) *ui {
	m := &ui{
		opts:     opts,
		gate:     g,
		clock:    clock,
		keys:     defaultKeys(),
		st:       defaultStyles(),
		help:     help.New(),
		width:    80,
		height:   24,
		stepMode: opts.StepMode,
		focus:    paneThinking,
	}
	m.help.Styles = m.st.help
	if len(opts.Devices) > 1 {
		for _, d := range opts.Devices {
			m.newPhone(d)
		}
	} else {
		m.newPhone(opts.Device)
	}
	m.phone = m.phones[0]
	m.input = textinput.New()
	m.input.Prompt = "edit> "
	m.input.CharLimit = 2000
	m.now = m.started
	return m
}

// many reports whether the UI shows several phones.
func (m *ui) many() bool { return len(m.phones) > 1 }

// phoneFor returns the phone an event or approval is about: with one
// phone always that one, with several the one named (a phone not named
// in Options.Devices is added).
func (m *ui) phoneFor(device string) *phone {
	if len(m.opts.Devices) <= 1 {
		return m.phones[0]
	}
	for _, p := range m.phones {
		if p.device == device {
			return p
		}
	}
	return m.newPhone(device)
}

// show puts phone i on screen.
func (m *ui) show(i int) {
	if i < 0 || i >= len(m.phones) || m.phones[i] == m.phone {
		return
	}
	m.phone = m.phones[i]
	m.editing = false
	m.editErr = ""
	m.input.Blur()
	m.ver++ // the panes draw another phone
	m.message = "showing " + clean(m.device)
}

// shown returns the index of the phone on screen.
func (m *ui) shown() int {
	for i, p := range m.phones {
		if p == m.phone {
			return i
		}
	}
	return 0
}

// finished reports whether every phone's run has ended.
func (m *ui) finished() bool {
	for _, p := range m.phones {
		if p.result == nil {
			return false
		}
	}
	return true
}

// waiting counts the approvals waiting on every phone.
func (m *ui) waiting() int {
	n := 0
	for _, p := range m.phones {
		n += len(p.approvals)
	}
	return n
}

// Init starts reading the queue and the clock.
func (m *ui) Init() tea.Cmd {
	return tea.Batch(m.next(time.Time{}), m.tick())
}

func (m *ui) next(last time.Time) tea.Cmd {
	if m.wait == nil {
		return nil
	}
	return m.wait(last)
}

func (m *ui) tick() tea.Cmd {
	if m.wait == nil {
		return nil
	}
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update applies one message to the state.
func (m *ui) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	mm, cmd := m.update(msg)
	if m.observe != nil {
		m.observe(m)
	}
	return mm, cmd
}

func (m *ui) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.SetWidth(max(10, m.width-len(m.input.Prompt)-2))
		m.clampScrolls()
		return m, nil
	case batchMsg:
		for _, it := range msg.items {
			m.apply(it)
		}
		m.toWaiting()
		m.clampScrolls()
		if msg.closed {
			m.closed = true
			if m.stopping || m.opts.ExitOnFinish {
				return m, tea.Quit
			}
			return m, nil
		}
		if m.opts.ExitOnFinish && m.finished() && m.waiting() == 0 {
			return m, tea.Quit
		}
		return m, m.next(msg.at)
	case tickMsg:
		m.now = m.clock()
		if m.finished() {
			return m, nil
		}
		return m, m.tick()
	case ctxDoneMsg:
		why := msg.why
		if why == "" {
			why = "the run was cancelled"
		}
		m.stop(why)
		if m.closed {
			return m, tea.Quit
		}
		return m, tea.Tick(3*time.Second, func(time.Time) tea.Msg { return forceQuitMsg{} })
	case forceQuitMsg:
		return m, tea.Quit
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	if m.editing {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// stop cancels the run and answers whatever waits with Abort; the UI stays
// to show the end of the run until the loop closes it.
func (m *ui) stop(why string) {
	if !m.stopping && m.opts.Cancel != nil {
		m.opts.Cancel()
	}
	m.stopping = true
	for _, p := range m.phones {
		for _, a := range p.approvals {
			a.reply <- loop.Decision{Verdict: loop.Abort}
		}
		p.approvals = nil
	}
	m.editing = false
	m.paused = false
	m.gate.setPaused(false)
	if !m.finished() {
		m.message = why + ": waiting for the run to stop (q again to leave now)"
	}
}

func (m *ui) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if k.String() == "ctrl+c" || (!m.editing && key.Matches(k, m.keys.Quit)) {
		m.userQuit = true
		if m.closed || m.stopping || m.finished() {
			m.stop("quit")
			return m, tea.Quit
		}
		m.stop("quit")
		return m, nil
	}
	if m.editing {
		return m.editKey(k)
	}
	if len(m.approvals) > 0 {
		a := m.approvals[0]
		switch {
		case key.Matches(k, m.keys.Approve):
			m.answer1(loop.Decision{Verdict: loop.Approve}, "approved")
			return m, nil
		case key.Matches(k, m.keys.Skip):
			m.answer1(loop.Decision{Verdict: loop.Skip}, "skipped")
			return m, nil
		case key.Matches(k, m.keys.Abort):
			m.answer1(loop.Decision{Verdict: loop.Abort}, "aborted")
			return m, nil
		case key.Matches(k, m.keys.Edit):
			m.editing = true
			m.editErr = ""
			m.input.SetValue(toolparse.FormatCall(a.req.Call, action.Tools))
			m.input.CursorEnd()
			return m, m.input.Focus()
		}
	}
	if m.many() {
		switch {
		case key.Matches(k, m.keys.NextPhone):
			m.pinned = true
			m.show((m.shown() + 1) % len(m.phones))
			return m, nil
		case key.Matches(k, m.keys.PrevPhone):
			m.pinned = true
			m.show((m.shown() + len(m.phones) - 1) % len(m.phones))
			return m, nil
		case len(k.String()) == 1 && k.String() >= "1" && k.String() <= "9":
			m.pinned = true
			m.show(int(k.String()[0] - '1'))
			return m, nil
		}
	}
	switch {
	case key.Matches(k, m.keys.Pause):
		if m.stopping || m.finished() {
			// Holding a run that is ending could only hang it.
			return m, nil
		}
		m.paused = !m.paused
		m.gate.setPaused(m.paused)
		if m.paused {
			m.message = "paused: the run holds before its next step or action"
		} else {
			m.message = "resumed"
		}
	case key.Matches(k, m.keys.StepMode):
		if !m.opts.StepMode && !m.opts.EveryCall {
			// Unless the loop consults the approver for every call,
			// turning step mode on here would promise holds that cannot
			// happen.
			m.message = "step mode is for live runs: nothing here waits for approval"
			return m, nil
		}
		m.stepMode = !m.stepMode
		m.gate.setStepMode(m.stepMode)
		if m.stepMode {
			m.message = "step mode on: each action waits for approval"
			return m, nil
		}
		m.message = "step mode off"
		// Calls shown only because of step mode go ahead; sensitive ones
		// still wait.
		for _, p := range m.phones {
			kept := p.approvals[:0]
			for _, a := range p.approvals {
				if a.req.Why == loop.ApprovalSensitive {
					kept = append(kept, a)
				} else {
					a.reply <- loop.Decision{Verdict: loop.Approve}
				}
			}
			p.approvals = kept
		}
	case key.Matches(k, m.keys.NextPane):
		m.focus = (m.focus + 1) % numPanes
	case key.Matches(k, m.keys.PrevPane):
		m.focus = (m.focus + numPanes - 1) % numPanes
	case key.Matches(k, m.keys.Up):
		m.scrollBy(-1)
	case key.Matches(k, m.keys.Down):
		m.scrollBy(1)
	case key.Matches(k, m.keys.PageUp):
		m.scrollBy(-max(1, m.paneHeight(m.focus)-1))
	case key.Matches(k, m.keys.PageDown):
		m.scrollBy(max(1, m.paneHeight(m.focus)-1))
	case key.Matches(k, m.keys.Top):
		m.scroll[m.focus] = scroll{offset: 0}
	case key.Matches(k, m.keys.Bottom):
		m.scroll[m.focus] = scroll{follow: true}
	case key.Matches(k, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	}
	return m, nil
}

func (m *ui) editKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(k, m.keys.Cancel):
		m.editing = false
		m.editErr = ""
		m.input.Blur()
		return m, nil
	case key.Matches(k, m.keys.Apply):
		c, rec, err := toolparse.ReadCall(m.input.Value(), action.Tools)
		if err == nil {
			err = m.checkIndex(c)
		}
		if err != nil {
			m.editErr = err.Error()
			return m, nil
		}
		m.editing = false
		m.editErr = ""
		m.input.Blur()
		what := "edited to " + c.String()
		if len(rec) > 0 {
			// What was read differs from what was typed: say how.
			what += " (" + strings.Join(rec, "; ") + ")"
		}
		m.answer1(loop.Decision{Verdict: loop.Edit, Call: c}, what)
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return m, cmd
}

// checkIndex checks an edited call's element index against the screen the
// call is for, with the loop's check (loop.CheckIndex), so a mistyped
// index is fixed in the editor instead of wasting the step.
func (m *ui) checkIndex(c action.Call) error {
	i, ok := indexArg(c)
	if !ok {
		return nil
	}
	n := -1
	if m.screen != nil {
		n = len(m.screen.Elements)
	}
	return loop.CheckIndex(i, n)
}

// answer1 answers the approval on show.
func (m *ui) answer1(d loop.Decision, what string) {
	a := m.approvals[0]
	m.approvals = m.approvals[1:]
	a.reply <- d
	m.message = a.req.Call.String() + " " + what
	m.pinned = false
	m.toWaiting()
}

// apply folds one queued item into the state of its phone.
func (m *ui) apply(it item) {
	device := it.ev.Device
	switch {
	case it.appr != nil:
		device = it.appr.req.Device
	case it.withdraw != nil:
		device = it.withdraw.req.Device
	}
	shown := m.phone
	m.phone = m.phoneFor(device)
	m.applyTo(it)
	m.phone = shown
}

// toWaiting brings a phone whose call waits for the user on screen when
// the phone shown has none waiting, so approvals come to the user one
// phone after the other; not while the user looks at a phone they chose
// (pinned, until they answer a call).
func (m *ui) toWaiting() {
	if len(m.approvals) > 0 || m.editing || m.pinned {
		return
	}
	for i, p := range m.phones {
		if len(p.approvals) > 0 {
			m.show(i)
			m.message = clean(m.device) + " waits for approval"
			return
		}
	}
}

// applyTo folds one queued item into the state of m.phone.
func (m *ui) applyTo(it item) {
	if !it.ev.Type.Droppable() || it.appr != nil || it.withdraw != nil {
		m.ver++
	}
	switch {
	case it.appr != nil:
		m.approvals = append(m.approvals, it.appr)
		if c, ok := indexArg(it.appr.req.Call); ok {
			m.target = &c
			m.scroll[paneElements].follow = true
		}
		return
	case it.withdraw != nil:
		for i, a := range m.approvals {
			if a == it.withdraw {
				m.approvals = append(m.approvals[:i], m.approvals[i+1:]...)
				if i == 0 {
					m.editing = false
					m.editErr = ""
				}
				break
			}
		}
		return
	}
	ev := it.ev
	switch ev.Type {
	case loop.EvRunStarted:
		if ev.Task != "" {
			m.task = ev.Task
		}
		if ev.Device != "" {
			m.device = ev.Device
		}
		if ev.Model != "" {
			m.modelName = ev.Model
		}
		m.engine = ""
		if ev.Engine != nil {
			m.engine = ev.Engine.String()
		}
		if ev.MaxSteps > 0 {
			m.maxSteps = ev.MaxSteps
		}
		m.started = m.clock()
		m.now = m.started
	case loop.EvStepStarted:
		m.step = ev.Step
		if ev.Screen != nil {
			m.screen = ev.Screen
		}
		m.turns = append(m.turns, &turn{step: ev.Step})
		m.target = nil
		m.scroll[paneThinking] = scroll{follow: true}
		m.scroll[paneElements] = scroll{follow: true}
		m.entry(ev.Step)
	case loop.EvThinking:
		t := m.turn(ev.Step)
		t.thinking.WriteString(clean(ev.Text))
		m.countTokens(t, it.tokens)
	case loop.EvAnswer:
		t := m.turn(ev.Step)
		t.answer.WriteString(clean(ev.Text))
		m.countTokens(t, it.tokens)
	case loop.EvModelStats:
		if ev.Stats != nil {
			m.tps = ev.Stats.TokensPerSecond
			m.turn(ev.Step).done = true
			m.entry(ev.Step).stats = ev.Stats
		}
	case loop.EvToolCall:
		e := m.entry(ev.Step)
		if ev.Call != nil {
			c := *ev.Call
			e.call = &c
			if i, ok := indexArg(c); ok {
				m.target = &i
				m.scroll[paneElements].follow = true
			}
		}
		if ev.Parse != nil {
			e.recoveries = append(e.recoveries, ev.Parse.Recoveries...)
			e.parseErrs = append(e.parseErrs, ev.Parse.Errors...)
		}
	case loop.EvVote:
		if ev.Vote != nil {
			m.entry(ev.Step).vote = ev.Vote.Summary()
		}
	case loop.EvApproval:
		if ev.Element != nil {
			i := *ev.Element
			m.target = &i
			m.scroll[paneElements].follow = true
		}
		// In step mode every step waits; only the sensitive-action
		// policy's reasons are worth a line.
		if ev.Approval == loop.ApprovalSensitive && ev.Text != "" {
			e := m.entry(ev.Step)
			e.notes = append(e.notes, ev.Text)
		}
	case loop.EvAction:
		e := m.entry(ev.Step)
		if ev.Call != nil {
			c := *ev.Call
			e.call = &c
		}
		e.acted = true
		e.outcome = ev.Outcome
		e.detail = ev.Detail
		e.err = ev.Error
		if ev.Element != nil {
			i := *ev.Element
			m.target = &i
		}
	case loop.EvScreenChange:
		if ev.Changed != nil {
			c := *ev.Changed
			m.entry(ev.Step).changed = &c
		}
	case loop.EvWarning:
		e := m.entry(ev.Step)
		e.warnings = append(e.warnings, ev.Text)
	case loop.EvFinished:
		if ev.Result != nil {
			r := *ev.Result
			m.result = &r
			m.finishedAt = m.clock()
			m.now = m.finishedAt
			if m.finished() {
				m.paused = false
				m.gate.setPaused(false)
			}
			if r.Steps > 0 {
				m.step = r.Steps
			}
		}
	}
}

// turn is what the model wrote in one step.
type turn struct {
	step     int
	thinking strings.Builder
	answer   strings.Builder
	// lines caches the drawn text of a finished turn for width cacheW.
	lines  []string
	cacheW int

	// tokens counts the token events since first, for a live rate until
	// the turn's own statistics arrive (done).
	tokens      int
	first, last time.Time
	done        bool
}

// countTokens notes n token events (one if the event was not coalesced).
func (m *ui) countTokens(t *turn, n int) {
	now := m.clock()
	if t.tokens == 0 {
		t.first = now
	}
	t.last = now
	t.tokens += max(1, n)
}

// rate is the decode speed to show: the current turn's live rate while it
// streams (once it has streamed for a second), else the last turn's
// statistics. The live rate counts token events, which backends send one
// per token or so.
func (m *ui) rate() (tps float64, live bool) {
	if n := len(m.turns); n > 0 && m.result == nil {
		t := m.turns[n-1]
		if d := t.last.Sub(t.first).Seconds(); !t.done && t.tokens > 1 && d >= 1 {
			return float64(t.tokens-1) / d, true
		}
	}
	return m.tps, false
}

// turn returns the text of a step. A step with no turn yet (its
// step_started was not seen) gets one when it is newer than the current
// turn; tokens of an older step without a turn go to the current one.
func (m *ui) turn(step int) *turn {
	for i := len(m.turns) - 1; i >= 0; i-- {
		if m.turns[i].step == step {
			return m.turns[i]
		}
	}
	if n := len(m.turns); n > 0 && step < m.turns[n-1].step {
		return m.turns[n-1]
	}
	t := &turn{step: step}
	m.turns = append(m.turns, t)
	return t
}

// cur returns the current turn's text, or empty builders before the first.
func (m *ui) cur() *turn {
	if n := len(m.turns); n > 0 {
		return m.turns[n-1]
	}
	return &turn{}
}

// entry returns the timeline row of a step, adding it if needed. Events of
// step 0 (before the first step) get a row of their own.
func (m *ui) entry(step int) *stepEntry {
	for i := len(m.timeline) - 1; i >= 0; i-- {
		if m.timeline[i].step == step {
			return m.timeline[i]
		}
	}
	e := &stepEntry{step: step}
	m.timeline = append(m.timeline, e)
	return e
}

// indexArg returns the element index a call acts on, if it has one.
func indexArg(c action.Call) (int, bool) {
	switch v := c.Arguments["index"].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		if v == float64(int(v)) {
			return int(v), true
		}
	}
	return 0, false
}

// scrollBy moves the focused pane's view by n lines.
func (m *ui) scrollBy(n int) {
	s := &m.scroll[m.focus]
	maxOff := m.maxOffset(m.focus)
	if s.follow {
		s.offset = m.followOffset(m.focus)
	}
	s.follow = false
	s.offset += n
	if s.offset >= maxOff && m.focus != paneElements {
		s.offset = maxOff
		s.follow = true // back at the bottom: keep following new text
	}
	s.offset = max(0, min(s.offset, maxOff))
}

// clampScrolls keeps hand-set offsets inside their content after a resize
// or new content.
func (m *ui) clampScrolls() {
	for p := range numPanes {
		s := &m.scroll[p]
		if !s.follow {
			s.offset = max(0, min(s.offset, m.maxOffset(p)))
		}
	}
}

// clean makes untrusted text (model output, labels) safe to draw: termsafe
// drops escape sequences, control characters and bidi overrides, which
// could move the cursor, restyle or retitle the terminal or hide text, and
// tabs become spaces.
func clean(s string) string {
	s = termsafe.String(s)
	if strings.IndexByte(s, '\t') >= 0 {
		s = strings.ReplaceAll(s, "\t", "    ")
	}
	return s
}
