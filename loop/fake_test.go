package loop

import (
	"context"
	"fmt"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/droidgo/droidgo/device"
)

// fakePhone is a tiny scripted phone for the loop's unit tests: a few
// screens of full-width rows, taps found by row, a back stack and
// switches. The simulator package has the real scenarios; this one lets
// the tests control every failure exactly.
type fakePhone struct {
	mu      sync.Mutex
	screens map[string]fakeScreen
	stack   []string
	vars    map[string]bool
	typed   string
	focus   string

	failDumps int   // the next n dumps fail with ErrDumpNotIdle
	dumpErr   error // every dump fails with it when set
	animate   int   // the next n dumps each differ (a screen still moving)
	truncate  bool  // every dump is cut off before its end
	actions   []string
	dumps     int
}

type fakeScreen struct {
	pkg   string
	items []fakeItem
}

type fakeItem struct {
	text     string
	class    string
	to       string // screen pushed on tap
	toggle   string // var flipped on tap
	field    bool   // an editable field
	password bool
}

func newFakePhone() *fakePhone {
	return &fakePhone{
		stack: []string{"home"},
		vars:  map[string]bool{},
		screens: map[string]fakeScreen{
			"home": {pkg: "com.android.launcher3", items: []fakeItem{
				{text: "Settings", class: "android.widget.TextView", to: "settings"},
				{text: "Clock", class: "android.widget.TextView", to: "clock"},
			}},
			"settings": {pkg: "com.android.settings", items: []fakeItem{
				{text: "Network & internet", class: "android.widget.LinearLayout", to: "internet"},
				{text: "Bluetooth", class: "android.widget.LinearLayout", to: "bluetooth"},
				{text: "Pay now", class: "android.widget.Button", to: "paid"},
				{text: "PIN", class: "android.widget.EditText", field: true, password: true},
				{text: "Name", class: "android.widget.EditText", field: true},
				{text: "About phone", class: "android.widget.TextView"},
			}},
			"internet": {pkg: "com.android.settings", items: []fakeItem{
				{text: "Wi-Fi", class: "android.widget.Switch", toggle: "wifi"},
				{text: "Airplane mode", class: "android.widget.Switch", toggle: "airplane"},
			}},
			"bluetooth": {pkg: "com.android.settings", items: []fakeItem{{text: "Use Bluetooth", class: "android.widget.Switch", toggle: "bt"}}},
			"clock":     {pkg: "com.google.android.deskclock", items: []fakeItem{{text: "Alarm", class: "android.widget.TextView"}}},
			"paid":      {pkg: "com.android.settings", items: []fakeItem{{text: "Paid", class: "android.widget.TextView"}}},
		},
	}
}

const rowH, rowTop, fakeW, fakeH = 150, 200, 1080, 2400

func (p *fakePhone) cur() fakeScreen { return p.screens[p.stack[len(p.stack)-1]] }

func (p *fakePhone) Dump(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dumps++
	if p.dumpErr != nil {
		return nil, p.dumpErr
	}
	if p.failDumps > 0 {
		p.failDumps--
		return nil, fmt.Errorf("uiautomator dump: %w", device.ErrDumpNotIdle)
	}
	s := p.cur()
	var b strings.Builder
	b.WriteString(`<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">`)
	fmt.Fprintf(&b, `<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="%s" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][%d,%d]">`, s.pkg, fakeW, fakeH)
	if p.animate > 0 {
		p.animate--
		fmt.Fprintf(&b, `<node index="0" text="loading %d" resource-id="" class="android.widget.TextView" package="%s" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,50][%d,150]" />`, p.animate, s.pkg, fakeW)
	}
	for i, it := range s.items {
		y := rowTop + i*rowH
		text := it.text
		if it.field && p.focus == it.text && p.typed != "" {
			text = p.typed
		}
		checkable := it.toggle != ""
		// A password field shows its name as a hint and masks what was
		// typed, as Android does.
		hint := ""
		if it.password {
			hint, text = it.text, ""
			if it.field && p.focus == it.text && p.typed != "" {
				text = strings.Repeat("•", len([]rune(p.typed)))
			}
		}
		fmt.Fprintf(&b, `<node index="%d" text="%s" resource-id="" class="%s" package="%s" content-desc="" checkable="%t" checked="%t" clickable="true" enabled="true" focusable="true" focused="%t" scrollable="false" long-clickable="false" password="%t" selected="false" bounds="[0,%d][%d,%d]" hint="%s" />`,
			i+1, html.EscapeString(text), it.class, s.pkg, checkable, p.vars[it.toggle], it.field && p.focus == it.text, it.password, y, fakeW, y+rowH-30, html.EscapeString(hint))
	}
	b.WriteString(`</node></hierarchy>`)
	if p.truncate {
		out := b.String()
		return []byte(out[:strings.LastIndex(out, "<node")]), nil
	}
	return []byte(b.String()), nil
}

func (p *fakePhone) log(format string, args ...any) {
	p.actions = append(p.actions, fmt.Sprintf(format, args...))
}

func (p *fakePhone) Tap(ctx context.Context, x, y int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("tap %d %d", x, y)
	s := p.cur()
	i := (y - rowTop) / rowH
	if y < rowTop || i >= len(s.items) || (y-rowTop)%rowH >= rowH-30 {
		return nil
	}
	it := s.items[i]
	switch {
	case it.to != "":
		p.stack = append(p.stack, it.to)
	case it.toggle != "":
		p.vars[it.toggle] = !p.vars[it.toggle]
	case it.field:
		p.focus = it.text
	}
	return nil
}

func (p *fakePhone) LongPress(ctx context.Context, x, y int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("long %d %d", x, y)
	return nil
}

func (p *fakePhone) Swipe(ctx context.Context, x1, y1, x2, y2 int, d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("swipe %d %d %d %d", x1, y1, x2, y2)
	return nil
}

func (p *fakePhone) Type(ctx context.Context, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("type %q", text)
	p.typed += text
	return nil
}

func (p *fakePhone) Key(ctx context.Context, key string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("key %s", key)
	switch key {
	case "back":
		if len(p.stack) > 1 {
			p.stack = p.stack[:len(p.stack)-1]
		}
	case "home":
		p.stack = []string{"home"}
	}
	return nil
}

func (p *fakePhone) OpenApp(ctx context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log("open %s", name)
	switch strings.ToLower(name) {
	case "settings", "com.android.settings":
		p.stack = []string{"home", "settings"}
		return nil
	}
	return fmt.Errorf("open %q: %w", name, device.ErrUnknownApp)
}

func (p *fakePhone) Size(ctx context.Context) (int, int, error) { return fakeW, fakeH, nil }

func (p *fakePhone) CurrentApp(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur().pkg, nil
}

func (p *fakePhone) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stack[len(p.stack)-1]
}

func (p *fakePhone) did() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.actions...)
}
