package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/droidgo/droidgo/loop"
)

// wideWidth is the width from which the panes sit side by side: thinking on
// the left, the screen and the timeline stacked on the right.
const wideWidth = 120

// headerHeight is the title line and the status line, and the line of
// the phones when there are several.
func (m *ui) headerHeight() int {
	if m.many() {
		return 3
	}
	return 2
}

// View draws the whole UI.
func (m *ui) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "droidgo"
	if m.task != "" {
		v.WindowTitle += ": " + clean(strings.ReplaceAll(m.task, "\n", " "))
	}
	return v
}

// render draws exactly m.height lines of at most m.width cells.
func (m *ui) render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := m.header()
	footer := m.footer()
	body := h - len(lines) - len(footer)
	if body >= 6 && w >= 30 {
		lines = append(lines, m.body(body)...)
	} else {
		for range max(0, body) {
			lines = append(lines, "")
		}
	}
	lines = append(lines, footer...)
	if len(lines) > h { // tiny terminals: keep the header and the help line
		lines = append(lines[:h-1], lines[len(lines)-1])
	}
	for i, l := range lines {
		if len(l) > w { // cheap test first: bytes never undercount cells
			lines[i] = ansi.Truncate(l, w, "…")
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// rect is a pane's size including its border.
type rect struct{ w, h int }

// layout sizes the panes for the body height.
func (m *ui) layout(body int) [numPanes]rect {
	var r [numPanes]rect
	w := m.width
	if w >= wideWidth {
		left := w / 2
		r[paneThinking] = rect{left, body}
		r[paneElements] = rect{w - left, body / 2}
		r[paneTimeline] = rect{w - left, body - body/2}
		return r
	}
	top := max(3, body*2/5)
	r[paneThinking] = rect{w, top}
	r[paneElements] = rect{w / 2, body - top}
	r[paneTimeline] = rect{w - w/2, body - top}
	return r
}

func (m *ui) bodyHeight() int {
	return m.height - m.headerHeight() - len(m.footer())
}

// paneHeight is the number of content lines a pane shows.
func (m *ui) paneHeight(p pane) int {
	return max(0, m.layout(m.bodyHeight())[p].h-2)
}

func (m *ui) paneInnerWidth(p pane) int {
	return max(1, m.layout(m.bodyHeight())[p].w-4)
}

func (m *ui) body(body int) []string {
	r := m.layout(body)
	box := func(p pane) string {
		lines, target := m.paneLines(p, max(1, r[p].w-4))
		return m.box(p, lines, target, r[p].w, r[p].h)
	}
	var s string
	if m.width >= wideWidth {
		right := box(paneElements) + "\n" + box(paneTimeline)
		s = joinColumns(box(paneThinking), right)
	} else {
		s = box(paneThinking) + "\n" + joinColumns(box(paneElements), box(paneTimeline))
	}
	return strings.Split(s, "\n")
}

// joinColumns puts two blocks of lines side by side; the left block's lines
// all have the same width.
func joinColumns(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	n := max(len(al), len(bl))
	out := make([]string, n)
	for i := range n {
		var l, r string
		if i < len(al) {
			l = al[i]
		}
		if i < len(bl) {
			r = bl[i]
		}
		out[i] = l + r
	}
	return strings.Join(out, "\n")
}

// box draws a pane with its title in the top border and, when the content
// does not fit, the visible range in the bottom border.
func (m *ui) box(p pane, lines []string, target, w, h int) string {
	if w < 4 || h < 2 {
		return ""
	}
	focused := p == m.focus
	tl, tr, bl, br, hz, vt := "┌", "┐", "└", "┘", "─", "│"
	bs := m.st.border
	if focused {
		tl, tr, bl, br, hz, vt = "┏", "┓", "┗", "┛", "━", "┃"
		bs = m.st.borderFocused
	}
	inner := w - 4
	vis := h - 2
	off := m.offset(p, len(lines), vis, target)

	title := " " + m.paneTitle(p) + " "
	title = ansi.Truncate(title, w-4, "… ")
	tw := ansi.StringWidth(title)
	top := bs.Render(tl+hz) + m.st.paneTitle.Render(title) + bs.Render(strings.Repeat(hz, max(0, w-3-tw))+tr)

	var pos string
	if len(lines) > vis {
		pos = fmt.Sprintf(" %d-%d/%d ", off+1, min(off+vis, len(lines)), len(lines))
		if ansi.StringWidth(pos) > w-3 {
			pos = ""
		}
	}
	bottom := bs.Render(bl + strings.Repeat(hz, max(0, w-3-len(pos))) + pos + hz + br)

	left, right := bs.Render(vt)+" ", " "+bs.Render(vt)
	var b strings.Builder
	b.WriteString(top)
	for i := range vis {
		var l string
		if j := off + i; j < len(lines) {
			l = lines[j]
		}
		lw := ansi.StringWidth(l)
		if lw > inner {
			l = ansi.Truncate(l, inner, "…")
			lw = ansi.StringWidth(l)
		}
		pad := inner - lw
		b.WriteString("\n" + left + l + strings.Repeat(" ", max(0, pad)) + right)
	}
	b.WriteString("\n" + bottom)
	return b.String()
}

func (m *ui) paneTitle(p pane) string {
	switch p {
	case paneThinking:
		if m.step > 0 {
			return fmt.Sprintf("Thinking · step %d", m.step)
		}
	case paneElements:
		if m.screen != nil && m.screen.App != "" {
			return "Screen · " + clean(m.screen.App)
		}
	case paneTimeline:
		if n := len(m.timeline); n > 0 {
			if n := m.countSteps(); n != 1 {
				return "Timeline · " + loop.Steps(n)
			}
			return "Timeline · 1 step"
		}
	}
	return p.String()
}

func (m *ui) countSteps() int {
	n := 0
	for _, e := range m.timeline {
		if e.step > 0 {
			n++
		}
	}
	return n
}

// offset is the first content line a pane shows, given its n lines, vis
// visible lines and, for the screen pane, the target's line (or -1).
func (m *ui) offset(p pane, n, vis, target int) int {
	s := m.scroll[p]
	off := s.offset
	if s.follow {
		off = followOffsetFor(p, n, vis, target)
	}
	return max(0, min(off, n-vis))
}

func (m *ui) followOffset(p pane) int {
	lines, target := m.paneLines(p, m.paneInnerWidth(p))
	return followOffsetFor(p, len(lines), m.paneHeight(p), target)
}

// followOffsetFor is where a following pane stands: at the newest text, or
// for the screen pane around the target element.
func followOffsetFor(p pane, n, vis, target int) int {
	if p == paneElements {
		if target < 0 {
			return 0
		}
		return max(0, min(target-vis/2, n-vis))
	}
	return max(0, n-vis)
}

func (m *ui) maxOffset(p pane) int {
	lines, _ := m.paneLines(p, m.paneInnerWidth(p))
	return max(0, len(lines)-m.paneHeight(p))
}

// paneLines is a pane's content wrapped or cut to width, and for the screen
// pane the line of the target element (-1 if none).
func (m *ui) paneLines(p pane, width int) ([]string, int) {
	if p == paneThinking {
		// Changes with every token; finished turns are cached inside.
		return m.thinkingLines(width), -1
	}
	// The screen and the timeline change only with non-token events, so
	// while tokens stream they are drawn from the cache.
	c := &m.cache[p]
	if c.lines != nil && c.ver == m.ver && c.width == width {
		return c.lines, c.target
	}
	var lines []string
	target := -1
	if p == paneElements {
		lines, target = m.elementLines(width)
	} else {
		lines = m.timelineLines(width)
	}
	*c = paneCache{ver: m.ver, width: width, lines: lines, target: target}
	return lines, target
}

// paneCache holds a pane's drawn lines for one version of the state.
type paneCache struct {
	ver, width int
	lines      []string
	target     int
}

func wrap(s string, width int) []string {
	if s == "" {
		return nil
	}
	return strings.Split(ansi.Wrap(s, width, ""), "\n")
}

// thinkingLines is the model's text of every step, the current one last:
// each step's reasoning, set apart from its answer by a rule.
func (m *ui) thinkingLines(width int) []string {
	if len(m.turns) == 0 {
		if m.result != nil {
			return nil
		}
		return []string{m.st.faint.Render("waiting for the first step…")}
	}
	var out []string
	for i, t := range m.turns {
		last := i == len(m.turns)-1
		if !last && t.cacheW == width && t.lines != nil {
			out = append(out, t.lines...)
			continue
		}
		lines := m.turnLines(t, width, last)
		if !last {
			t.lines, t.cacheW = lines, width
		}
		out = append(out, lines...)
	}
	return out
}

func (m *ui) turnLines(t *turn, width int, last bool) []string {
	rule := func(label string) string {
		return m.st.separator.Render(label + strings.Repeat("─", max(0, width-ansi.StringWidth(label))))
	}
	out := []string{rule(fmt.Sprintf("── step %d ", t.step))}
	th := strings.TrimSpace(t.thinking.String())
	an := strings.TrimSpace(t.answer.String())
	if th == "" && an == "" {
		if last && m.result == nil {
			out = append(out, m.st.faint.Render("waiting for the model…"))
		}
		return out
	}
	for _, l := range wrap(th, width) {
		out = append(out, m.st.thinking.Render(l))
	}
	if an != "" {
		out = append(out, rule("─ answer "))
		for _, l := range wrap(an, width) {
			out = append(out, m.st.answer.Render(l))
		}
	}
	return out
}

func (m *ui) elementLines(width int) ([]string, int) {
	if m.screen == nil {
		return []string{m.st.faint.Render("no screen yet")}, -1
	}
	target := -1
	var out []string
	if len(m.screen.Elements) == 0 {
		for _, l := range strings.Split(clean(m.screen.Prompt), "\n") {
			out = append(out, ansi.Truncate(l, width, "…"))
		}
		if len(out) == 0 || (len(out) == 1 && out[0] == "") {
			out = []string{m.st.faint.Render("no elements")}
		}
		return out, -1
	}
	for _, e := range m.screen.Elements {
		mark := "  "
		isTarget := m.target != nil && *m.target == e.Index
		if isTarget {
			mark = "▶ "
		}
		label := clean(strings.ReplaceAll(e.Label, "\n", " "))
		if e.State != "" {
			label += " (" + e.State + ")"
		}
		kind := clean(e.Kind)
		if isTarget {
			text := fmt.Sprintf("%s%2d %s %s", mark, e.Index, kind, label)
			text = ansi.Truncate(text, width, "…")
			text += strings.Repeat(" ", max(0, width-ansi.StringWidth(text)))
			target = len(out)
			out = append(out, m.st.target.Render(text))
			continue
		}
		text := mark + m.st.index.Render(fmt.Sprintf("%2d", e.Index)) + " "
		if kind != "" {
			text += m.st.kind.Render(kind) + " "
		}
		text += label
		out = append(out, ansi.Truncate(text, width, "…"))
	}
	return out, target
}

func (m *ui) timelineLines(width int) []string {
	if len(m.timeline) == 0 {
		return []string{m.st.faint.Render("no steps yet")}
	}
	var out []string
	sub := func(mark string, st func(...string) string, text string) {
		for i, l := range wrap(clean(text), max(1, width-5)) {
			if i == 0 {
				out = append(out, "   "+st(mark+" "+l))
			} else {
				out = append(out, "     "+st(l))
			}
		}
	}
	for _, e := range m.timeline {
		num := "  ·"
		if e.step > 0 {
			num = fmt.Sprintf("%3d", e.step)
		}
		var status string
		switch {
		case e.err != "":
			status = m.st.bad.Render("✗ failed")
		case e.changed != nil && *e.changed:
			status = m.st.good.Render("→ changed")
		case e.changed != nil:
			status = m.st.warn.Render("→ no change")
		case e.outcome == loop.OutcomeSkipped:
			status = m.st.warn.Render("– skipped")
		case e.acted:
			status = m.st.good.Render("✓ done")
		case e.call != nil && m.result == nil:
			status = m.st.faint.Render("(pending)")
		}
		// The call gives way to the status when the row is too narrow:
		// whether the screen changed matters more than the call's tail.
		room := width - len(num) - 1
		if status != "" {
			room -= ansi.StringWidth(status) + 1
		}
		head := m.st.stepNum.Render(num)
		switch {
		case e.call != nil:
			head += " " + m.st.call.Render(ansi.Truncate(clean(e.call.String()), max(1, room), "…"))
		case len(e.parseErrs) > 0:
			head += " " + m.st.bad.Render("no usable call")
		case e.step > 0 && e.step == m.step && m.result == nil:
			head += " " + m.st.faint.Render("thinking…")
		}
		if status != "" {
			head += " " + status
		}
		if e.call != nil || e.step > 0 {
			out = append(out, head)
		}
		if e.vote != "" {
			sub("≡", m.st.faint.Render, "vote: "+e.vote)
		}
		if len(e.recoveries) > 0 {
			sub("↻", m.st.recovery.Render, "recovered: "+strings.Join(e.recoveries, ", "))
		}
		for _, pe := range e.parseErrs {
			sub("✗", m.st.bad.Render, "parse: "+pe)
		}
		// The wait is over once the call ran or was skipped (an action
		// event), a later step began or the run ended.
		waitWord := "waiting for approval: "
		if e.acted || e.step < m.step || m.result != nil {
			waitWord = "waited for approval: "
		}
		for _, n := range e.notes {
			sub("?", m.st.reason.Render, waitWord+n)
		}
		if e.err != "" {
			sub("✗", m.st.errMsg.Render, e.err)
		}
		for _, w := range e.warnings {
			sub("⚠", m.st.warn.Render, w)
		}
	}
	return out
}

func (m *ui) header() []string {
	w := m.width
	left := m.st.title.Render("droidgo") + " "
	if m.task != "" {
		left += m.st.task.Render(clean(strings.ReplaceAll(m.task, "\n", " ")))
	}
	var badges []string
	if m.opts.Replay {
		badges = append(badges, m.st.badge.Render("REPLAY"))
	}
	if m.stepMode {
		badges = append(badges, m.st.badge.Render("STEP"))
	}
	switch {
	case m.result != nil && m.result.Success:
		badges = append(badges, m.st.good.Render("DONE"))
	case m.result != nil:
		badges = append(badges, m.st.bad.Render("FAILED"))
	case m.stopping:
		badges = append(badges, m.st.badgeAlert.Render("STOPPING"))
	case m.paused:
		badges = append(badges, m.st.badgeAlert.Render("PAUSED"))
	case len(m.approvals) > 0:
		badges = append(badges, m.st.badgeAlert.Render("WAITING"))
	default:
		badges = append(badges, m.st.badge.Render("RUNNING"))
	}
	right := strings.Join(badges, " ")
	rw := ansi.StringWidth(right)
	left = ansi.Truncate(left, max(0, w-rw-1), "…")
	line1 := left + strings.Repeat(" ", max(1, w-ansi.StringWidth(left)-rw)) + right

	var parts []string
	if m.device != "" {
		parts = append(parts, "device "+clean(m.device))
	}
	if m.modelName != "" {
		parts = append(parts, "model "+clean(m.modelName))
	}
	stepText := "step " + fmt.Sprint(m.step)
	if m.maxSteps > 0 {
		stepText += fmt.Sprintf("/%d", m.maxSteps)
	}
	parts = append(parts, stepText)
	if tps, live := m.rate(); tps > 0 {
		mark := ""
		if live {
			mark = "~"
		}
		parts = append(parts, fmt.Sprintf("%s%.1f tok/s", mark, tps))
	} else {
		parts = append(parts, "– tok/s")
	}
	parts = append(parts, m.elapsed())
	if m.engine != "" {
		// How the model runs (its threads, cores, kernels): last, so a
		// narrow terminal cuts it first.
		parts = append(parts, clean(m.engine))
	}
	line2 := m.st.status.Render(ansi.Truncate(strings.Join(parts, " · "), max(0, w), "…"))
	if !m.many() {
		return []string{line1, line2}
	}
	return []string{line1, line2, m.phonesLine()}
}

// phonesLine is one line with every phone's state, the one on screen
// marked: "phones ▸1 sim:wifi step 3/20 · 2 sim:alarm ✔ done".
func (m *ui) phonesLine() string {
	parts := []string{m.st.status.Render("phones")}
	for i, p := range m.phones {
		state := fmt.Sprintf("step %d", p.step)
		if p.maxSteps > 0 {
			state += fmt.Sprintf("/%d", p.maxSteps)
		}
		switch {
		case p.result != nil && p.result.Success:
			state = m.st.good.Render("✔ done")
		case p.result != nil:
			state = m.st.bad.Render("✘ failed")
		case len(p.approvals) > 0:
			state = m.st.badgeAlert.Render("⏸ waits for approval")
		}
		label := fmt.Sprintf("%d %s", i+1, clean(p.device))
		if p == m.phone {
			label = m.st.badge.Render("▸" + label)
		}
		parts = append(parts, label+" "+state)
	}
	return strings.Join(parts, "  ")
}

func (m *ui) elapsed() string {
	var d time.Duration
	switch {
	case m.result != nil && m.result.Seconds > 0:
		d = time.Duration(m.result.Seconds * float64(time.Second))
	case m.result != nil:
		d = m.finishedAt.Sub(m.started)
	default:
		d = m.now.Sub(m.started)
	}
	d = max(0, d).Round(time.Second)
	s := int(d / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// footer is the status area (approval prompt, edit line, result or message)
// and the help line.
func (m *ui) footer() []string {
	w := m.width
	var out []string
	switch {
	case m.editing && len(m.approvals) > 0:
		out = append(out, m.st.prompt.Render("Edit the call (name(key=value, …) or JSON); enter runs it, esc goes back:"))
		out = append(out, m.input.View())
		if m.editErr != "" {
			out = append(out, m.st.errMsg.Render("✗ "+clean(m.editErr)))
		}
	case len(m.approvals) > 0:
		a := m.approvals[0].req
		q := "⏸ Approve " + clean(a.Call.String())
		if a.Label != "" {
			q += fmt.Sprintf(" on %q", clean(a.Label))
		}
		q += "?"
		out = append(out, m.st.prompt.Render(q))
		why := "step mode: every action waits for you"
		if a.Why == loop.ApprovalSensitive {
			why = "sensitive"
			if a.Reason != "" {
				why += ": " + clean(a.Reason)
			}
		}
		out = append(out, m.st.reason.Render(why))
	case m.result != nil:
		r := m.result
		var s string
		text := r.Summary
		if text == "" {
			text = r.Reason
		}
		if r.Success {
			s = m.st.good.Render("✔ Done") + fmt.Sprintf(" in %s, %.1f s: %s", loop.Steps(r.Steps), r.Seconds, clean(text))
		} else {
			s = m.st.bad.Render("✘ Failed") + fmt.Sprintf(" after %s, %.1f s: %s", loop.Steps(r.Steps), r.Seconds, clean(text))
			if r.Summary != "" && r.Reason != "" {
				s += " (" + clean(r.Reason) + ")"
			}
		}
		lines := strings.Split(ansi.Wrap(s, max(1, w), ""), "\n")
		if len(lines) > 2 {
			lines = lines[:2]
		}
		out = append(out, lines...)
	default:
		out = append(out, m.st.status.Render(clean(m.message)))
	}
	m.help.SetWidth(w)
	out = append(out, strings.Split(m.help.View(m.helpKeys()), "\n")...)
	return out
}

// helpKeys are the keys that apply right now.
func (m *ui) helpKeys() helpKeys {
	k := m.keys
	pause := k.Pause
	if m.paused {
		pause.SetHelp("p", "resume")
	}
	step := k.StepMode
	if m.stepMode {
		step.SetHelp("s", "step mode off")
	}
	scroll := key.NewBinding(key.WithKeys("up"), key.WithHelp("↑↓/pgup/pgdn", "scroll"))
	quit := k.Quit
	if m.finished() {
		quit.SetHelp("q", "quit")
	} else {
		quit.SetHelp("q", "stop run")
	}
	switch {
	case m.editing:
		return helpKeys{short: []key.Binding{k.Apply, k.Cancel}, full: [][]key.Binding{{k.Apply, k.Cancel}}}
	}
	// Step mode can be switched whenever the loop asks about every call:
	// live runs (EveryCall), or one started with --step.
	step.SetEnabled(m.opts.StepMode || m.opts.EveryCall)
	if len(m.approvals) > 0 {
		b := []key.Binding{k.Approve, k.Skip, k.Edit, k.Abort, step, pause, quit}
		return helpKeys{short: b, full: [][]key.Binding{b}}
	}
	short := []key.Binding{pause, step, k.NextPane, scroll, quit, k.Help}
	if m.finished() {
		short = []key.Binding{k.NextPane, scroll, quit, k.Help}
	}
	full := [][]key.Binding{
		{pause, step, quit},
		{k.NextPane, k.PrevPane, k.Help},
		{k.Up, k.Down, k.PageUp, k.PageDown},
		{k.Top, k.Bottom},
	}
	if m.many() {
		short = append([]key.Binding{k.NextPhone}, short...)
		full = append(full, []key.Binding{k.NextPhone, k.PrevPhone})
	}
	return helpKeys{short: short, full: full}
}
