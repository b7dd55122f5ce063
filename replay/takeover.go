package replay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/droidgo/droidgo/device"
	"github.com/droidgo/droidgo/loop"
	"github.com/droidgo/droidgo/uixml"
)

// takeover hands the task to the agent where the replay stopped (s): a run
// of the loop on the recorded task whose history shows what was done. It
// ends the agent's run at the first turn after one of its actions where
// the screen is again that of a recorded step from s.at on, and the step
// can be carried out there, and returns that step to resume at; or it
// returns the result of a run the agent ended itself.
func (r *runner) takeover(ctx context.Context, s *stopped) (resume int, res *Result, err error) {
	r.takeovers++
	if r.takeovers > len(r.plan.Steps) {
		return 0, nil, &stopped{at: s.at, kind: s.kind, why: s.why + "; the model took over as many times as there are steps", rep: s.rep}
	}
	r.warn(fmt.Sprintf("the model takes over from step %d (recorded step %d) with the task %q; the replay resumes if a recorded screen comes back", s.at+1, r.plan.Number(s.at), r.plan.Task))
	w := &watched{Device: r.cfg.Device}
	offset := r.n
	resumeAt := -1
	lc := *r.cfg.Agent
	lc.Task = r.plan.Task
	lc.Device = w
	lc.DeviceName = r.cfg.DeviceName
	lc.Previous = append(slices.Clone(lc.Previous), r.history...)
	lc.Approver, lc.StepMode, lc.ConsultAlways = r.cfg.Approver, r.cfg.StepMode, r.cfg.ConsultAlways
	lc.Verify = r.cfg.Verify
	lc.Now, lc.Sleep = r.cfg.Now, r.cfg.Sleep
	lc.OnEvent = func(ev loop.Event) {
		switch ev.Type {
		case loop.EvRunStarted, loop.EvFinished:
			return // the replay's own run_started and finished frame the run
		case loop.EvAction:
			if ev.Call != nil && ev.Outcome == loop.OutcomeDone {
				r.history = append(r.history, fmt.Sprintf("%s -> done by the model", ev.Call.String()))
			}
		}
		ev.Step += offset
		if ev.Type == loop.EvStepStarted {
			r.n = ev.Step
		}
		r.cfg.OnEvent(ev)
	}
	lc.Hold = func(ctx context.Context, stage loop.Stage) error {
		if err := r.cfg.Hold(ctx, stage); err != nil {
			return err
		}
		if stage != loop.HoldTurn || !w.acted() {
			return nil
		}
		if j, ok := r.resumable(s.at, w.last()); ok {
			resumeAt = j
			return errResume
		}
		return nil
	}
	agentRes := loop.Run(ctx, lc)
	if resumeAt >= 0 {
		r.replayed += resumeAt - s.at // carried out by the agent
		if err := r.read(ctx); err != nil {
			return 0, nil, err
		}
		r.emit(loop.Event{Type: loop.EvWarning, Text: fmt.Sprintf("recorded step %d's screen is back: the replay resumes at step %d", r.plan.Number(resumeAt), resumeAt+1),
			Replay: &loop.ReplayInfo{Step: r.plan.Number(resumeAt), Resumed: true}})
		return resumeAt, nil, nil
	}
	if ctx.Err() != nil {
		return 0, nil, ctx.Err()
	}
	why := fmt.Sprintf("the model took over at step %d and ended the run: %s", s.at+1, agentRes.Reason)
	return 0, &Result{
		Run:       loop.Result{Success: agentRes.Success, Reason: why, Summary: agentRes.Summary},
		StoppedAt: s.at + 1, Why: why, Stop: &loop.ReplayStop{Kind: loop.StopAgent},
	}, nil
}

// errResume ends the agent's run when the replay can resume.
var errResume = fmt.Errorf("a recorded screen is back: the replay resumes")

// resumable finds the first step from `from` on whose recorded screen the
// live dump xml is, and which can be carried out there.
func (r *runner) resumable(from int, xml []byte) (int, bool) {
	if xml == nil {
		return 0, false
	}
	scr, _ := uixml.Parse(xml)
	if scr == nil {
		return 0, false
	}
	saved := r.scr
	r.scr = scr
	defer func() { r.scr = saved }()
	sig := scr.Signature()
	for j := from; j < len(r.plan.Steps); j++ {
		st := r.plan.Steps[j]
		if st.Screen.Empty() || st.Screen.Similarity(sig) < r.cfg.MinSimilarity {
			continue
		}
		if _, _, _, err := r.match(j, st); err == nil {
			return j, true
		}
	}
	return 0, false
}

// watched is the device the agent drives: it keeps the last dump, and
// whether an action was carried out.
type watched struct {
	device.Device
	mu      sync.Mutex
	xml     []byte
	actions int
}

func (w *watched) Dump(ctx context.Context) ([]byte, error) {
	b, err := w.Device.Dump(ctx)
	if err == nil {
		w.mu.Lock()
		w.xml = b
		w.mu.Unlock()
	}
	return b, err
}

func (w *watched) did(err error) error {
	if err == nil {
		w.mu.Lock()
		w.actions++
		w.mu.Unlock()
	}
	return err
}

func (w *watched) last() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.xml
}

func (w *watched) acted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.actions > 0
}

func (w *watched) Tap(ctx context.Context, x, y int) error { return w.did(w.Device.Tap(ctx, x, y)) }
func (w *watched) LongPress(ctx context.Context, x, y int) error {
	return w.did(w.Device.LongPress(ctx, x, y))
}
func (w *watched) Swipe(ctx context.Context, x1, y1, x2, y2 int, d time.Duration) error {
	return w.did(w.Device.Swipe(ctx, x1, y1, x2, y2, d))
}
func (w *watched) Type(ctx context.Context, text string) error {
	return w.did(w.Device.Type(ctx, text))
}
func (w *watched) Key(ctx context.Context, key string) error { return w.did(w.Device.Key(ctx, key)) }
func (w *watched) OpenApp(ctx context.Context, name string) error {
	return w.did(w.Device.OpenApp(ctx, name))
}

// Apps lists the launchable apps when the phone can (loop.AppLister), so
// the agent's open_app is checked as on the phone itself.
func (w *watched) Apps(ctx context.Context) ([]string, error) {
	if l, ok := w.Device.(loop.AppLister); ok {
		return l.Apps(ctx)
	}
	return nil, errNoAppList
}

var errNoAppList = fmt.Errorf("the phone cannot list its apps")
