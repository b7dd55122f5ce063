package simulator

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// xnode is a dumped node as a test reads it back with encoding/xml, the way
// a client of the simulator sees it.
type xnode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []*xnode   `xml:"node"`
}

func (n *xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *xnode) walk(f func(*xnode)) {
	f(n)
	for _, c := range n.Children {
		c.walk(f)
	}
}

func (n *xnode) center(t testing.TB) (int, int) {
	t.Helper()
	var x1, y1, x2, y2 int
	if _, err := fmt.Sscanf(n.attr("bounds"), "[%d,%d][%d,%d]", &x1, &y1, &x2, &y2); err != nil {
		t.Fatalf("bad bounds %q: %v", n.attr("bounds"), err)
	}
	return (x1 + x2) / 2, (y1 + y2) / 2
}

func dumpTree(t testing.TB, p *Phone) *xnode {
	t.Helper()
	data, err := p.Dump(context.Background())
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	var root xnode
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("dump is not XML: %v\n%s", err, data)
	}
	if root.XMLName.Local != "hierarchy" {
		t.Fatalf("root element is %q", root.XMLName.Local)
	}
	return &root
}

// findAll returns the nodes whose attribute key equals val.
func findAll(root *xnode, key, val string) []*xnode {
	var out []*xnode
	root.walk(func(n *xnode) {
		if n.XMLName.Local == "node" && n.attr(key) == val {
			out = append(out, n)
		}
	})
	return out
}

// sel is how a test step finds a node: "text=Settings", "desc=Add alarm",
// "id=android:id/switch_widget".
func parseSel(t testing.TB, s string) (string, string) {
	t.Helper()
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		t.Fatalf("bad selector %q", s)
	}
	switch k {
	case "text":
		return "text", v
	case "desc":
		return "content-desc", v
	case "id":
		return "resource-id", v
	}
	t.Fatalf("bad selector key %q", k)
	return "", ""
}

// find returns the first node matching s, or with a "#N" suffix the Nth
// (from 0).
func find(t testing.TB, p *Phone, s string) *xnode {
	t.Helper()
	nth := 0
	if i := strings.LastIndex(s, "#"); i >= 0 {
		if n, err := strconv.Atoi(s[i+1:]); err == nil {
			s, nth = s[:i], n
		}
	}
	k, v := parseSel(t, s)
	nodes := findAll(dumpTree(t, p), k, v)
	if len(nodes) <= nth {
		t.Fatalf("no node %s #%d on screen %s", s, nth, p.Screen())
	}
	return nodes[nth]
}

func visible(t testing.TB, p *Phone, s string) bool {
	t.Helper()
	k, v := parseSel(t, s)
	return len(findAll(dumpTree(t, p), k, v)) > 0
}

// tap taps the centre of the first node matching s, as the agent does with
// an element's bounds.
func tap(t testing.TB, p *Phone, s string) {
	t.Helper()
	x, y := find(t, p, s).center(t)
	if err := p.Tap(context.Background(), x, y); err != nil {
		t.Fatalf("tap %s: %v", s, err)
	}
}

// swipeUp swipes the finger up the middle of the screen, as the agent's
// swipe(direction=up) does, to see what is below.
func swipeUp(t testing.TB, p *Phone) {
	t.Helper()
	if err := p.Swipe(context.Background(), 540, 1800, 540, 600, 300*time.Millisecond); err != nil {
		t.Fatalf("swipe: %v", err)
	}
}

var clockRE = regexp.MustCompile(`text="[0-9]+:[0-9]{2}" resource-id="` + regexp.QuoteMeta(ClockResourceID) + `" class="android.widget.TextView" package="com.android.systemui" content-desc="[0-9]+:[0-9]{2}"`)

// stableDump is a dump without the ticking status bar clock.
func stableDump(t testing.TB, p *Phone) []byte {
	t.Helper()
	data, err := p.Dump(context.Background())
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	if !clockRE.Match(data) {
		t.Fatalf("dump has no status bar clock")
	}
	return clockRE.ReplaceAll(data, []byte("CLOCK"))
}

func mustLoad(t testing.TB, name string) *Phone {
	t.Helper()
	p, err := Load(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return p
}

func same(a, b []byte) bool { return bytes.Equal(a, b) }
