package loop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/internal/clock"
	"github.com/droidgo/droidgo/uixml"
)

// errUnreadable marks a dump that failed in a way worth retrying: the
// device was not idle or the XML did not parse (a dump cut short).
type errUnreadable struct{ err error }

func (e *errUnreadable) Error() string { return e.err.Error() }
func (e *errUnreadable) Unwrap() error { return e.err }

// observe reads the screen once it has settled and makes it current. A
// screen that cannot be read after retries is not an error: r.screen is
// nil and the model is told. The error return ends the run.
func (r *runner) observe(ctx context.Context) error {
	scr, xml, err := r.settle(ctx)
	if err != nil {
		var u *errUnreadable
		if !errors.As(err, &u) {
			return err
		}
		r.screen, r.xml, r.dumpErr = nil, nil, err
		r.warn(fmt.Sprintf("the screen could not be read: %v", err))
		r.notes = append(r.notes, fmt.Sprintf("The screen could not be read (%v), so no elements are listed. You may wait or press a key.", err))
		if r.prog.dumpFailure() >= maxFailedSteps {
			return stop("the screen could not be read %d times in a row: %v", maxFailedSteps, err)
		}
		return nil
	}
	r.prog.dumpOK()
	r.screen, r.xml, r.dumpErr = scr, xml, nil
	return nil
}

// settle reads the settled screen with the run's settings.
func (r *runner) settle(ctx context.Context) (*uixml.Screen, []byte, error) {
	return Settle(ctx, r.cfg.Device, r.readOptions(), r.warn)
}

func (r *runner) readOptions() ReadOptions {
	return ReadOptions{PollInterval: r.cfg.PollInterval, SettleTimeout: r.cfg.SettleTimeout, DumpRetries: r.cfg.DumpRetries, Now: r.cfg.Now, Sleep: r.cfg.Sleep}
}

// ReadOptions tune Settle; zero fields mean the defaults (Config's).
type ReadOptions struct {
	// PollInterval is the pause between the dumps and between dump
	// retries; SettleTimeout bounds the wait for a settled screen;
	// DumpRetries is how often a dump that fails with
	// device.ErrDumpNotIdle (or does not parse) is tried again.
	PollInterval  time.Duration
	SettleTimeout time.Duration
	DumpRetries   int
	Now           func() time.Time
	Sleep         func(ctx context.Context, d time.Duration) error
}

// Settle reads dev's screen once it has settled: it dumps until two dumps
// in a row have the same fingerprint, or the settle timeout passes (then
// it takes the last dump), retrying the dump failures uiautomator is known
// for and taking a dump cut short when no whole one comes. What went wrong
// on the way is told to warn. The loop and a replay on a phone read their
// screens here. A screen that cannot be read is an error that wraps the
// last failure (device.ErrDumpNotIdle, or uixml's parse error).
func Settle(ctx context.Context, dev device.Device, o ReadOptions, warn func(string)) (*uixml.Screen, []byte, error) {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = DefaultSettleTimeout
	}
	if o.DumpRetries <= 0 {
		o.DumpRetries = DefaultDumpRetries
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = clock.Sleep
	}
	if warn == nil {
		warn = func(string) {}
	}
	deadline := o.Now().Add(o.SettleTimeout)
	prev, prevXML, err := dump(ctx, dev, o, warn)
	if err != nil {
		return nil, nil, err
	}
	for {
		if !o.Now().Before(deadline) {
			warn(fmt.Sprintf("the screen did not settle within %v; using the last dump", o.SettleTimeout))
			return prev, prevXML, nil
		}
		if err := o.Sleep(ctx, o.PollInterval); err != nil {
			return nil, nil, err
		}
		cur, curXML, err := dump(ctx, dev, o, warn)
		if err != nil {
			return nil, nil, err
		}
		if cur.Fingerprint() == prev.Fingerprint() {
			return cur, curXML, nil
		}
		prev, prevXML = cur, curXML
	}
}

// dump reads and parses one screen, retrying the failures uiautomator is
// known for.
func dump(ctx context.Context, dev device.Device, o ReadOptions, warn func(string)) (*uixml.Screen, []byte, error) {
	var last error
	// A cut-off dump still has most of the screen; it is used when no
	// whole one comes.
	var partial *uixml.Screen
	var partialXML []byte
	for attempt := 0; attempt <= o.DumpRetries; attempt++ {
		if attempt > 0 {
			if err := o.Sleep(ctx, o.PollInterval); err != nil {
				return nil, nil, err
			}
		}
		xml, err := dev.Dump(ctx)
		if err == nil {
			var scr *uixml.Screen
			scr, err = uixml.Parse(xml)
			if err == nil {
				if attempt > 0 {
					warn(fmt.Sprintf("the screen dump failed %d time(s) before it worked (%v)", attempt, last))
				}
				return scr, xml, nil
			}
			if errors.Is(err, uixml.ErrTruncated) && scr != nil {
				partial, partialXML = scr, xml
			}
			err = &errUnreadable{fmt.Errorf("parse screen: %w", err)}
		} else if errors.Is(err, device.ErrDumpNotIdle) {
			err = &errUnreadable{fmt.Errorf("dump screen: %w", err)}
		} else {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("dump screen: %w", err)
		}
		last = err
	}
	if partial != nil {
		warn(fmt.Sprintf("using an incomplete screen dump (%v)", last))
		return partial, partialXML, nil
	}
	return nil, nil, last
}

// screenInfo describes the current screen for events.
func (r *runner) screenInfo(ctx context.Context) *ScreenInfo {
	info := NewScreenInfo(r.screen, r.xml)
	if info != nil && info.App == "" {
		if app, err := r.cfg.Device.CurrentApp(ctx); err == nil {
			info.App = app
		}
	}
	return info
}

// NewScreenInfo describes screen s, dumped as xml, for events (nil for
// none). The loop and a replay describe their screens here.
func NewScreenInfo(s *uixml.Screen, xml []byte) *ScreenInfo {
	if s == nil {
		return nil
	}
	info := &ScreenInfo{
		Width:       s.Width,
		Height:      s.Height,
		App:         s.App(),
		Prompt:      s.Prompt(),
		Fingerprint: s.Fingerprint(),
		XML:         string(xml),
		Elements:    make([]ElementInfo, 0, len(s.Elements)),
	}
	for _, e := range s.Elements {
		ei := ElementInfo{Index: e.Index, Label: e.Label, Kind: e.Kind, State: checkState(e)}
		if e.Node >= 0 && e.Node < len(s.Nodes) {
			b := s.Nodes[e.Node].Bounds
			ei.Bounds = [4]int{b.X1, b.Y1, b.X2, b.Y2}
		}
		info.Elements = append(info.Elements, ei)
	}
	return info
}

// checkState words a checkable element's state as the prompt does.
func checkState(e uixml.Element) string {
	switch {
	case !e.Checkable:
		return ""
	case e.Kind == "switch":
		return onOff(e.Checked)
	case e.Checked:
		return "checked"
	}
	return "unchecked"
}
