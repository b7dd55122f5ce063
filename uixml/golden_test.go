package uixml

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func realDumps(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/dumps/*.xml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dumps in testdata/dumps: %v", err)
	}
	return files
}

// TestGoldenPrompts renders every real dump and compares the prompt with
// testdata/golden/<dump>.txt; -update rewrites them. It also keeps a table
// of prompt sizes in testdata/golden/TOKENS.md.
func TestGoldenPrompts(t *testing.T) {
	var table strings.Builder
	table.WriteString("| dump | nodes | elements | prompt bytes | est. tokens |\n|---|---:|---:|---:|---:|\n")
	total := 0
	files := realDumps(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".xml")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		p := s.Prompt()
		tok := EstimateTokens(p)
		total += tok
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d |\n", name, len(s.Nodes), len(s.Elements), len(p), tok)
		checkGolden(t, filepath.Join("testdata/golden", name+".txt"), p)
	}
	fmt.Fprintf(&table, "\nAverage: %d estimated tokens per screen (EstimateTokens: ASCII bytes/4 + 1 per non-ASCII character).\n", total/len(files))
	checkGolden(t, "testdata/golden/TOKENS.md", table.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (run go test ./uixml -update)", path, err)
		return
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (run go test ./uixml -update and review the diff):\n--- got\n%s", path, got)
	}
}

// TestScanMatchesXMLQuery checks the fast scanner and the token stream
// against xmlquery, the reference, on every real dump and on the generated benchmark
// dump: same nodes, field by field.
func TestScanMatchesXMLQuery(t *testing.T) {
	inputs := map[string][]byte{"generated-1000": genDump(1000)}
	for _, f := range realDumps(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[filepath.Base(f)] = data
	}
	for name, data := range inputs {
		doc, err := clean(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fast := &builder{}
		if !fast.scan(doc) {
			t.Errorf("%s: the fast scanner gave up on a real dump", name)
			continue
		}
		ref, err := xmlqueryNodes(doc)
		if err != nil {
			t.Fatalf("%s: xmlquery: %v", name, err)
		}
		stream := &builder{}
		if err := stream.stream(doc); err != nil {
			t.Fatalf("%s: token stream: %v", name, err)
		}
		for _, got := range []struct {
			name string
			b    *builder
		}{{"scanner", fast}, {"stream", stream}} {
			if len(got.b.nodes) != len(ref.nodes) {
				t.Fatalf("%s: %d nodes from the %s, %d from xmlquery", name, len(got.b.nodes), got.name, len(ref.nodes))
			}
			for i := range ref.nodes {
				if !reflect.DeepEqual(got.b.nodes[i], ref.nodes[i]) {
					t.Fatalf("%s: node %d differs:\n%s %+v\nxmlquery %+v", name, i, got.name, got.b.nodes[i], ref.nodes[i])
				}
			}
			if got.b.rotation != ref.rotation {
				t.Errorf("%s: rotation %d from the %s vs %d", name, got.b.rotation, got.name, ref.rotation)
			}
		}
	}
}

// TestRealDumpsInvariants checks every real dump for properties the loop
// relies on.
func TestRealDumpsInvariants(t *testing.T) {
	for _, f := range realDumps(t) {
		data, _ := os.ReadFile(f)
		s, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkInvariants(t, f, s)
		if s.Width <= 0 || s.Height <= 0 {
			t.Errorf("%s: screen %dx%d", f, s.Width, s.Height)
		}
		if len(s.Elements) == 0 {
			// Only a screen with nothing to act on or read (an always-on
			// display, a game surface) may list nothing.
			for i, n := range s.Nodes {
				if !n.Hidden && area(s.clip(n.Bounds)) > 0 && (n.Clickable || n.Text != "" || n.Desc != "") {
					t.Errorf("%s: no elements, but node %d (%s %q) could be one", f, i, n.Class, n.Text+n.Desc)
					break
				}
			}
		}
		if s2, _ := Parse(data); s2.Prompt() != s.Prompt() || s2.Fingerprint() != s.Fingerprint() {
			t.Errorf("%s: two parses of the same bytes differ", f)
		}
	}
}

// checkInvariants verifies the element list is consistent with the nodes.
func checkInvariants(t *testing.T, name string, s *Screen) {
	t.Helper()
	seen := map[int]bool{}
	for k, e := range s.Elements {
		if e.Index != k {
			t.Fatalf("%s: element %d has index %d", name, k, e.Index)
		}
		if e.Node < 0 || e.Node >= len(s.Nodes) {
			t.Fatalf("%s: element %d points at node %d of %d", name, k, e.Node, len(s.Nodes))
		}
		if s.Nodes[e.Node].Index != k {
			t.Fatalf("%s: node %d of element %d has Index %d", name, e.Node, k, s.Nodes[e.Node].Index)
		}
		if seen[e.Node] {
			t.Fatalf("%s: node %d listed twice", name, e.Node)
		}
		seen[e.Node] = true
		if e.X < 0 || e.Y < 0 || e.X > s.Width || e.Y > s.Height {
			t.Errorf("%s: element %d taps off screen at %d,%d (%dx%d)", name, k, e.X, e.Y, s.Width, s.Height)
		}
		if e.Kind == "" {
			t.Errorf("%s: element %d has no kind", name, k)
		}
		if e.Row >= len(s.Elements) || e.Row == k {
			t.Errorf("%s: element %d has row %d", name, k, e.Row)
		}
	}
	shown := 0
	for i, n := range s.Nodes {
		if n.Index >= 0 {
			shown++
			if n.Index >= len(s.Elements) || s.Elements[n.Index].Node != i {
				t.Fatalf("%s: node %d claims element %d", name, i, n.Index)
			}
		}
		if n.Parent >= i || n.Parent < -1 {
			t.Fatalf("%s: node %d has parent %d", name, i, n.Parent)
		}
	}
	if shown != len(s.Elements) {
		t.Fatalf("%s: %d nodes shown, %d elements", name, shown, len(s.Elements))
	}
	if s.Truncated && !strings.Contains(s.Prompt(), "incomplete") {
		t.Errorf("%s: truncated screen without a note in the prompt", name)
	}
}

// FuzzScanMatchesXMLQuery checks that whatever the fast scanner accepts,
// xmlquery and the token stream read into the same nodes.
func FuzzScanMatchesXMLQuery(f *testing.F) {
	f.Add([]byte(`<hierarchy rotation="1"><node text="a &amp; b" class="x" bounds="[0,0][5,5]"><node/></node></hierarchy>`))
	f.Add([]byte(`<hierarchy><node text='q' resource-id="p:id/x" clickable="true" bounds="[-1,2][3,4]"/><!-- c --></hierarchy>`))
	f.Add([]byte("<hierarchy>\r\n  <node text=\"a\r\nb\" bounds=\"[0,0][1,1]\" />\r\n</hierarchy>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := clean(data)
		if err != nil {
			return
		}
		fast := &builder{}
		if !fast.scan(doc) || fast.tooDeep {
			return
		}
		ref, err := xmlqueryNodes(doc)
		if err != nil {
			t.Fatalf("scanner accepted what xmlquery rejects (%v): %q", err, doc)
		}
		stream := &builder{}
		if err := stream.stream(doc); err != nil {
			t.Fatalf("scanner accepted what the token stream rejects (%v): %q", err, doc)
		}
		if !reflect.DeepEqual(fast.nodes, stream.nodes) && !(len(fast.nodes) == 0 && len(stream.nodes) == 0) {
			t.Fatalf("nodes differ for %q:\nscan   %+v\nstream %+v", doc, fast.nodes, stream.nodes)
		}
		if !reflect.DeepEqual(fast.nodes, ref.nodes) && !(len(fast.nodes) == 0 && len(ref.nodes) == 0) {
			t.Fatalf("nodes differ for %q:\nscan     %+v\nxmlquery %+v", doc, fast.nodes, ref.nodes)
		}
		if fast.rotation != ref.rotation || fast.width != ref.width || fast.height != ref.height {
			t.Fatalf("hierarchy attributes differ for %q", doc)
		}
	})
}

// TestRealDumpsCut cuts every real dump at several points: each cut must
// give the nodes before it, Truncated, and an error wrapping ErrTruncated.
func TestRealDumpsCut(t *testing.T) {
	for _, f := range realDumps(t) {
		data, _ := os.ReadFile(f)
		whole, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < 10; k++ {
			cut := len(data) * k / 10
			s, err := Parse(data[:cut])
			if !errors.Is(err, ErrTruncated) || s == nil || !s.Truncated {
				t.Errorf("%s cut at %d/10: err %v", f, k, err)
				continue
			}
			checkInvariants(t, f, s)
			if len(s.Nodes) > len(whole.Nodes) {
				t.Errorf("%s cut at %d/10: %d nodes, more than the whole %d", f, k, len(s.Nodes), len(whole.Nodes))
			}
			for i := range s.Nodes {
				if s.Nodes[i].Class != whole.Nodes[i].Class || s.Nodes[i].Bounds != whole.Nodes[i].Bounds {
					t.Errorf("%s cut at %d/10: node %d differs from the whole dump's", f, k, i)
					break
				}
			}
		}
	}
}

// TestWriteJSON checks that the streamed JSON is byte for byte what
// encoding/json makes of Screen.JSON, on every real dump, with and without
// all the nodes.
func TestWriteJSON(t *testing.T) {
	for _, f := range realDumps(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, all := range []bool{false, true} {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s.JSON(all)); err != nil {
				t.Fatal(err)
			}
			if err := s.WriteJSON(&got, all); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("%s all=%v: WriteJSON differs:\n%s\nwant\n%s", f, all, got.String(), want.String())
			}
		}
	}
}

// TestJSONFieldsAreTheNodesOwn checks every attribute field of `screen
// --json --all` against an independent parse (xmlquery) of every real
// dump: a row that absorbed a switch must not report the switch's
// checkable/checked as its own.
func TestJSONFieldsAreTheNodesOwn(t *testing.T) {
	for _, f := range realDumps(t) {
		data, _ := os.ReadFile(f)
		s, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := clean(data)
		ref, err := xmlqueryNodes(doc)
		if err != nil {
			t.Fatal(err)
		}
		els := s.JSON(true).Elements
		if len(els) != len(ref.nodes) {
			t.Fatalf("%s: %d nodes, xmlquery %d", f, len(els), len(ref.nodes))
		}
		for i, e := range els {
			n := ref.nodes[i]
			got := [...]any{e.Text, e.Desc, e.ResourceID, e.Class, e.Package, e.Clickable, e.LongClickable, e.Checkable, e.Checked, e.Scrollable, e.Focusable, e.Focused, e.Enabled, e.Selected, e.Password}
			want := [...]any{n.Text, n.Desc, n.ResourceID, n.Class, n.Package, n.Clickable, n.LongClickable, n.Checkable, n.Checked, n.Scrollable, n.Focusable, n.Focused, n.Enabled, n.Selected, n.Password}
			if got != want {
				t.Errorf("%s: node %d: JSON %v, its own attributes %v", filepath.Base(f), i, got, want)
			}
		}
	}
}
