package uixml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

// nd writes one <node> with uiautomator's attribute set: attrs override the
// defaults (a disabled-nothing, non-interactive android.view.View).
func nd(attrs string, children ...string) string {
	def := map[string]string{
		"index": "0", "text": "", "resource-id": "", "class": "android.view.View", "package": "com.example",
		"content-desc": "", "checkable": "false", "checked": "false", "clickable": "false", "enabled": "true",
		"focusable": "false", "focused": "false", "scrollable": "false", "long-clickable": "false",
		"password": "false", "selected": "false", "bounds": "[0,0][100,100]",
	}
	order := []string{"index", "text", "resource-id", "class", "package", "content-desc", "checkable", "checked",
		"clickable", "enabled", "focusable", "focused", "scrollable", "long-clickable", "password", "selected", "bounds"}
	var extra []string
	for _, kv := range splitAttrs(attrs) {
		if _, ok := def[kv[0]]; !ok {
			extra = append(extra, kv[0])
		}
		def[kv[0]] = kv[1]
	}
	var b strings.Builder
	b.WriteString("<node")
	for _, k := range append(order, extra...) {
		fmt.Fprintf(&b, ` %s="%s"`, k, def[k])
	}
	if len(children) == 0 {
		b.WriteString(" />")
		return b.String()
	}
	b.WriteString(">")
	for _, c := range children {
		b.WriteString(c)
	}
	b.WriteString("</node>")
	return b.String()
}

// splitAttrs reads `a="x" b="y z"` into pairs.
func splitAttrs(s string) [][2]string {
	var out [][2]string
	for {
		s = strings.TrimSpace(s)
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return out
		}
		end := strings.Index(s[eq+2:], `"`)
		out = append(out, [2]string{s[:eq], s[eq+2 : eq+2+end]})
		s = s[eq+2+end+1:]
	}
}

const xmlDecl = `<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>`

func doc(nodes ...string) string {
	return xmlDecl + `<hierarchy rotation="0">` + strings.Join(nodes, "") + `</hierarchy>`
}

// settings is a small settings screen used by several tests: a toolbar, a
// search field, a row with a switch the row toggles, and a plain row.
func settings(wifiOn bool, clock string) string {
	return doc(
		nd(`class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"`,
			nd(`resource-id="com.android.systemui:id/status_bar" package="com.android.systemui" bounds="[0,0][1080,60]"`,
				nd(`text="`+clock+`" resource-id="com.android.systemui:id/clock" class="android.widget.TextView" package="com.android.systemui" bounds="[20,0][120,60]"`)),
			nd(`text="Settings" class="android.widget.TextView" bounds="[40,80][500,200]"`),
			nd(`resource-id="com.example:id/search" class="android.widget.EditText" clickable="true" focusable="true" focused="true" bounds="[40,220][1040,320]" hint="Search settings"`),
			nd(`class="androidx.recyclerview.widget.RecyclerView" resource-id="com.example:id/list" scrollable="true" bounds="[0,340][1080,2400]"`,
				nd(`class="android.widget.LinearLayout" clickable="true" focusable="true" bounds="[0,340][1080,500]"`,
					nd(`class="android.widget.RelativeLayout" bounds="[40,340][800,500]"`,
						nd(`text="Wi-Fi" resource-id="android:id/title" class="android.widget.TextView" bounds="[40,360][400,420]"`)),
					nd(`class="android.widget.LinearLayout" resource-id="android:id/widget_frame" bounds="[880,340][1040,500]"`,
						nd(fmt.Sprintf(`resource-id="android:id/switch_widget" class="android.widget.Switch" checkable="true" checked="%t" bounds="[880,380][1040,460]"`, wifiOn)))),
				nd(`class="android.widget.LinearLayout" clickable="true" focusable="true" bounds="[0,500][1080,660]"`,
					nd(`text="Battery" class="android.widget.TextView" bounds="[40,520][400,580]"`),
					nd(`text="85%" class="android.widget.TextView" bounds="[40,580][400,640]"`)),
			),
		),
	)
}

func mustParse(t *testing.T, s string) *Screen {
	t.Helper()
	sc, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v\ninput: %s", err, s)
	}
	checkInvariants(t, "inline", sc)
	return sc
}

func TestSettingsPrompt(t *testing.T) {
	s := mustParse(t, settings(false, "12:45"))
	want := `Screen of com.example, 1080x2400:
[0] text "Settings"
[1] field "Search settings" (editable, focused)
[2] list id:list (scrollable)
[3] switch "Wi-Fi" off
[4] button "Battery, 85%"
`
	if got := s.Prompt(); got != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	e, n, ok := s.ElementByIndex(3)
	if !ok || n.Class != "android.widget.LinearLayout" || e.Toggle < 0 || s.Nodes[e.Toggle].ResourceID != "android:id/switch_widget" {
		t.Errorf("element 3 = %+v, node %+v: want the row with the switch merged", e, n)
	}
	if e.X != 540 || e.Y != 420 {
		t.Errorf("row tap point %d,%d, want 540,420", e.X, e.Y)
	}
	if s.Nodes[e.Toggle].Index != -1 {
		t.Errorf("merged switch has element index %d, want -1", s.Nodes[e.Toggle].Index)
	}
	if _, _, ok := s.ElementByIndex(5); ok {
		t.Error("ElementByIndex(5) found an element on a 5-element screen")
	}
	if _, _, ok := s.ElementByIndex(-1); ok {
		t.Error("ElementByIndex(-1) found an element")
	}
	if got := s.IndexRange(); got != "0-4" {
		t.Errorf("IndexRange = %q", got)
	}
	if on := mustParse(t, settings(true, "12:45")); !strings.Contains(on.Prompt(), `[3] switch "Wi-Fi" on`) {
		t.Errorf("switched on:\n%s", on.Prompt())
	}
}

func TestFingerprint(t *testing.T) {
	base := mustParse(t, settings(false, "12:45")).Fingerprint()
	tests := []struct {
		name string
		xml  string
		same bool
	}{
		{"same screen", settings(false, "12:45"), true},
		{"clock ticks", settings(false, "12:46"), true},
		{"clock with am/pm", settings(false, "9:01 PM"), true},
		{"battery percentage changes", strings.Replace(settings(false, "12:45"), "85%", "84%", 1), true},
		{"switch toggled", settings(true, "12:45"), false},
		{"typed into the field", strings.Replace(settings(false, "12:45"), `class="android.widget.EditText"`, `text="wifi" class="android.widget.EditText"`, 1), false},
		{"row label changes", strings.Replace(settings(false, "12:45"), `text="Battery"`, `text="Storage"`, 1), false},
		{"focus moves", strings.Replace(settings(false, "12:45"), `focused="true"`, `focused="false"`, 1), false},
	}
	for _, tt := range tests {
		got := mustParse(t, tt.xml).Fingerprint()
		if (got == base) != tt.same {
			t.Errorf("%s: fingerprint same=%v, want same=%v", tt.name, got == base, tt.same)
		}
	}
}

func TestFingerprintRealDumps(t *testing.T) {
	qs, err := os.ReadFile("testdata/dumps/66-pixel-quick-settings-panel.xml")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Parse(qs)
	tick := bytes.Replace(qs, []byte(`text="3:17 "`), []byte(`text="3:18 "`), 1)
	tick = bytes.Replace(tick, []byte(`text="100%"`), []byte(`text="99%"`), 1)
	tick = bytes.Replace(tick, []byte(`Battery 100 percent.`), []byte(`Battery 99 percent.`), 1)
	if bytes.Equal(tick, qs) {
		t.Fatal("test edit did not apply")
	}
	b, _ := Parse(tick)
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("quick settings: clock and battery change altered the fingerprint")
	}

	wifi, _ := os.ReadFile("testdata/dumps/52-aosp-wifi-switch-off.xml")
	i := bytes.Index(wifi, []byte(`android:id/switch_widget`))
	j := i + bytes.Index(wifi[i:], []byte(`checked="false"`))
	on := append(append(append([]byte{}, wifi[:j]...), `checked="true"`...), wifi[j+len(`checked="false"`):]...)
	s1, _ := Parse(wifi)
	s2, _ := Parse(on)
	if s1.Fingerprint() == s2.Fingerprint() {
		t.Error("Wi-Fi switch toggled but the fingerprint stayed")
	}
	if !strings.Contains(s1.Prompt(), `switch "Wi-Fi" off`) || !strings.Contains(s2.Prompt(), `switch "Wi-Fi" on`) {
		t.Errorf("Wi-Fi row state not shown:\n%s\n%s", s1.Prompt(), s2.Prompt())
	}
}

func TestStableText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"12:45", "#"},
		{"3:17 ", "#"},
		{"Battery 85 percent.", "Battery #."},
		{"Battery, 85%", "Battery, #"},
		{"28°", "#"},
		{"5 min ago", "#"},
		{"Updated 23:46", "Updated #"},
		{"(286) 800-00", "(286) 800-00"},
		{"Setting number 12", "Setting number 12"},
		{"42", "#"},
		{"Wi-Fi", "Wi-Fi"},
		{"1 network", "1 network"},
	}
	for _, tt := range tests {
		if got := stableText(tt.in); got != tt.want {
			t.Errorf("stableText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func utf16Bytes(s string, bigEndian, bom bool) []byte {
	var out []byte
	u := utf16.Encode([]rune(s))
	if bom {
		u = append([]uint16{0xFEFF}, u...)
	}
	for _, c := range u {
		if bigEndian {
			out = append(out, byte(c>>8), byte(c))
		} else {
			out = append(out, byte(c), byte(c>>8))
		}
	}
	return out
}

// TestRobustness feeds the shapes real devices and shells produce and
// checks what each must give.
func TestRobustness(t *testing.T) {
	simple := doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"`,
		nd(`text="OK" class="android.widget.Button" clickable="true" bounds="[100,100][300,200]"`)))
	pretty := strings.NewReplacer("><", ">\n  <").Replace(simple)
	tests := []struct {
		name   string
		in     []byte
		prompt []string // lines the prompt must contain
		w, h   int
		rot    int
	}{
		{"plain", []byte(simple), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"trailer", []byte(simple + "UI hierchary dumped to: /dev/tty\n"), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"leading noise", []byte("ERROR: could not get idle state.\nERROR: could not get idle state.\n" + simple), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"CRLF pretty", []byte(strings.ReplaceAll(pretty, "\n", "\r\n")), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"UTF-8 BOM", append([]byte("\xEF\xBB\xBF"), simple...), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"UTF-16LE BOM + trailer", utf16Bytes(simple+"UI hierchary dumped to: /dev/tty\r\n", false, true), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"UTF-16BE BOM", utf16Bytes(simple, true, true), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"UTF-16LE no BOM", utf16Bytes(simple, false, false), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"UTF-16BE no BOM, leading noise", utf16Bytes("ERROR: could not get idle state.\n"+simple, true, false), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"no declaration", []byte(strings.TrimPrefix(simple, xmlDecl)), []string{`[0] button "OK"`}, 1080, 2400, 0},
		{"entities", []byte(doc(nd(`text="Tom &amp; Jerry &lt;3 &quot;hi&quot; &#38; &#x263A; &nbsp;x" class="android.widget.Button" clickable="true" bounds="[0,0][500,500]"`))),
			[]string{`[0] button "Tom & Jerry <3 'hi' & ☺ x"`}, 500, 500, 0},
		{"surrogate references", []byte(doc(nd(`text="hi &#55357;&#56832;" class="android.widget.TextView" bounds="[0,0][500,500]"`))),
			[]string{`[0] text "hi 😀"`}, 500, 500, 0},
		{"RTL marks", []byte(doc(nd("text=\"\u200fمرحبا\u200e \u202bworld\u202c\" class=\"android.widget.TextView\" bounds=\"[0,0][500,500]\""))),
			[]string{`[0] text "مرحبا world"`}, 500, 500, 0},
		{"CJK and emoji", []byte(doc(nd(`text="设置 🔥 설정" class="android.widget.TextView" bounds="[0,0][500,500]"`))),
			[]string{`[0] text "设置 🔥 설정"`}, 500, 500, 0},
		{"landscape", []byte(strings.Replace(doc(nd(`text="Play" class="android.widget.Button" clickable="true" bounds="[0,0][2400,1080]"`)), `rotation="0"`, `rotation="1"`, 1)),
			[]string{`Screen of com.example, 2400x1080, rotated 90°:`, `[0] button "Play"`}, 2400, 1080, 1},
		{"several roots", []byte(doc(
			nd(`class="android.widget.FrameLayout" bounds="[0,0][1080,2220]"`, nd(`text="App" class="android.widget.TextView" bounds="[0,100][500,200]"`)),
			nd(`class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,2400]"`, nd(`content-desc="Home" class="android.widget.ImageView" package="com.android.systemui" clickable="true" bounds="[400,2300][680,2400]"`)),
		)), []string{`Screen of com.example, 1080x2400:`, `[0] text "App"`, `[1] button "Home"`}, 1080, 2400, 0},
		{"newer attributes", []byte(doc(nd(`text="Go" class="android.widget.Button" clickable="true" bounds="[0,0][300,300]" drawing-order="3" hint="type here" display-id="0" NAF="true" visible-to-user="true" a11y-important="true" screen-reader-focusable="false"`))),
			[]string{`[0] button "Go"`}, 300, 300, 0},
		{"negative bounds clipped", []byte(doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,1000]"`,
			nd(`text="Half" class="android.widget.Button" clickable="true" bounds="[-200,100][200,300]"`)))),
			[]string{`[0] button "Half"`}, 1000, 1000, 0},
		{"inverted bounds dropped", []byte(doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,1000]"`,
			nd(`text="Gone" class="android.widget.Button" clickable="true" bounds="[200,300][100,100]"`),
			nd(`text="Here" class="android.widget.Button" clickable="true" bounds="[0,0][100,100]"`)))),
			[]string{`[0] button "Here"`}, 1000, 1000, 0},
		{"appium page source", []byte(`<?xml version="1.0" encoding="UTF-8"?><hierarchy index="0" class="hierarchy" rotation="0" width="1080" height="2400"><android.widget.FrameLayout index="0" package="com.example" class="android.widget.FrameLayout" text="" clickable="false" enabled="true" bounds="[0,0][1080,2400]" displayed="true"><android.widget.Button index="0" package="com.example" class="android.widget.Button" text="Sign in" clickable="true" enabled="true" bounds="[100,100][500,200]" displayed="true"/></android.widget.FrameLayout></hierarchy>`),
			[]string{`[0] button "Sign in"`}, 1080, 2400, 0},
		{"control characters", []byte(doc(nd("text=\"a\x01b\" class=\"android.widget.TextView\" bounds=\"[0,0][500,500]\""))),
			[]string{`[0] text "a b"`}, 500, 500, 0},
		{"invalid UTF-8", []byte(doc(nd("text=\"caf\xe9\" class=\"android.widget.TextView\" bounds=\"[0,0][500,500]\""))),
			[]string{`[0] text "caf"`}, 500, 500, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkInvariants(t, tt.name, s)
			p := s.Prompt()
			for _, line := range tt.prompt {
				if !strings.Contains(p, line+"\n") {
					t.Errorf("prompt lacks %q:\n%s", line, p)
				}
			}
			if s.Width != tt.w || s.Height != tt.h || s.Rotation != tt.rot {
				t.Errorf("screen %dx%d rot %d, want %dx%d rot %d", s.Width, s.Height, s.Rotation, tt.w, tt.h, tt.rot)
			}
		})
	}
}

func TestNegativeBoundsTapPoint(t *testing.T) {
	s := mustParse(t, doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,1000]"`,
		nd(`text="Half" class="android.widget.Button" clickable="true" bounds="[-600,100][200,300]"`))))
	e, n, _ := s.ElementByIndex(0)
	if n.Bounds != (Rect{-600, 100, 200, 300}) {
		t.Errorf("bounds %+v: the node must keep its own bounds", n.Bounds)
	}
	if e.X != 100 || e.Y != 200 {
		t.Errorf("tap at %d,%d, want the centre of the on-screen part 100,200", e.X, e.Y)
	}
}

func TestTruncated(t *testing.T) {
	full := []byte(settings(false, "12:45"))
	whole, err := Parse(full)
	if err != nil {
		t.Fatal(err)
	}
	// Cut at every 7th byte after the first node: each cut must keep the
	// nodes before it and say the document is truncated.
	first := bytes.Index(full, []byte("/>"))
	for cut := first + 2; cut < len(full)-len("</hierarchy>"); cut += 7 {
		s, err := Parse(full[:cut])
		if err == nil {
			t.Fatalf("cut at %d: no error", cut)
		}
		if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut at %d: error %q does not say truncated", cut, err)
		}
		if s == nil || !s.Truncated {
			t.Fatalf("cut at %d: no screen or Truncated unset", cut)
		}
		if len(s.Nodes) == 0 || len(s.Nodes) > len(whole.Nodes) {
			t.Fatalf("cut at %d: %d nodes (whole has %d)", cut, len(s.Nodes), len(whole.Nodes))
		}
		for i := range s.Nodes {
			if s.Nodes[i].Class != whole.Nodes[i].Class || s.Nodes[i].Bounds != whole.Nodes[i].Bounds {
				t.Fatalf("cut at %d: node %d differs from the whole document's", cut, i)
			}
		}
		checkInvariants(t, fmt.Sprint("cut ", cut), s)
		if !strings.Contains(s.Prompt(), "(the screen dump was incomplete") {
			t.Fatalf("cut at %d: prompt does not say so", cut)
		}
	}
	// A real dump cut in the middle of an attribute value.
	real, _ := os.ReadFile("testdata/dumps/52-aosp-wifi-switch-off.xml")
	cut := bytes.Index(real, []byte("Saved networks")) + 3
	s, err := Parse(real[:cut])
	if !errors.Is(err, ErrTruncated) || s == nil || !strings.Contains(s.Prompt(), `switch "Wi-Fi" off`) {
		t.Errorf("real dump cut: err %v, prompt:\n%v", err, s)
	}
}

func TestGarbage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "empty"},
		{"spaces", "  \n", "empty"},
		{"text", "hello world", "not a uiautomator dump"},
		{"html", "<html><body>hi</body></html>", "not a uiautomator dump"},
		{"adb error", "ERROR: null root node returned by UiTestAutomationBridge.\n", "not a uiautomator dump"},
		{"binary", "\x00\x01\x02\xff\xfe", "not a uiautomator dump"},
		{"broken hierarchy", "<hierarchy <<< >>>", ""},
	}
	for _, tt := range tests {
		s, err := Parse([]byte(tt.in))
		if err == nil {
			t.Errorf("%s: no error (screen %+v)", tt.name, s)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q lacks %q", tt.name, err, tt.want)
		}
		if s != nil && len(s.Nodes) > 0 {
			t.Errorf("%s: garbage gave %d nodes", tt.name, len(s.Nodes))
		}
	}
}

// TestElementRules covers the element-list rules one at a time.
func TestElementRules(t *testing.T) {
	screen := func(children ...string) string {
		return doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,2000]"`, children...))
	}
	tests := []struct {
		name string
		xml  string
		want string // the element lines of the prompt
	}{
		{"zero-area and off-screen dropped", screen(
			nd(`text="zero" class="android.widget.Button" clickable="true" bounds="[10,10][10,50]"`),
			nd(`text="off" class="android.widget.Button" clickable="true" bounds="[1200,10][1300,50]"`),
			nd(`text="below" class="android.widget.TextView" bounds="[0,2100][500,2200]"`),
			nd(`text="hidden" class="android.widget.TextView" bounds="[0,0][500,100]" visible-to-user="false"`),
			nd(`text="on" class="android.widget.Button" clickable="true" bounds="[0,0][500,100]"`)),
			`[0] button "on"`},
		{"container takes its children's text", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,200]"`,
				nd(`class="android.widget.ImageView" bounds="[0,0][100,200]"`),
				nd(`text="Wi-Fi" class="android.widget.TextView" bounds="[100,0][500,100]"`),
				nd(`text="Connected" class="android.widget.TextView" bounds="[100,100][500,200]"`))),
			`[0] button "Wi-Fi, Connected"`},
		{"separately tappable switch keeps its own index", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,200]"`,
				nd(`text="Wireless debugging" class="android.widget.TextView" bounds="[0,0][700,200]"`),
				nd(`class="android.widget.Switch" checkable="true" checked="true" clickable="true" bounds="[800,0][1000,200]"`))),
			"[0] button \"Wireless debugging\"\n[1] switch \"Wireless debugging\" on"},
		{"checkbox row merges", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,200]"`,
				nd(`text="Remember me" class="android.widget.TextView" bounds="[0,0][700,200]"`),
				nd(`class="android.widget.CheckBox" checkable="true" checked="true" bounds="[800,0][1000,200]"`))),
			`[0] checkbox "Remember me" checked`},
		{"switch with no clickable row takes the text beside it", screen(
			nd(`class="android.widget.LinearLayout" bounds="[0,0][1000,200]"`,
				nd(`text="Dark theme" class="android.widget.TextView" bounds="[0,0][700,200]"`),
				nd(`text="OFF" class="android.widget.Switch" checkable="true" clickable="true" bounds="[800,0][1000,200]"`))),
			`[0] switch "Dark theme" off`},
		{"labelled by resource-id, then class", screen(
			nd(`resource-id="com.example:id/fab_add" class="android.widget.ImageButton" clickable="true" bounds="[0,0][100,100]"`),
			nd(`class="android.widget.ImageButton" clickable="true" bounds="[200,0][300,100]"`)),
			"[0] button id:fab_add\n[1] button class:ImageButton"},
		{"password field", screen(
			nd(`text="••••" class="android.widget.EditText" password="true" clickable="true" focusable="true" bounds="[0,0][1000,100]"`)),
			`[0] field "••••" (editable, password)`},
		{"password text masked", screen(
			nd(`text="hunter2" class="android.widget.EditText" password="true" clickable="true" bounds="[0,0][1000,100]"`)),
			`[0] field "•••••••" (editable, password)`},
		{"empty field shows its hint", screen(
			nd(`class="android.widget.EditText" clickable="true" bounds="[0,0][1000,100]" hint="Email"`)),
			`[0] field "Email" (editable)`},
		{"disabled, selected, long-press", screen(
			nd(`text="Next" class="android.widget.Button" clickable="true" enabled="false" bounds="[0,0][100,100]"`),
			nd(`content-desc="Home" class="android.widget.FrameLayout" clickable="true" selected="true" bounds="[100,0][200,100]"`),
			nd(`text="Photo" class="android.widget.ImageView" long-clickable="true" bounds="[200,0][300,100]"`)),
			"[0] button \"Next\" (disabled)\n[1] button \"Home\" (selected)\n[2] button \"Photo\" (long-press)"},
		{"webview", screen(
			nd(`class="android.webkit.WebView" bounds="[0,0][1000,1000]"`,
				nd(`text="Article" class="android.view.View" bounds="[0,0][500,100]"`))),
			"[0] webview class:WebView (web content may be incomplete)\n[1] text \"Article\""},
		{"wrapper around one control is not listed", screen(
			nd(`class="android.widget.FrameLayout" clickable="true" bounds="[0,0][200,200]"`,
				nd(`content-desc="More options" class="android.widget.ImageButton" clickable="true" bounds="[0,0][200,200]"`))),
			`[0] button "More options"`},
		{"quick settings tile hides repeated texts", screen(
			nd(`text="Bluetooth, On" class="android.widget.Switch" checkable="true" checked="true" clickable="true" bounds="[0,0][500,200]"`,
				nd(`text="Bluetooth" class="android.widget.TextView" bounds="[0,0][500,100]"`),
				nd(`text="On" class="android.widget.TextView" bounds="[0,100][500,200]"`))),
			`[0] switch "Bluetooth, On" on`},
		{"radio buttons", screen(
			nd(`text="Precise" class="android.widget.RadioButton" checkable="true" checked="true" clickable="true" bounds="[0,0][500,100]"`),
			nd(`text="Approximate" class="android.widget.RadioButton" checkable="true" clickable="true" bounds="[500,0][1000,100]"`)),
			"[0] radio \"Precise\" checked\n[1] radio \"Approximate\" unchecked"},
		{"radio row whose name is on a CheckedTextView", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,200]"`,
				nd(`resource-id="android:id/checkbox" class="android.widget.RadioButton" checkable="true" checked="true" bounds="[0,0][100,200]"`),
				nd(`class="android.widget.RelativeLayout" bounds="[150,0][1000,200]"`,
					nd(`text="5G preferred" class="android.widget.CheckedTextView" checkable="true" checked="true" bounds="[150,50][600,150]"`))),
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,200][1000,400]"`,
				nd(`class="android.widget.RadioButton" checkable="true" bounds="[0,200][100,400]"`),
				nd(`text="LTE preferred" class="android.widget.CheckedTextView" checkable="true" bounds="[150,250][600,350]"`))),
			"[0] radio \"5G preferred\" checked\n[1] radio \"LTE preferred\" unchecked"},
		{"nameless sliver of a row dropped", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,1983][1000,2000]"`),
			nd(`resource-id="com.example:id/card" class="android.view.ViewGroup" clickable="true" bounds="[0,1990][500,2010]"`),
			nd(`content-desc="Dot" class="android.widget.ImageView" clickable="true" bounds="[600,1990][616,2000]"`)),
			`[0] button "Dot"`},
		{"nameless disabled control dropped, named one kept", screen(
			nd(`class="android.widget.LinearLayout" clickable="true" enabled="false" bounds="[0,0][56,140]"`),
			nd(`resource-id="com.example:id/send" class="android.widget.ImageButton" clickable="true" enabled="false" bounds="[100,0][200,100]"`)),
			`[0] button id:send (disabled)`},
		{"empty comma-joined fields removed", screen(
			nd(`text=", , , Test C. User, , Zimbra Test Email, Hi,  on Mar 10" class="android.view.ViewGroup" clickable="true" bounds="[0,0][1000,200]"`)),
			`[0] button "Test C. User, Zimbra Test Email, Hi, on Mar 10"`},
		{"long label cut", screen(
			nd(`text="` + strings.Repeat("word ", 40) + `" class="android.widget.TextView" bounds="[0,0][1000,100]"`)),
			`[0] text "` + strings.TrimSpace(strings.Repeat("word ", 16)) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.xml)
			p := s.Prompt()
			body := p[strings.IndexByte(p, '\n')+1:]
			if got := strings.TrimSuffix(body, "\n"); got != tt.want {
				t.Errorf("elements:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSeparateSwitchRow(t *testing.T) {
	s := mustParse(t, doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,2000]"`,
		nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,200]"`,
			nd(`text="Wireless debugging" class="android.widget.TextView" bounds="[0,0][700,200]"`),
			nd(`class="android.widget.Switch" checkable="true" clickable="true" bounds="[800,0][1000,200]"`)))))
	sw, _, _ := s.ElementByIndex(1)
	if sw.Row != 0 || sw.LabelFrom != LabelRow {
		t.Errorf("switch element %+v: want Row 0, label from the row", sw)
	}
	row, _, _ := s.ElementByIndex(0)
	if row.Row != -1 || row.Toggle != -1 {
		t.Errorf("row element %+v: want no row and no merged toggle", row)
	}
}

func TestCut(t *testing.T) {
	var kids []string
	for i := range 30 {
		kids = append(kids, nd(fmt.Sprintf(`text="Item %d" class="android.widget.TextView" bounds="[0,%d][500,%d]"`, i, i*50, i*50+50)))
	}
	kids = append(kids, nd(`text="Send" class="android.widget.Button" clickable="true" bounds="[500,1500][1000,1600]"`))
	x := doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,2000]"`, kids...))
	s, err := ParseWithOptions([]byte(x), Options{MaxElements: 10})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "cut", s)
	if len(s.Elements) != 10 || s.Cut != 21 {
		t.Fatalf("%d elements, cut %d; want 10 and 21", len(s.Elements), s.Cut)
	}
	p := s.Prompt()
	if !strings.Contains(p, "(21 more elements not shown: the list was cut for length)\n") {
		t.Errorf("prompt does not name the cut:\n%s", p)
	}
	if !strings.Contains(p, `[9] button "Send"`) {
		t.Errorf("the control was cut before texts:\n%s", p)
	}
	full := mustParse(t, x)
	if full.Cut != 0 || len(full.Elements) != 31 {
		t.Errorf("default cap: %d elements, cut %d", len(full.Elements), full.Cut)
	}
}

func TestJSONShape(t *testing.T) {
	s := mustParse(t, settings(false, "12:45"))
	b, err := json.Marshal(s.JSON(false))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	wantTop := `{"width":1080,"height":2400,"rotation":0,"truncated":false,"prompt":`
	if !bytes.HasPrefix(b, []byte(wantTop)) {
		t.Errorf("JSON starts %.80s, want %s", b, wantTop)
	}
	var out struct {
		Elements []map[string]json.RawMessage `json:"elements"`
		Prompt   string                       `json:"prompt"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Prompt != s.Prompt() || len(out.Elements) != len(s.Elements) {
		t.Fatalf("prompt or element count differ")
	}
	keys := `"index","label","text","desc","resource_id","class","package","bounds","center","clickable","long_clickable","checkable","checked","scrollable","focusable","focused","enabled","selected","password","editable","toggle_checked"`
	el, _ := json.Marshal(s.JSON(false).Elements[3])
	var order []string
	dec := json.NewDecoder(bytes.NewReader(el))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		order = append(order, fmt.Sprintf("%q", k))
		var v json.RawMessage
		dec.Decode(&v)
	}
	if got := strings.Join(order, ","); got != keys {
		t.Errorf("element keys\n%s\nwant\n%s", got, keys)
	}
	// The row's attribute fields are its own; the switch it absorbed
	// speaks in toggle_checked.
	row := s.JSON(false).Elements[3]
	if row.Label != "Wi-Fi" || row.Text != "" || row.Checkable || row.Checked || row.Bounds != [4]int{0, 340, 1080, 500} || row.Center != [2]int{540, 420} {
		t.Errorf("row element %+v", row)
	}
	if row.ToggleChecked == nil || *row.ToggleChecked {
		t.Errorf("row element: toggle_checked %v, want false", row.ToggleChecked)
	}
	for _, e := range s.JSON(true).Elements {
		if e.ToggleChecked != nil && e.Index < 0 {
			t.Errorf("toggle_checked on a node not shown: %+v", e)
		}
	}
	all := s.JSON(true)
	if len(all.Elements) != len(s.Nodes) {
		t.Fatalf("--all lists %d of %d nodes", len(all.Elements), len(s.Nodes))
	}
	shown := 0
	for i, e := range all.Elements {
		if e.Index >= 0 {
			if e.Index != shown {
				t.Errorf("--all node %d has index %d, want %d (document order)", i, e.Index, shown)
			}
			shown++
		} else if e.Label != "" {
			t.Errorf("--all node %d not shown but labelled %q", i, e.Label)
		}
	}
	if shown != len(s.Elements) {
		t.Errorf("--all shows %d, want %d", shown, len(s.Elements))
	}
	empty, _ := json.Marshal(mustParse(t, doc(nd(`bounds="[0,0][10,10]"`))).JSON(false))
	if !bytes.Contains(empty, []byte(`"elements":[]`)) {
		t.Errorf("no elements must give [], got %s", empty)
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{{"", 0}, {"abcd", 1}, {"abcde", 2}, {"设置", 2}, {"[0] 设置", 3}}
	for _, tt := range tests {
		if got := EstimateTokens(tt.in); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(settings(false, "12:45")))
	f.Add([]byte(settings(true, "1:00")[:300]))
	f.Add(utf16Bytes(doc(nd(`text="x"`)), false, true))
	f.Add([]byte("ERROR: could not get idle state.\n<hierarchy rotation=\"3\"><node bounds=\"[-5,-5][9,9]\" text=\"&#55357;\"/></hierarchy>UI hierchary dumped to: /dev/tty"))
	f.Add([]byte(`<hierarchy><android.widget.Button text="a" clickable="true" bounds="[0,0][1,1]"></hierarchy>`))
	f.Add([]byte("<node"))
	f.Add([]byte(""))
	// Past the depth limit, on the scanner's path and the stream's.
	deep := strings.Repeat(`<node text="x" bounds="[0,0][9,9]">`, MaxDepth+3)
	f.Add([]byte("<hierarchy>" + deep + "</hierarchy>"))
	f.Add([]byte("<hierarchy>&amp;" + deep))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if s == nil {
			if err == nil {
				t.Fatal("nil screen and nil error")
			}
			return
		}
		if s.Truncated != (err != nil) {
			t.Fatalf("Truncated=%v with err=%v", s.Truncated, err)
		}
		checkInvariants(t, "fuzz", s)
		_ = s.Prompt()
		_ = s.Fingerprint()
		_ = s.IndexRange()
		if _, err := json.Marshal(s.JSON(true)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPathological checks that wide dumps and dumps nested up to MaxDepth
// stay fast enough to parse (the row searches are bounded) and do not
// overflow anything.
func TestPathological(t *testing.T) {
	const n = MaxDepth
	var b strings.Builder
	b.WriteString(`<hierarchy rotation="0">`)
	for i := range n {
		fmt.Fprintf(&b, `<node text="t%d" class="android.widget.TextView" clickable="%t" bounds="[0,0][1000,1000]">`, i, i%3 == 0)
	}
	for range n {
		b.WriteString("</node>")
	}
	b.WriteString("</hierarchy>")
	s, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != n || s.Cut == 0 {
		t.Errorf("%d nodes, cut %d", len(s.Nodes), s.Cut)
	}
	checkInvariants(t, "deep", s)
}

// TestTooDeep checks that a dump nesting deeper than MaxDepth, on the
// scanner's path and on the token stream's (the "&amp;" between tags sends
// it there), stops at the first node too deep: the nodes before it, with
// Truncated and an error wrapping ErrTruncated and ErrTooDeep, and a parse
// whose allocations stay a small multiple of the input.
func TestTooDeep(t *testing.T) {
	for _, path := range []string{"scanner", "stream"} {
		const n = 200000
		var b strings.Builder
		b.WriteString(`<hierarchy rotation="0">`)
		if path == "stream" {
			b.WriteString("&amp;")
		}
		for i := range n {
			fmt.Fprintf(&b, `<node text="t%d" class="android.widget.FrameLayout" clickable="true" bounds="[0,0][100,100]">`, i)
		}
		b.WriteString(`<node text="after" bounds="[0,0][100,100]"/>`)
		b.WriteString(strings.Repeat("</node>", n))
		b.WriteString("</hierarchy>")
		data := []byte(b.String())
		var s *Screen
		var err error
		allocs := testing.Benchmark(func(tb *testing.B) {
			for range tb.N {
				s, err = Parse(data)
			}
		}).AllocedBytesPerOp()
		if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrTooDeep) || s == nil || !s.Truncated {
			t.Fatalf("%s: err %v", path, err)
		}
		if len(s.Nodes) != MaxDepth {
			t.Errorf("%s: %d nodes, want the %d before the first too deep", path, len(s.Nodes), MaxDepth)
		}
		if !strings.Contains(err.Error(), "deeper than 512 levels") {
			t.Errorf("%s: error %q does not say why", path, err)
		}
		if allocs > 4*int64(len(data)) {
			t.Errorf("%s: %d bytes allocated for a %d-byte dump", path, allocs, len(data))
		}
		checkInvariants(t, path, s)
	}
}

func TestMalformedMiddle(t *testing.T) {
	x := doc(nd(`class="android.widget.FrameLayout" bounds="[0,0][1000,1000]"`,
		nd(`text="First" class="android.widget.Button" clickable="true" bounds="[0,0][100,100]"`),
		`<node text="bad" <<<>`,
		nd(`text="Last" class="android.widget.Button" clickable="true" bounds="[0,100][100,200]"`)))
	s, err := Parse([]byte(x))
	if !errors.Is(err, ErrTruncated) || s == nil || !strings.Contains(err.Error(), "breaks off after") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(s.Prompt(), `[0] button "First"`) {
		t.Errorf("the node before the damage is missing:\n%s", s.Prompt())
	}
}

func TestDialogPanel(t *testing.T) {
	s := mustParse(t, doc(nd(`class="android.widget.LinearLayout" clickable="true" bounds="[0,0][1000,1500]"`,
		nd(`text="Allow Camera to access this device's location?" class="android.widget.TextView" bounds="[0,0][1000,200]"`),
		nd(`text="Allow" class="android.widget.Button" clickable="true" bounds="[0,1200][500,1400]"`),
		nd(`text="Deny" class="android.widget.Button" clickable="true" bounds="[500,1200][1000,1400]"`))))
	want := "Screen of com.example, 1000x1500:\n[0] text \"Allow Camera to access this device's location?\"\n[1] button \"Allow\"\n[2] button \"Deny\"\n"
	if got := s.Prompt(); got != want {
		t.Errorf("dialog:\n%s\nwant:\n%s", got, want)
	}
}

// TestKeyboardWindow checks that the keys of an on-screen keyboard window
// (dumps of every window include it) are not elements while the app's
// controls are, that the prompt says a keyboard is open and names the app,
// and that a keyboard package's own screen, alone, is listed as usual.
func TestKeyboardWindow(t *testing.T) {
	const ime = "com.google.android.inputmethod.latin"
	var keys []string
	for i, k := range strings.Split("qwertyuiopasdfghjklzxcvbnm", "") {
		x := (i % 10) * 108
		y := 1600 + (i/10)*160
		keys = append(keys, nd(fmt.Sprintf(`resource-id="%s:id/key_pos_%d" content-desc="%s" package="%s" clickable="true" bounds="[%d,%d][%d,%d]"`,
			ime, i, k, ime, x, y, x+108, y+160)))
	}
	app := nd(`class="android.widget.FrameLayout" package="com.example.chat" bounds="[0,0][1080,2400]"`,
		nd(`class="android.widget.EditText" package="com.example.chat" clickable="true" focused="true" hint="Message" bounds="[0,1400][900,1560]"`),
		nd(`content-desc="Send" class="android.widget.ImageButton" package="com.example.chat" clickable="true" bounds="[900,1400][1080,1560]"`))
	kbd := nd(`class="android.widget.FrameLayout" package="`+ime+`" bounds="[0,1580][1080,2400]"`, keys...)

	for _, order := range []string{"keyboard first", "app first"} {
		x := doc(kbd, app)
		if order == "app first" {
			x = doc(app, kbd)
		}
		s := mustParse(t, x)
		want := "Screen of com.example.chat, 1080x2400:\n" +
			"[0] field \"Message\" (editable, focused)\n" +
			"[1] button \"Send\"\n" +
			"(an on-screen keyboard is open; its keys are not listed)\n"
		if got := s.Prompt(); got != want || !s.Keyboard {
			t.Errorf("%s: Keyboard=%v, prompt:\n%s\nwant:\n%s", order, s.Keyboard, got, want)
		}
	}

	alone := mustParse(t, doc(nd(`class="android.widget.FrameLayout" package="`+ime+`" bounds="[0,0][1080,2400]"`,
		nd(`text="Theme" class="android.widget.TextView" package="`+ime+`" clickable="true" bounds="[0,100][1080,300]"`))))
	if alone.Keyboard || len(alone.Elements) != 1 || alone.App() != ime {
		t.Errorf("keyboard settings screen: Keyboard=%v, %d elements, app %q; want its row listed",
			alone.Keyboard, len(alone.Elements), alone.App())
	}
}

// TestLabelSources: each way an element gets its label has its source,
// and the prompt marks the stand-ins (id:, class:) by the source, not by
// the label's words.
func TestLabelSources(t *testing.T) {
	node := func(attrs string) string {
		return `<node class="android.widget.FrameLayout" package="p" bounds="[0,0][1080,2400]">` + attrs + `</node>`
	}
	cases := []struct {
		name, xml string
		want      LabelSource
		prompt    string
	}{
		{"text", node(`<node class="android.widget.Button" text="OK" clickable="true" bounds="[0,100][500,300]"/>`), LabelText, `button "OK"`},
		{"desc", node(`<node class="android.widget.ImageButton" content-desc="Back" clickable="true" bounds="[0,100][500,300]"/>`), LabelDesc, `"Back"`},
		{"hint", node(`<node class="android.widget.EditText" hint="Search" clickable="true" bounds="[0,100][500,300]"/>`), LabelHint, `"Search"`},
		{"children", node(`<node class="android.widget.LinearLayout" clickable="true" bounds="[0,100][1080,300]"><node class="android.widget.TextView" text="Wi-Fi" bounds="[0,100][500,300]"/></node>`), LabelChildren, `"Wi-Fi"`},
		{"id", node(`<node class="android.widget.ImageView" resource-id="p:id/class" clickable="true" bounds="[0,100][500,300]"/>`), LabelID, "id:class"},
		{"class", node(`<node class="android.widget.ImageView" clickable="true" bounds="[0,100][500,300]"/>`), LabelClass, "class:ImageView"},
	}
	for _, c := range cases {
		s, err := Parse([]byte(`<hierarchy rotation="0">` + c.xml + `</hierarchy>`))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Elements) != 1 || s.Elements[0].LabelFrom != c.want || !strings.Contains(s.Prompt(), c.prompt) {
			t.Errorf("%s: %+v\n%s", c.name, s.Elements, s.Prompt())
		}
	}
}
