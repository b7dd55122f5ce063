package adb_test

import (
	"os"
	"testing"

	"github.com/droidgo/droidgo/device/adb"
	"github.com/droidgo/droidgo/simulator/adbd"
)

// BenchmarkDumpOverADB measures one Dump (uiautomator dump + sync pull of a
// 52 KB real dump) through the real adb server and the fake device: the
// protocol overhead droidgo adds to each step, without a phone's own
// uiautomator time.
func BenchmarkDumpOverADB(b *testing.B) {
	xml, err := os.ReadFile("testdata/dialer-dump.xml")
	if err != nil {
		b.Fatal(err)
	}
	r := newBenchRig(b, adbd.Options{})
	r.phone.XML = xml
	d, err := adb.Open(b.Context(), r.client, r.serial)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(xml)))
	for b.Loop() {
		if _, err := d.Dump(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTapOverADB measures one action (a shell v2 round trip).
func BenchmarkTapOverADB(b *testing.B) {
	r := newBenchRig(b, adbd.Options{})
	d, err := adb.Open(b.Context(), r.client, r.serial)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := d.Tap(b.Context(), 10, 10); err != nil {
			b.Fatal(err)
		}
	}
}
