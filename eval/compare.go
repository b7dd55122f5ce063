package eval

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/droidgo/droidgo/internal/termsafe"
)

// Comparison is two evaluations side by side.
type Comparison struct {
	A, B      string // the model names
	Tasks     []Pair `json:"tasks"`
	Decisions []Pair `json:"decisions"`
	// TaskTest and DecisionTest are the paired tests on what both ran.
	TaskTest     PairedTest `json:"task_test"`
	DecisionTest PairedTest `json:"decision_test"`
	// SummaryA and SummaryB are the summaries of each file.
	SummaryA Summary `json:"summary_a"`
	SummaryB Summary `json:"summary_b"`
}

// Pair is one task run (or decision) in both files. A and B are "success",
// "failure" or "not run" ("correct", "wrong action", "wrong tool" for a
// decision), "" when the file does not have it.
type Pair struct {
	Suite   string `json:"suite"`
	Name    string `json:"name"`
	Repeat  int    `json:"repeat"`
	A       string `json:"a"`
	B       string `json:"b"`
	Changed bool   `json:"changed"`
}

// PairedTest is an exact McNemar test (a two-sided sign test on the pairs
// whose outcomes differ).
type PairedTest struct {
	Paired int `json:"paired"` // items both ran
	// OnlyA: succeeded in A, not in B; OnlyB the reverse.
	OnlyA int     `json:"only_a"`
	OnlyB int     `json:"only_b"`
	P     float64 `json:"p"`
	// Significant is P < 0.05.
	Significant bool `json:"significant"`
}

// McNemar is the exact two-sided p-value of b against c discordant pairs:
// under "no difference" each discordant pair goes either way with
// probability 1/2.
func McNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// Sum binomial(n, i)/2^n for i <= k in log space, so large n does
	// not overflow.
	sum := 0.0
	for i := 0; i <= k; i++ {
		lg := lchoose(n, i) - float64(n)*math.Ln2
		sum += math.Exp(lg)
	}
	return math.Min(1, 2*sum)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

type key struct {
	suite, name string
	repeat      int
}

// verdict is what a comparison needs of one run: how it ended, in words,
// whether it ran, and whether it counts as a success (a task's success,
// a decision's fully correct action).
type verdict struct {
	label   string
	ran, ok bool
}

// run is a task run or a decision, as Compare pairs them.
type run interface {
	key() key
	verdict() verdict
}

func (t TaskResult) key() key         { return key{t.Suite, t.Name, t.Repeat} }
func (t TaskResult) verdict() verdict { return verdict{taskOutcome(t), !t.NotRun, t.Success} }

func (d DecisionResult) key() key { return key{d.Suite, d.Name, d.Repeat} }
func (d DecisionResult) verdict() verdict {
	return verdict{decisionOutcome(d), !d.NotRun, d.ActionCorrect}
}

// Compare pairs the runs of a and b by suite, name and repeat.
func Compare(a, b *Results) *Comparison {
	c := &Comparison{A: a.Model, B: b.Model, SummaryA: a.Summary, SummaryB: b.Summary}
	c.Tasks, c.TaskTest = pairRuns(a.Tasks, b.Tasks)
	c.Decisions, c.DecisionTest = pairRuns(a.Decisions, b.Decisions)
	return c
}

// pairRuns pairs the runs of a and b by suite, name and repeat, in that
// order, and tests the pairs both ran.
func pairRuns[R run](a, b []R) ([]Pair, PairedTest) {
	ra, rb := map[key]R{}, map[key]R{}
	var keys []key
	for _, r := range a {
		k := r.key()
		ra[k] = r
		keys = append(keys, k)
	}
	for _, r := range b {
		k := r.key()
		if _, ok := ra[k]; !ok {
			keys = append(keys, k)
		}
		rb[k] = r
	}
	sortKeys(keys)
	var pairs []Pair
	var test PairedTest
	for _, k := range keys {
		x, okA := ra[k]
		y, okB := rb[k]
		p := Pair{Suite: k.suite, Name: k.name, Repeat: k.repeat}
		var va, vb verdict
		if okA {
			va = x.verdict()
			p.A = va.label
		}
		if okB {
			vb = y.verdict()
			p.B = vb.label
		}
		if va.ran && vb.ran {
			test.Paired++
			switch {
			case va.ok && !vb.ok:
				test.OnlyA++
			case vb.ok && !va.ok:
				test.OnlyB++
			}
		}
		p.Changed = p.A != p.B
		pairs = append(pairs, p)
	}
	pv := McNemar(test.OnlyA, test.OnlyB)
	test.P, test.Significant = round(pv), pv < 0.05
	return pairs, test
}

func sortKeys(keys []key) {
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].suite != keys[j].suite {
			return keys[i].suite < keys[j].suite
		}
		if keys[i].name != keys[j].name {
			return keys[i].name < keys[j].name
		}
		return keys[i].repeat < keys[j].repeat
	})
}

func taskOutcome(t TaskResult) string {
	switch {
	case t.NotRun:
		return "not run"
	case t.Success:
		return "success"
	}
	return "failure"
}

func decisionOutcome(d DecisionResult) string {
	switch {
	case d.NotRun:
		return "not run"
	case d.ActionCorrect:
		return "correct"
	case d.ToolCorrect:
		return "wrong action"
	}
	return "wrong tool"
}

// WriteText prints the comparison for a terminal. Model names come from
// files and are cleaned by the caller's writer policy: here they are
// quoted when they hold control characters.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", termsafe.Line(c.A), termsafe.Line(c.B))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, table := range []struct {
		head  string
		pairs []Pair
	}{{"TASK", c.Tasks}, {"DECISION", c.Decisions}} {
		if len(table.pairs) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\tA\tB\t\n", table.head)
		for _, p := range table.pairs {
			mark := ""
			if p.Changed {
				mark = "changed"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termsafe.Line(runName(p)), orDash(p.A), orDash(p.B), mark)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	sa, sb := c.SummaryA, c.SummaryB
	fmt.Fprintf(w, "tasks:     A %d/%d (%.0f%%)  B %d/%d (%.0f%%)\n", sa.Tasks.Success, sa.Tasks.N, 100*sa.Tasks.Rate, sb.Tasks.Success, sb.Tasks.N, 100*sb.Tasks.Rate)
	fmt.Fprintf(w, "decisions: A %d/%d correct  B %d/%d correct\n", sa.Decisions.ActionCorrect, sa.Decisions.N, sb.Decisions.ActionCorrect, sb.Decisions.N)
	var changed []string
	for _, p := range append(append([]Pair{}, c.Tasks...), c.Decisions...) {
		if p.Changed {
			changed = append(changed, fmt.Sprintf("  %s: %s -> %s", termsafe.Line(runName(p)), orDash(p.A), orDash(p.B)))
		}
	}
	if len(changed) > 0 {
		fmt.Fprintf(w, "\nchanged outcome (%d):\n%s\n", len(changed), strings.Join(changed, "\n"))
	}
	fmt.Fprintln(w)
	for _, t := range []struct {
		what string
		pt   PairedTest
	}{{"tasks", c.TaskTest}, {"decisions", c.DecisionTest}} {
		if t.pt.Paired == 0 {
			continue
		}
		verdict := "could be chance"
		if t.pt.Significant {
			verdict = "more than chance"
		}
		fmt.Fprintf(w, "%s: %d paired, %d better in A only, %d better in B only; exact McNemar p = %.4g: %s\n",
			t.what, t.pt.Paired, t.pt.OnlyA, t.pt.OnlyB, t.pt.P, verdict)
	}
}

func runName(p Pair) string {
	s := p.Suite + "/" + p.Name
	if p.Repeat > 1 {
		s += fmt.Sprintf(" #%d", p.Repeat)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
