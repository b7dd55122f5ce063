package uixml

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// row writes a settings row: a clickable LinearLayout with a title (and
// a switch when sw is not "").
func row(y int, title, sw string) string {
	s := fmt.Sprintf(`<node class="android.widget.LinearLayout" clickable="true" bounds="[0,%d][1080,%d]">`+
		`<node text=%q resource-id="android:id/title" class="android.widget.TextView" bounds="[66,%d][700,%d]"/>`, y, y+160, title, y+40, y+120)
	if sw != "" {
		s += fmt.Sprintf(`<node resource-id="android:id/switch_widget" class="android.widget.Switch" checkable="true" checked=%q bounds="[880,%d][1036,%d]"/>`, sw, y+20, y+140)
	}
	return s + `</node>`
}

// page writes a settings page of rows, on a w x h screen whose bounds are
// scaled from 1080x2400 by w/1080.
func page(w, h int, title string, rows ...string) *Screen {
	var b strings.Builder
	fmt.Fprintf(&b, `<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="com.android.settings" bounds="[0,0][1080,2400]">`)
	fmt.Fprintf(&b, `<node text=%q class="android.widget.TextView" package="com.android.settings" bounds="[66,300][900,420]"/>`, title)
	b.WriteString(`<node resource-id="com.android.settings:id/recycler_view" class="androidx.recyclerview.widget.RecyclerView" scrollable="true" bounds="[0,600][1080,2274]">`)
	for _, r := range rows {
		b.WriteString(r)
	}
	b.WriteString(`</node></node>`)
	b.WriteString(`<node resource-id="com.android.systemui:id/status_bar" class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,118]"><node text="9:41" resource-id="com.android.systemui:id/clock" class="android.widget.TextView" package="com.android.systemui" bounds="[40,20][200,100]"/></node>`)
	b.WriteString(`</hierarchy>`)
	xml := b.String()
	if w != 1080 {
		xml = scaleBounds(xml, w, 1080)
	}
	xml = strings.ReplaceAll(xml, `<node text`, `<node package="com.android.settings" text`)
	s, err := Parse([]byte(xml))
	if err != nil {
		panic(err)
	}
	_ = h
	return s
}

// scaleBounds multiplies every number of every bounds attribute by num/den.
func scaleBounds(xml string, num, den int) string {
	var out strings.Builder
	for {
		i := strings.Index(xml, `bounds="`)
		if i < 0 {
			out.WriteString(xml)
			return out.String()
		}
		i += len(`bounds="`)
		j := strings.IndexByte(xml[i:], '"') + i
		var r [4]int
		fmt.Sscanf(xml[i:j], "[%d,%d][%d,%d]", &r[0], &r[1], &r[2], &r[3])
		out.WriteString(xml[:i])
		fmt.Fprintf(&out, "[%d,%d][%d,%d]", r[0]*num/den, r[1]*num/den, r[2]*num/den, r[3]*num/den)
		xml = xml[j:]
	}
}

// element finds the element labelled label (and of kind, when not "").
func element(t *testing.T, s *Screen, label, kind string) int {
	t.Helper()
	for _, e := range s.Elements {
		if e.Label == label && (kind == "" || e.Kind == kind) {
			return e.Index
		}
	}
	t.Fatalf("no element %q (%s) in\n%s", label, kind, s.Prompt())
	return -1
}

// The recorded screen of the tests below: a Network & internet page.
func recorded() *Screen {
	return page(1080, 2400, "Network & internet",
		row(600, "Internet", ""), row(760, "Calls & SMS", ""), row(920, "Airplane mode", "false"), row(1080, "Hotspot", ""))
}

func TestMatchFindsTheRecordedElement(t *testing.T) {
	rec := recorded()
	// The recorded targets: a row by its title, and a switch.
	type target struct{ label, kind string }
	targets := []target{{"Internet", ""}, {"Hotspot", ""}, {"Airplane mode", "switch"}}
	tests := []struct {
		name string
		live *Screen
		// want is the label of the element that must be found; "" means
		// the target is gone and nothing may reach the threshold.
		want func(target) string
		// min is the lowest acceptable score of the found element.
		min float64
		// diffs are the fields that may differ.
		diffs []Field
	}{
		{"the same screen", recorded(), func(t target) string { return t.label }, 1, nil},
		{"a row inserted above", page(1080, 2400, "Network & internet",
			row(600, "SIM cards", ""), row(760, "Internet", ""), row(920, "Calls & SMS", ""), row(1080, "Airplane mode", "false"), row(1240, "Hotspot", "")),
			func(t target) string { return t.label }, 0.9, []Field{FieldPlace, FieldPosition}},
		{"rows in another order", page(1080, 2400, "Network & internet",
			row(600, "Hotspot", ""), row(760, "Airplane mode", "false"), row(920, "Calls & SMS", ""), row(1080, "Internet", "")),
			func(t target) string { return t.label }, 0.85, []Field{FieldPlace, FieldPosition}},
		{"a smaller screen", page(720, 1600, "Network & internet",
			row(600, "Internet", ""), row(760, "Calls & SMS", ""), row(920, "Airplane mode", "false"), row(1080, "Hotspot", "")),
			func(t target) string { return t.label }, 0.99, []Field{FieldPosition}},
		{"the switch in the other state", page(1080, 2400, "Network & internet",
			row(600, "Internet", ""), row(760, "Calls & SMS", ""), row(920, "Airplane mode", "true"), row(1080, "Hotspot", "")),
			func(t target) string { return t.label }, 1, []Field{FieldChecked}},
		{"the targets gone", page(1080, 2400, "Network & internet",
			row(600, "Calls & SMS", ""), row(760, "Data saver", ""), row(920, "VPN", "")),
			func(target) string { return "" }, 0, nil},
	}
	const threshold = 0.75
	for _, tc := range tests {
		for _, tg := range targets {
			t.Run(tc.name+"/"+tg.label, func(t *testing.T) {
				id, ok := rec.Identity(element(t, rec, tg.label, tg.kind))
				if !ok {
					t.Fatal("no identity")
				}
				cands := tc.live.Match(id)
				if len(cands) == 0 {
					t.Fatal("no candidates")
				}
				best := cands[0]
				want := tc.want(tg)
				if want == "" {
					if best.Score >= threshold {
						t.Fatalf("the target is gone, but %q scores %.3f (diffs %v)", best.Label, best.Score, best.Diffs)
					}
					return
				}
				wantIdx := element(t, tc.live, want, tg.kind)
				if best.Element != wantIdx {
					t.Fatalf("best is %d %q (%.3f), want %d %q; candidates %+v", best.Element, best.Label, best.Score, wantIdx, want, cands[:min(3, len(cands))])
				}
				if best.Score < tc.min {
					t.Errorf("score %.3f < %.3f; diffs %+v", best.Score, tc.min, best.Diffs)
				}
				for _, d := range best.Diffs {
					if !containsField(tc.diffs, d.Field) {
						t.Errorf("unexpected difference %+v", d)
					}
				}
				if len(cands) > 1 && cands[1].Score >= threshold {
					t.Errorf("the runner-up %q scores %.3f, above the threshold", cands[1].Label, cands[1].Score)
				}
			})
		}
	}
}

func containsField(fs []Field, f Field) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Two rows that are the same in everything but their place are told apart
// by their place: the last resort.
func TestMatchIdenticalRowsByPlace(t *testing.T) {
	s := page(1080, 2400, "Alarms", row(600, "7:30 AM", "true"), row(760, "7:30 AM", "true"), row(920, "7:30 AM", "true"))
	for i := 0; i < 3; i++ {
		var rows []int
		for _, e := range s.Elements {
			if e.Kind == "switch" {
				rows = append(rows, e.Index)
			}
		}
		id, _ := s.Identity(rows[i])
		if got := s.Match(id)[0].Element; got != rows[i] {
			t.Errorf("switch %d matched element %d, want %d", i, got, rows[i])
		}
	}
}

// An identity with only some fields, as an older file has, still finds
// its element.
func TestMatchPartialIdentity(t *testing.T) {
	live := recorded()
	for _, id := range []Identity{
		{Label: "Hotspot"},
		{Text: "Hotspot"},
		{Label: "Airplane mode", Class: "android.widget.LinearLayout", Checkable: true},
		{Label: "Internet", Bounds: [4]int{0, 600, 1080, 760}, Screen: [2]int{1080, 2400}},
	} {
		best := live.Match(id)[0]
		want := id.Label
		if want == "" {
			want = id.Text
		}
		if best.Label != want || best.Score < 0.99 {
			t.Errorf("%+v: best %q %.3f", id, best.Label, best.Score)
		}
	}
	if got := (&Screen{}).Match(Identity{Label: "x"}); len(got) != 0 {
		t.Errorf("an empty screen has candidates: %v", got)
	}
	var nilScreen *Screen
	if got := nilScreen.Match(Identity{}); got != nil {
		t.Errorf("a nil screen has candidates: %v", got)
	}
}

// What was typed into a field is not its name.
func TestMatchEditableIgnoresText(t *testing.T) {
	field := func(text string) *Screen {
		s, err := Parse([]byte(`<hierarchy><node class="android.widget.FrameLayout" package="com.android.chrome" bounds="[0,0][1080,2400]">` +
			`<node text="` + text + `" hint="Search or type URL" resource-id="com.android.chrome:id/url_bar" class="android.widget.EditText" package="com.android.chrome" clickable="true" focusable="true" bounds="[0,100][1080,250]"/>` +
			`<node text="Go" class="android.widget.Button" package="com.android.chrome" clickable="true" bounds="[0,300][200,400]"/></node></hierarchy>`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rec, live := field("droidgo"), field("")
	id, _ := rec.Identity(0)
	if id.Text != "" {
		t.Errorf("the identity of a field keeps its text %q", id.Text)
	}
	best := live.Match(id)[0]
	if best.Element != 0 || best.Score < 0.95 {
		t.Errorf("best %+v", best)
	}
}

// Every element of every real dump is found as itself, at score 1, and
// no other element of the dump scores 1.
func TestMatchRealDumpsFindThemselves(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "dumps", "*.xml"))
	if len(files) < 10 {
		t.Fatalf("only %d dumps", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data)
		if err != nil && s == nil {
			continue
		}
		for i := range s.Elements {
			id, _ := s.Identity(i)
			c := s.Match(id)
			if c[0].Element != i || c[0].Score != 1 {
				t.Errorf("%s: element %d %q matched %d %q at %.3f", filepath.Base(f), i, s.Elements[i].Label, c[0].Element, c[0].Label, c[0].Score)
			}
			if len(c) > 1 && c[1].Score == 1 {
				t.Errorf("%s: element %d %q: element %d %q also scores 1", filepath.Base(f), i, s.Elements[i].Label, c[1].Element, c[1].Label)
			}
		}
	}
}

func TestSimilarity(t *testing.T) {
	rec := recorded()
	tests := []struct {
		name     string
		live     *Screen
		min, max float64
	}{
		{"the same screen", recorded(), 1, 1},
		{"a row inserted", page(1080, 2400, "Network & internet",
			row(600, "SIM cards", ""), row(760, "Internet", ""), row(920, "Calls & SMS", ""), row(1080, "Airplane mode", "false"), row(1240, "Hotspot", "")), 0.85, 0.99},
		{"a smaller screen", page(720, 1600, "Network & internet",
			row(600, "Internet", ""), row(760, "Calls & SMS", ""), row(920, "Airplane mode", "false"), row(1080, "Hotspot", "")), 1, 1},
		{"a switch flipped", page(1080, 2400, "Network & internet",
			row(600, "Internet", ""), row(760, "Calls & SMS", ""), row(920, "Airplane mode", "true"), row(1080, "Hotspot", "")), 1, 1},
		{"another page", page(1080, 2400, "Connected devices",
			row(600, "Pair new device", ""), row(760, "Connection preferences", ""), row(920, "Bluetooth", "true")), 0, 0.5},
	}
	for _, tc := range tests {
		got := Similarity(rec, tc.live)
		if got < tc.min || got > tc.max {
			t.Errorf("%s: similarity %.3f, want %.2f-%.2f", tc.name, got, tc.min, tc.max)
		}
		if back := Similarity(tc.live, rec); back != got {
			t.Errorf("%s: not symmetric: %.3f and %.3f", tc.name, got, back)
		}
	}
	if Similarity(nil, rec) != 0 {
		t.Error("a nil screen is similar")
	}
	missing, added := rec.Signature().Changes(tests[1].live.Signature(), 5)
	if len(missing) != 0 || len(added) != 1 || added[0] != "SIM cards" {
		t.Errorf("changes: missing %q, added %q", missing, added)
	}
}

func TestReaches(t *testing.T) {
	s, err := Parse([]byte(`<hierarchy><node class="android.widget.FrameLayout" package="a" bounds="[0,0][1080,2400]">` +
		`<node class="android.widget.LinearLayout" clickable="true" bounds="[0,600][1080,760]"><node text="Internet" class="android.widget.TextView" bounds="[66,640][700,720]"/></node>` +
		`<node class="android.widget.Button" text="Far" clickable="true" bounds="[0,2000][1080,2200]"/>` +
		`<node class="android.widget.FrameLayout" clickable="true" bounds="[0,1500][1080,2400]"><node text="Got it" class="android.widget.Button" clickable="true" bounds="[700,2100][1000,2200]"/></node>` +
		`</node></hierarchy>`))
	if err != nil {
		t.Fatal(err)
	}
	rowNode := s.Nodes[s.Elements[element(t, s, "Internet", "")].Node].Parent
	if rowNode < 0 || !s.Nodes[rowNode].Clickable {
		rowNode = s.Elements[element(t, s, "Internet", "")].Node
	}
	far := s.Elements[element(t, s, "Far", "")].Node
	gotIt := s.Elements[element(t, s, "Got it", "")].Node
	for _, tc := range []struct {
		name string
		x, y int
		node int
		want bool
	}{
		{"a row through its label", 300, 680, rowNode, true},
		{"a button under a panel", 100, 2100, far, false},
		{"the panel's button", 800, 2150, gotIt, true},
		{"outside the node", 300, 100, rowNode, false},
	} {
		if got := s.Reaches(tc.x, tc.y, tc.node, false); got != tc.want {
			t.Errorf("%s: Reaches = %v (touch target %d)", tc.name, got, s.TouchTarget(tc.x, tc.y, false))
		}
	}
}

// Real dumps of different pages are told apart; each is the same as
// itself.
func TestSimilarityRealDumps(t *testing.T) {
	read := func(name string) *Screen {
		data, err := os.ReadFile(filepath.Join("testdata", "dumps", name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	home := read("50-aosp-settings-homepage-pixel-1080x2220.xml")
	network := read("51-aosp-network-internet.xml")
	wifi := read("52-aosp-wifi-switch-off.xml")
	qs := read("66-pixel-quick-settings-panel.xml")
	for _, p := range []struct {
		a, b *Screen
		name string
	}{{home, network, "home/network"}, {network, wifi, "network/wifi"}, {home, qs, "home/quick settings"}} {
		if got := Similarity(p.a, p.b); got >= 0.5 {
			t.Errorf("%s: similarity %.3f", p.name, got)
		}
	}
	for _, s := range []*Screen{home, network, wifi, qs} {
		if got := Similarity(s, s); got != 1 {
			t.Errorf("a screen is %.3f similar to itself", got)
		}
	}
	if !qs.Signature().SystemUI() || home.Signature().SystemUI() {
		t.Errorf("SystemUI: quick settings %v, settings %v", qs.Signature().SystemUI(), home.Signature().SystemUI())
	}
}

// FuzzMatch: on any dump, every element's identity is found as itself,
// and the similarity, touch and signature helpers do not fail.
func FuzzMatch(f *testing.F) {
	f.Add([]byte(`<hierarchy><node class="a" clickable="true" bounds="[0,0][10,10]"><node text="x" bounds="[0,0][5,5]"/></node><node text="y" clickable="true" bounds="[0,0][10,10]"/></hierarchy>`))
	f.Add([]byte(`<hierarchy><node text="7:30" resource-id="a:id/t" class="android.widget.Switch" checkable="true" bounds="[-5,-5][0,0]"/></hierarchy>`))
	f.Add([]byte(`<hierarchy><node class="android.widget.EditText" text="secret" password="true" hint="PIN" bounds="[0,0][1,1]"/></hierarchy>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _ := Parse(data)
		if s == nil {
			return
		}
		for i := range min(len(s.Elements), 20) {
			id, ok := s.Identity(i)
			if !ok {
				t.Fatalf("no identity for element %d", i)
			}
			c := s.Match(id)
			if len(c) != len(s.Elements) || c[0].Score < c[len(c)-1].Score {
				t.Fatalf("candidates %v", c)
			}
			for _, x := range c {
				if x.Score < 0 || x.Score > 1 {
					t.Fatalf("score %v out of range", x.Score)
				}
			}
			e := s.Elements[i]
			s.Reaches(e.X, e.Y, e.Node, false)
		}
		if got := Similarity(s, s); got != 1 {
			t.Fatalf("a screen is %v similar to itself", got)
		}
	})
}
