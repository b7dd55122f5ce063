package tui

import (
	"context"
	"sync"

	"github.com/droidgo/droidgo/loop"
)

// approval is a call waiting for the user. The UI answers on reply, which
// has room for one decision so answering never blocks the UI.
type approval struct {
	req   loop.ApprovalRequest
	reply chan loop.Decision
}

// gate is the state the UI shares with the loop's goroutine: whether the
// run is paused, whether every call waits for approval, and whether the UI
// is gone. The UI changes it from Update (no I/O, only a mutex); Hold and
// Approve read it.
type gate struct {
	mu       sync.Mutex
	paused   bool
	resumed  chan struct{} // closed while not paused
	stepMode bool
	gone     chan struct{} // closed when the UI has stopped
	goneOnce sync.Once
}

func newGate(stepMode bool) *gate {
	r := make(chan struct{})
	close(r)
	return &gate{resumed: r, stepMode: stepMode, gone: make(chan struct{})}
}

func (g *gate) setPaused(p bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == g.paused {
		return
	}
	g.paused = p
	if p {
		g.resumed = make(chan struct{})
	} else {
		close(g.resumed)
	}
}

func (g *gate) isPaused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

func (g *gate) setStepMode(on bool) {
	g.mu.Lock()
	g.stepMode = on
	g.mu.Unlock()
}

func (g *gate) inStepMode() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stepMode
}

// stop releases everyone waiting: the UI will answer nothing any more.
func (g *gate) stop() {
	g.goneOnce.Do(func() { close(g.gone) })
	g.setPaused(false)
}

// wait blocks while the run is paused. It returns early when ctx ends (with
// its error) or when the UI stops (with nil: nobody can resume any more, so
// holding the run would hang it).
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	r := g.resumed
	g.mu.Unlock()
	select {
	case <-r:
		return nil
	case <-g.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
