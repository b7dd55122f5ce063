package eval

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/droidgo/droidgo/internal/termsafe"
)

// WriteSummary prints the totals and the failed runs for a terminal.
func WriteSummary(w io.Writer, r *Results) {
	s := r.Summary
	fmt.Fprintf(w, "model %s\n", termsafe.Line(r.Model))
	if s.Tasks.N+s.Tasks.NotRun > 0 {
		fmt.Fprintf(w, "tasks:     %d/%d succeeded (%.0f%%, 95%% CI %.0f-%.0f%%)", s.Tasks.Success, s.Tasks.N,
			100*s.Tasks.Rate, 100*s.Tasks.CI95[0], 100*s.Tasks.CI95[1])
		if s.Tasks.NotRun > 0 {
			fmt.Fprintf(w, ", %d not run", s.Tasks.NotRun)
		}
		fmt.Fprintln(w)
	}
	if s.Decisions.N+s.Decisions.NotRun > 0 {
		fmt.Fprintf(w, "decisions: %d/%d correct tool, %d/%d fully correct action", s.Decisions.ToolCorrect, s.Decisions.N,
			s.Decisions.ActionCorrect, s.Decisions.N)
		if s.Decisions.NotRun > 0 {
			fmt.Fprintf(w, ", %d not run", s.Decisions.NotRun)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	header := false
	for _, t := range r.Tasks {
		if t.Success {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nFAILED TASK\tSTEPS\tREASON")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", termsafe.Line(runName(Pair{Suite: t.Suite, Name: t.Name, Repeat: t.Repeat})), t.Steps, termsafe.Line(shorten(taskOutcome(t)+": "+t.Reason, 120)))
	}
	tw.Flush()
}

func shorten(s string, n int) string {
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	return s
}

// bar is one bar of the report's chart.
type bar struct {
	Label      string
	Success, N int
	Pct        float64
}

// reportData is what the report template shows.
type reportData struct {
	R            *Results
	ByApp, ByDif []bar
	Tasks        []TaskResult
	Decisions    []DecisionResult
	TaskPct      float64
	ToolPct      float64
	ActPct       float64
}

func bars(r *Results, key func(TaskResult) string) []bar {
	m := map[string]*bar{}
	for _, t := range r.Tasks {
		if t.NotRun {
			continue
		}
		k := key(t)
		b := m[k]
		if b == nil {
			b = &bar{Label: k}
			m[k] = b
		}
		b.N++
		if t.Success {
			b.Success++
		}
	}
	var out []bar
	for _, b := range m {
		b.Pct = 100 * float64(b.Success) / float64(b.N)
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

var difficultyOrder = map[string]string{"easy": "1 easy", "medium": "2 medium", "hard": "3 hard"}

// WriteHTML writes report.html: one page with no external resources.
func WriteHTML(w io.Writer, r *Results) error {
	d := reportData{R: r, Tasks: r.Tasks, Decisions: r.Decisions,
		TaskPct: 100 * r.Summary.Tasks.Rate, ToolPct: 100 * r.Summary.Decisions.ToolRate, ActPct: 100 * r.Summary.Decisions.ActionRate}
	d.ByApp = bars(r, func(t TaskResult) string {
		if t.App == "" {
			return "other"
		}
		return t.App
	})
	d.ByDif = bars(r, func(t TaskResult) string {
		if k, ok := difficultyOrder[t.Difficulty]; ok {
			return k
		}
		return "4 unrated"
	})
	for i := range d.ByDif {
		_, d.ByDif[i].Label, _ = strings.Cut(d.ByDif[i].Label, " ")
	}
	return reportTmpl.Execute(w, d)
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(v float64) string { return fmt.Sprintf("%.0f%%", v) },
	"sec": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"mul": func(a, b float64) float64 { return a * b },
	// Model text can be long; the transcript has all of it.
	"short": func(s string) string { return shorten(s, 300) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>droidgo eval · {{.R.Model}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f23;background:#fff;max-width:1100px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.sub{color:#586069}
.cards{display:flex;gap:16px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;min-width:200px}
.big{font-size:28px;font-weight:600}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eaecef;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.nr{color:#9a6700;font-weight:600}
.charts{display:flex;gap:32px;flex-wrap:wrap}
.chart{flex:1;min-width:320px}
.row{display:flex;align-items:center;gap:8px;margin:3px 0}
.row .l{width:110px;text-align:right;color:#24292f}
.row .t{flex:1;background:#eaeef2;height:16px;border-radius:3px;overflow:hidden}
.row .f{background:#2da44e;height:16px}
.row .v{width:90px;color:#586069;font-variant-numeric:tabular-nums}
.reason{color:#586069;max-width:420px;overflow-wrap:anywhere}
code{font-size:12px}
</style></head><body>
<h1>droidgo eval</h1>
<div class="sub">model <b id="model">{{.R.Model}}</b> · suites {{range $i, $s := .R.Config.Suites}}{{if $i}}, {{end}}{{$s}}{{end}} · max {{.R.Config.MaxSteps}} steps · thinking {{if .R.Config.Think}}on, budget {{.R.Config.ThinkBudget}}{{else}}off{{end}} · parallel {{.R.Config.Parallel}} · repeat {{.R.Config.Repeat}}</div>
<div class="cards">
{{with .R.Summary.Tasks}}<div class="card" id="summary-tasks"><div>Tasks</div><div class="big">{{.Success}}/{{.N}}</div><div>{{pct (mul .Rate 100)}} success, 95% CI {{pct (mul (index .CI95 0) 100)}}–{{pct (mul (index .CI95 1) 100)}}{{if .NotRun}} · {{.NotRun}} not run{{end}}</div></div>{{end}}
{{with .R.Summary.Decisions}}<div class="card" id="summary-decisions"><div>Decisions</div><div class="big">{{.ActionCorrect}}/{{.N}}</div><div>fully correct action · {{.ToolCorrect}}/{{.N}} correct tool{{if .NotRun}} · {{.NotRun}} not run{{end}}</div></div>{{end}}
</div>
{{if .ByApp}}<h2>Success by app and difficulty</h2>
<div class="charts">
<div class="chart" id="chart-app">{{range .ByApp}}<div class="row"><span class="l">{{.Label}}</span><span class="t"><span class="f" style="width:{{.Pct}}%;display:block"></span></span><span class="v">{{.Success}}/{{.N}}</span></div>{{end}}</div>
<div class="chart" id="chart-difficulty">{{range .ByDif}}<div class="row"><span class="l">{{.Label}}</span><span class="t"><span class="f" style="width:{{.Pct}}%;display:block"></span></span><span class="v">{{.Success}}/{{.N}}</span></div>{{end}}</div>
</div>{{end}}
{{if .Tasks}}<h2>Tasks</h2>
<table id="tasks"><tr><th>task</th><th>app</th><th>difficulty</th><th>result</th><th class="num">steps</th><th class="num">person</th><th class="num">seconds</th><th class="num">tokens in/out</th><th>reason</th><th>transcript</th></tr>
{{range .Tasks}}<tr><td><b>{{.Suite}}/{{.Name}}</b>{{if gt .Repeat 1}} #{{.Repeat}}{{end}}<br><span class="sub">{{.Task}}</span></td><td>{{.App}}</td><td>{{.Difficulty}}</td>
<td>{{if .NotRun}}<span class="nr">not run</span>{{else if .Success}}<span class="ok">success</span>{{else}}<span class="bad">failure</span>{{end}}</td>
<td class="num">{{.Steps}}</td><td class="num">{{if .HumanSteps}}{{.HumanSteps}}{{end}}</td><td class="num">{{sec .Seconds}}</td><td class="num">{{.PromptTokens}}/{{.GeneratedTokens}}</td>
<td class="reason">{{short .Reason}}{{if .Summary}}<br>summary: “{{short .Summary}}”{{end}}</td>
<td>{{if .Recording}}<a href="{{.Recording}}.txt">transcript</a> · <a href="{{.Recording}}">recording</a>{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Decisions}}<h2>Decisions</h2>
<table id="decisions"><tr><th>case</th><th>result</th><th>call</th><th class="num">seconds</th></tr>
{{range .Decisions}}<tr><td><b>{{.Suite}}/{{.Name}}</b>{{if gt .Repeat 1}} #{{.Repeat}}{{end}}<br><span class="sub">{{.Task}}</span></td>
<td>{{if .NotRun}}<span class="nr">not run</span>{{else if .ActionCorrect}}<span class="ok">correct</span>{{else if .ToolCorrect}}<span class="bad">wrong action</span>{{else}}<span class="bad">wrong tool</span>{{end}}</td>
<td>{{if .Call}}<code>{{short .Call.String}}</code>{{else}}<span class="reason">{{short .Reason}}</span>{{end}}</td><td class="num">{{sec .Seconds}}</td></tr>
{{end}}</table>{{end}}
<p class="sub">Recordings play back with <code>droidgo replay FILE.jsonl</code>.</p>
</body></html>
`))
