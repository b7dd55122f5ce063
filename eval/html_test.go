package eval

import (
	"bytes"
	"context"
	"flag"
	"github.com/droidgo/droidgo/loop"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droidgo/droidgo/model"
)

var update = flag.Bool("update", false, "rewrite docs/eval-report.png")

// chromium finds Debian's chromium, or skips (fails with
// DROIDGO_REQUIRE_CHROMIUM set).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DROIDGO_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed and DROIDGO_REQUIRE_CHROMIUM is set (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

func headless(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// TestReportInChromium renders report.html of a real evaluation (the
// always-right model, undoing the already-done tasks) in headless Debian
// chromium: the page is self-contained, shows the summary, the chart and a
// row per task with a working transcript link, and paints the chart.
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	tasks := builtin(t, BuiltinTasks)
	decisions := builtin(t, BuiltinDecisions)
	right, undo := mustScripts(t, scriptsDir), mustScripts(t, filepath.Join("..", "fixtures", "scripts", "eval-undo"))
	ds := mustScripts(t, decisionScripts(t, decisions, false))
	models := func(ctx context.Context, kind, suite, name string) (model.Backend, func(), error) {
		if kind == "decision" {
			return ds(ctx, kind, suite, name)
		}
		if b, _, err := undo(ctx, kind, suite, name); err == nil {
			return b, nil, nil
		}
		return right(ctx, kind, suite, name)
	}
	out := t.TempDir()
	res := runSuites(t, []*Suite{tasks, decisions}, Options{Loop: loop.Config{Think: true, ThinkBudget: 1024}, Model: models, ModelName: "script:always-right+undo", Parallel: 4, Out: out,
		Config: Config{Suites: []string{"tasks", "decisions"}, Parallel: 4, Repeat: 1, MaxSteps: 20, Think: true, ThinkBudget: 1024}})
	var page bytes.Buffer
	if err := WriteHTML(&page, res); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	// Self-contained: nothing is fetched.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:|//)|@import|url\(`).FindString(html); m != "" {
		t.Errorf("the report refers to something outside it: %q", m)
	}
	file := filepath.Join(out, "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, "--dump-dom", "file://"+file))
	for _, want := range []string{`id="summary-tasks"`, `id="summary-decisions"`, `id="chart-app"`, `id="chart-difficulty"`, `id="tasks"`, `id="decisions"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page has no %s", want)
		}
	}
	s := res.Summary.Tasks
	if !strings.Contains(dom, ">"+strconv.Itoa(s.Success)+"/"+strconv.Itoa(s.N)+"<") {
		t.Errorf("the summary %d/%d is not on the page", s.Success, s.N)
	}
	links := regexp.MustCompile(`href="(runs/[^"]+\.txt)"`).FindAllStringSubmatch(dom, -1)
	if len(links) != len(res.Tasks) {
		t.Errorf("%d transcript links for %d task runs", len(links), len(res.Tasks))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(out, l[1])); err != nil {
			t.Errorf("transcript link %s: %v", l[1], err)
		}
	}
	for _, app := range []string{"Settings", "Contacts", "Messages", "Calculator", "Camera"} {
		if !strings.Contains(dom, `<span class="l">`+app+`</span>`) {
			t.Errorf("the chart has no bar for %s", app)
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	headless(t, bin, "--hide-scrollbars", "--window-size=1200,1500", "--screenshot="+shot, "file://"+file)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// The bars are painted in the report's green (#2da44e).
	if n := countColor(img, 0x2d, 0xa4, 0x4e); n < 2000 {
		t.Errorf("only %d pixels of the bars' green in the screenshot", n)
	}
	if *update {
		if err := os.WriteFile(filepath.Join("..", "docs", "eval-report.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func countColor(img image.Image, r, g, b uint8) int {
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if near(cr>>8, r) && near(cg>>8, g) && near(cb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { return a+6 >= uint32(b) && a <= uint32(b)+6 }
