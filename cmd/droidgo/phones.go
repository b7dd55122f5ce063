package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/report"
)

// target is one phone a run was asked to drive: a simulator scenario or an
// ADB serial ("" for the default device).
type target struct{ sim, serial string }

// targets lists the phones of a run from --sim and --device (repeatable;
// --device all is every attached phone), or the one device of the
// settings.
func (o *runOptions) targets(ctx context.Context, serial string) ([]target, error) {
	if len(o.sims) > 0 && o.set["device"] {
		return nil, usageErr(errors.New("--sim and --device cannot be used together"))
	}
	var ts []target
	for _, s := range o.sims {
		if s == "" {
			return nil, usageErr(errors.New("--sim needs a scenario name (see 'droidgo sim list')"))
		}
		ts = append(ts, target{sim: s})
	}
	if len(ts) > 0 {
		return ts, nil
	}
	if !o.set["device"] {
		return []target{{serial: serial}}, nil
	}
	seen := map[string]bool{}
	for _, s := range o.devices {
		switch {
		case s == "":
			return nil, usageErr(errors.New("--device needs a serial (see 'droidgo devices'), or all"))
		case s == "all" && len(o.devices) > 1:
			return nil, usageErr(errors.New("--device all already names every attached phone; give it alone"))
		case s == "all":
			return o.attached(ctx)
		case seen[s]:
			return nil, usageErr(fmt.Errorf("--device %s is given twice", s))
		}
		seen[s] = true
		ts = append(ts, target{serial: s})
	}
	return ts, nil
}

// attached lists the phones the adb server has online.
func (o *runOptions) attached(ctx context.Context) ([]target, error) {
	c, err := o.d.adbClient()
	if err != nil {
		return nil, usageErr(err)
	}
	devs, err := c.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("--device all: %w", err)
	}
	var ts []target
	var other []string
	for _, dv := range devs {
		if dv.State == "device" {
			ts = append(ts, target{serial: dv.Serial})
		} else {
			other = append(other, dv.Serial+" ("+dv.State+")")
		}
	}
	if len(ts) == 0 {
		msg := "--device all: no phone is attached and online (see 'droidgo devices')"
		if len(other) > 0 {
			msg += "; not ready: " + strings.Join(other, ", ")
		}
		return nil, errors.New(msg)
	}
	return ts, nil
}

// phone is one device of a run and what drives it.
type phone struct {
	target
	dev  device.Device
	name string // as events and recordings name it, unique in the run
	task string
	// recPath is the phone's recording ("" for none).
	recPath string
}

// openPhones opens every target. Names are made unique (a scenario run
// twice is "sim:wifi" and "sim:wifi#2"), since events are told apart by
// them. On an error the phones opened so far are closed.
func (d *deps) openPhones(ctx context.Context, ts []target) ([]*phone, error) {
	var ps []*phone
	used := map[string]int{}
	for _, t := range ts {
		dev, name, err := d.openDevice(ctx, t.sim, t.serial)
		if err != nil {
			closePhones(ps)
			if len(ts) > 1 {
				what := "device " + t.serial
				if t.sim != "" {
					what = "simulator scenario " + t.sim
				}
				var ee *exitError
				if errors.As(err, &ee) {
					return nil, err
				}
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			return nil, err
		}
		used[name]++
		if n := used[name]; n > 1 {
			name = fmt.Sprintf("%s#%d", name, n)
		}
		ps = append(ps, &phone{target: t, dev: dev, name: name})
	}
	return ps, nil
}

func closePhones(ps []*phone) {
	for _, p := range ps {
		closeDevice(p.dev)
	}
}

// fileName is a phone's name made safe for a file name: "sim:wifi" is
// "sim-wifi", "emulator-5554 (Pixel 7)" is "emulator-5554".
func (p *phone) fileName() string {
	name := p.name
	if p.sim == "" {
		// A phone's display name adds its model to the serial.
		name, _, _ = strings.Cut(name, " (")
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// recordPaths gives each phone its recording from --record: with one
// phone the path itself; with several, a directory (an existing one, or a
// path ending in /) gets DIR/PHONE.jsonl, and a pattern names {device}.
func recordPaths(record string, ps []*phone) error {
	if record == "" {
		return nil
	}
	isDir := strings.HasSuffix(record, "/") || strings.HasSuffix(record, string(filepath.Separator))
	if st, err := os.Stat(record); err == nil && st.IsDir() {
		isDir = true
	}
	hasPattern := strings.Contains(record, "{device}")
	switch {
	case isDir:
		if err := os.MkdirAll(record, 0o755); err != nil {
			return usageErr(fmt.Errorf("--record: %w", err))
		}
	case !hasPattern && len(ps) > 1:
		return usageErr(fmt.Errorf("--record %s is one file for %d phones: give a directory (DIR/) or a pattern with {device} (runs/{device}.jsonl)", record, len(ps)))
	}
	seen := map[string]bool{}
	for _, p := range ps {
		path := record
		switch {
		case isDir:
			path = filepath.Join(record, p.fileName()+".jsonl")
		case hasPattern:
			path = strings.ReplaceAll(record, "{device}", p.fileName())
		}
		if seen[path] {
			return usageErr(fmt.Errorf("--record %s gives two phones the file %s", record, path))
		}
		seen[path] = true
		p.recPath = path
	}
	return nil
}

// phonesText prints the events of several phones as plain text: each
// phone's lines through a printer of its own, each line prefixed with the
// phone's name. Lines are written whole, so the phones' streams interleave
// line by line, never inside one.
type phonesText struct {
	mu       sync.Mutex
	w        *termsafe.Writer
	width    int
	printers map[string]*report.Text
	bufs     map[string]*prefixed
}

func newPhonesText(w io.Writer, names []string) *phonesText {
	t := &phonesText{w: termsafe.NewWriter(w), printers: map[string]*report.Text{}, bufs: map[string]*prefixed{}}
	for _, n := range names {
		t.width = max(t.width, len(termsafe.String(n)))
	}
	for _, n := range names {
		t.add(n)
	}
	return t
}

func (t *phonesText) add(name string) *report.Text {
	b := &prefixed{out: t, prefix: fmt.Sprintf("[%-*s] ", t.width, termsafe.String(name))}
	t.bufs[name] = b
	p := report.NewText(b)
	t.printers[name] = p
	return p
}

// Consume prints ev with its phone's printer: a consumer for sink.New.
func (t *phonesText) Consume(ev loop.Event) error {
	p := t.printers[ev.Device]
	if p == nil {
		p = t.add(ev.Device)
	}
	p.Event(ev)
	if ev.Type == loop.EvFinished {
		t.bufs[ev.Device].flush()
	}
	if err := p.Err(); err != nil {
		return err
	}
	return t.w.Err()
}

// prefixed collects one phone's output and writes it a whole line at a
// time, with the phone's prefix.
type prefixed struct {
	out    *phonesText
	prefix string
	buf    []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.line(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	return len(b), p.out.w.Err()
}

func (p *prefixed) line(l []byte) {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	if len(l) == 1 { // an empty line: no trailing space after the name
		p.out.w.Write([]byte(strings.TrimRight(p.prefix, " ")))
	} else {
		p.out.w.Write([]byte(p.prefix))
	}
	p.out.w.Write(l)
}

// flush writes a last line without its newline.
func (p *prefixed) flush() {
	if len(p.buf) > 0 {
		p.line(append(p.buf, '\n'))
		p.buf = nil
	}
}
