package tui

import (
	"testing"

	"github.com/droidgo/droidgo/tui/internal/demo"
)

// BenchmarkRender measures drawing one frame of a finished five-step run.
func BenchmarkRender(b *testing.B) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		b.Run(frameName(size.w, size.h), func(b *testing.B) {
			c := &fakeClock{t: demo.Start}
			m := newUI(Options{}, newGate(false), c.now)
			m.Update(teaSize(size.w, size.h))
			send(m, demo.Events()...)
			b.ReportAllocs()
			for b.Loop() {
				_ = m.render()
			}
		})
	}
}

func frameName(w, h int) string { return itoa(w) + "x" + itoa(h) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
