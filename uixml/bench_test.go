package uixml

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// genDump builds a realistic dump of n nodes: a settings-like list of rows,
// each a clickable LinearLayout with a title, a summary and a switch.
func genDump(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">`)
	node := func(text, id, class string, clickable, checkable bool, x1, y1, x2, y2 int, open bool) {
		fmt.Fprintf(&b, `<node index="0" text="%s" resource-id="com.android.settings:id/%s" class="%s" package="com.android.settings" content-desc="" checkable="%t" checked="false" clickable="%t" enabled="true" focusable="%t" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[%d,%d][%d,%d]"`,
			text, id, class, checkable, clickable, clickable, x1, y1, x2, y2)
		if open {
			b.WriteString(">")
		} else {
			b.WriteString(" />")
		}
	}
	node("", "root", "android.widget.FrameLayout", false, false, 0, 0, 1080, 2400, true)
	count := 1
	for row := 0; count+5 <= n; row++ {
		y := 100 + (row%20)*110
		node("", "row", "android.widget.LinearLayout", true, false, 0, y, 1080, y+110, true)
		node("", "text_frame", "android.widget.RelativeLayout", false, false, 40, y, 800, y+110, true)
		node(fmt.Sprintf("Setting number %d", row), "title", "android.widget.TextView", false, false, 40, y+10, 700, y+60, false)
		node("A longer summary line that explains it", "summary", "android.widget.TextView", false, false, 40, y+60, 780, y+100, false)
		b.WriteString("</node>")
		node("", "switch_widget", "android.widget.Switch", false, true, 880, y+20, 1040, y+90, false)
		b.WriteString("</node>")
		count += 5
	}
	for ; count < n; count++ {
		node("x", "filler", "android.view.View", false, false, 0, 0, 10, 10, false)
	}
	b.WriteString("</node></hierarchy>")
	return []byte(b.String())
}

func BenchmarkParse1000(b *testing.B) {
	data := genDump(1000)
	s, err := Parse(data)
	if err != nil || len(s.Nodes) != 1000 {
		b.Fatalf("generated dump: %d nodes, err %v", len(s.Nodes), err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		s, _ := Parse(data)
		_ = s.Prompt()
		_ = s.Fingerprint()
	}
	reportCPU(b, start)
}

// reportCPU adds the process CPU time per operation: on a loaded machine
// wall time (ns/op) counts the time other processes held the CPU.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// BenchmarkParseReal parses and renders the largest real dump (187 nodes).
func BenchmarkParseReal(b *testing.B) {
	data, err := os.ReadFile("testdata/dumps/44-tablet-rot3-1600x2560-table.xml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		s, _ := Parse(data)
		_ = s.Prompt()
		_ = s.Fingerprint()
	}
	reportCPU(b, start)
}

// BenchmarkParse1000XMLQuery is the same work as BenchmarkParse1000 on the
// xmlquery reference parser, for comparison.
func BenchmarkParse1000XMLQuery(b *testing.B) {
	data := genDump(1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		doc, _ := clean(data)
		bl, _ := xmlqueryNodes(doc)
		s := &Screen{Nodes: bl.nodes, opts: Options{}.withDefaults()}
		s.size(0, 0)
		s.build()
		_ = s.Prompt()
		_ = s.Fingerprint()
	}
}
