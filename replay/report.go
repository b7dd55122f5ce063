package replay

import (
	"fmt"
	"strings"

	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/uixml"
)

// Report words why a replay stopped at step i of p for a person: the
// reason, the recorded element, the best candidates on the live screen
// with their scores and what differs, and what the screens show
// differently. The same facts travel typed in loop.ReplayStop.
func Report(p *Plan, i int, why string, rep *loop.ReplayStop) string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay stopped at step %d (recorded step %d, %s): %s", i+1, p.Number(i), p.Steps[i].Call.String(), why)
	if rep == nil {
		return b.String()
	}
	if rep.Recorded != nil {
		fmt.Fprintf(&b, "\n  recorded element: %s", describeFull(*rep.Recorded))
	}
	if len(rep.Candidates) > 0 {
		b.WriteString("\n  best on the live screen:")
		for k, c := range rep.Candidates {
			fmt.Fprintf(&b, "\n    %d. [%d] %q scores %.2f", k+1, c.Element, c.Label, c.Score)
			if d := diffs(c.Diffs, 3); d != "" {
				b.WriteString("; differs in " + d)
			}
		}
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(&b, "\n  the recorded screen showed, the live one does not: %s", quoteAll(rep.Missing))
	}
	if len(rep.Added) > 0 {
		fmt.Fprintf(&b, "\n  the live screen shows, the recorded one did not: %s", quoteAll(rep.Added))
	}
	return b.String()
}

// describe names an identity in a sentence: its label, else its text,
// description or resource-id.
func describe(id uixml.Identity) string {
	for _, s := range []string{id.Label, id.Text, id.Desc, id.Hint} {
		if s != "" {
			return fmt.Sprintf("%q", s)
		}
	}
	if id.ResourceID != "" {
		return id.ResourceID
	}
	if id.Class != "" {
		return "a " + id.Class
	}
	return "(an element without a name)"
}

// describeFull is describe with the class, resource-id, package and
// bounds.
func describeFull(id uixml.Identity) string {
	var parts []string
	for _, s := range []string{id.Class, id.ResourceID, id.Package} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if id.Screen[0] > 0 {
		b := id.Bounds
		parts = append(parts, fmt.Sprintf("[%d,%d][%d,%d] of %dx%d", b[0], b[1], b[2], b[3], id.Screen[0], id.Screen[1]))
	}
	if len(parts) == 0 {
		return describe(id)
	}
	return describe(id) + " (" + strings.Join(parts, ", ") + ")"
}

// diffs words at most n differences: `label "Internet" -> "Calls & SMS"`.
func diffs(ds []uixml.Diff, n int) string {
	var parts []string
	for _, d := range ds {
		if len(parts) == n {
			parts = append(parts, fmt.Sprintf("%d more", len(ds)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %q -> %q", d.Field, d.Recorded, d.Live))
	}
	return strings.Join(parts, ", ")
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
