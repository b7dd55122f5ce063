// Package clock holds the one context-aware sleep every part of droidgo
// waits with (the loop, replay, the script backend, the simulator), so a
// cancelled run never sits out a timer.
package clock

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx.Err() in the second case. A d of zero or less returns at once, with
// ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
