package uixml

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"
)

// Fingerprint hashes the screen's structure and states for no-progress
// detection: classes, resource-ids, depths, check/select/enable/focus
// states and labels of the visible nodes, with churn (clock text, battery
// percentages, bare counters, the status bar) left out. Text typed into
// fields counts in full. Two dumps of an unchanged screen give the same
// value; toggling a switch, typing, scrolling or navigating changes it.
func (s *Screen) Fingerprint() string {
	h := fnv.New64a()
	var buf [8]byte
	num := func(v int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	str := func(v string) {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	num(s.Width)
	num(s.Height)
	num(s.Rotation)
	// statusDepth is the depth of the status bar subtree being skipped, or -1.
	statusDepth := -1
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if statusDepth >= 0 && n.Depth > statusDepth {
			continue
		}
		statusDepth = -1
		if isStatusBar(n) {
			statusDepth = n.Depth
			continue
		}
		if n.Hidden || area(s.clip(n.Bounds)) == 0 {
			continue
		}
		num(n.Depth)
		str(n.Class)
		str(n.ResourceID)
		var bits int
		for k, b := range []bool{n.Checked, n.Selected, n.Enabled, n.Focused, n.Checkable, n.Clickable, n.Scrollable} {
			if b {
				bits |= 1 << k
			}
		}
		num(bits)
		if isEditable(n) {
			str(n.Text)
		} else {
			str(stableText(n.Text))
		}
		str(stableText(n.Desc))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// isStatusBar recognises the system status bar, whose clock, battery and
// signal icons change on their own.
func isStatusBar(n *Node) bool {
	id := strings.ToLower(n.ResourceID)
	return n.Package == "com.android.systemui" &&
		(strings.Contains(id, "status_bar") || strings.Contains(id, "statusbar") || strings.HasSuffix(id, "/clock") || strings.Contains(id, "battery"))
}

// stableText removes churn from a label: numbers that are clock times
// ("12:45", "3:17 pm"), percentages ("90%", "90 percent"), temperatures
// ("28°"), ages ("5 min ago") become "#", and a label that is only a number
// (an unread counter, a timer) becomes "#". Other digits stay: a phone
// number being typed is progress.
func stableText(t string) string {
	t = cleanLabel(t)
	if !strings.ContainsAny(t, "0123456789") {
		return t
	}
	var b strings.Builder
	b.Grow(len(t))
	onlyNum := true
	for i := 0; i < len(t); {
		c := t[i]
		if c < '0' || c > '9' {
			if !(c == ' ' || c == ',' || c == '.' || c == '+' || c == '-') {
				onlyNum = false
			}
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if k := churnEnd(t, j); k > j {
			b.WriteByte('#')
			i = k
			continue
		}
		b.WriteString(t[i:j])
		i = j
	}
	if onlyNum {
		return "#"
	}
	return b.String()
}

// churnEnd looks at what follows a number ending at j and returns where its
// churn ends (a time's minutes, a unit), or j when the number is not churn.
func churnEnd(t string, j int) int {
	rest := t[j:]
	// "12:45", "12.45", "12:45:10", with optional am/pm.
	if len(rest) >= 3 && (rest[0] == ':' || rest[0] == '.') && isDigit(rest[1]) && isDigit(rest[2]) && (len(rest) == 3 || !isDigit(rest[3])) {
		k := j + 3
		if len(t) >= k+3 && t[k] == ':' && isDigit(t[k+1]) && isDigit(t[k+2]) {
			k += 3
		}
		r := strings.ToLower(t[k:])
		for _, suf := range []string{" am", " pm", "am", "pm", " a.m.", " p.m."} {
			if strings.HasPrefix(r, suf) {
				return k + len(suf)
			}
		}
		return k
	}
	sp := 0
	if strings.HasPrefix(rest, " ") {
		sp = 1
	}
	r := strings.ToLower(rest[sp:])
	for _, unit := range []string{"%", "°c", "°f", "°", "percent", "seconds", "second", "secs", "sec", "minutes", "minute", "mins", "min", "hours", "hour", "hrs", "hr", "days", "day", "s", "m", "h", "d"} {
		if strings.HasPrefix(r, unit) {
			k := sp + len(unit)
			if unit[0] >= 'a' && unit[0] <= 'z' && k < len(rest) && isLetter(rest[k]) {
				continue
			}
			if strings.HasPrefix(strings.ToLower(rest[k:]), " ago") {
				k += 4
			}
			return j + k
		}
	}
	return j
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
