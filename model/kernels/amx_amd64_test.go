//go:build !purego

package kernels

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	"github.com/droidgo/droidgo/model/quant"
)

func hasLevel(name string) bool {
	for _, l := range Levels() {
		if l == name {
			return true
		}
	}
	return false
}

// amxSkip is the message of a test that needs the amx level on a machine
// where it is not offered; under DROIDGO_REQUIRE_ISA=amx it fails instead.
func amxSkip(t *testing.T) {
	t.Helper()
	if os.Getenv("DROIDGO_REQUIRE_ISA") == "amx" {
		t.Fatalf("DROIDGO_REQUIRE_ISA=amx but the amx level is not offered: %v", amxErr)
	}
	t.Skipf("no amx level (%v): AMX kernels NOT tested on this machine (DROIDGO_REQUIRE_ISA=amx makes this fail)", amxErr)
}

// TestAMXLevel: where the CPU has AMX the level is offered (or the reason
// is a refusal this test shows), and the selection refuses AMX when the
// kernel denies the tile state or the probe disagrees with the reference.
func TestAMXLevel(t *testing.T) {
	denied := func() error { return syscall.EPERM }
	granted := func() error { return nil }
	wrong := func() error { return errors.New("got 3, want 4") }
	for _, c := range []struct {
		name    string
		cpu     bool
		request func() error
		probe   func() error
		ok      bool
	}{
		{"no AMX in CPUID", false, granted, amxProbe, false},
		{"permission denied", true, denied, amxProbe, false},
		{"probe disagrees", true, granted, wrong, false},
		{"all agree", true, granted, func() error { return nil }, true},
	} {
		err := amxUsable(c.cpu, c.request, c.probe)
		if (err == nil) != c.ok {
			t.Errorf("%s: amxUsable = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if cpuHasAMX() && !hasLevel("amx") {
		t.Logf("the CPU has AMX but the level is not offered: %v", amxErr)
	}
	if !hasLevel("amx") {
		amxSkip(t)
	}
	if got := Levels()[len(Levels())-1]; got != "amx" {
		t.Errorf("best level = %q, want amx", got)
	}
}

// The assembly packers write exactly what their Go forms do.
func TestAMXPackers(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(39, 40))
	for _, nb := range []int{1, 3, 64} {
		rb := nb*quant.BlockQ8_0Size + 5
		src := make([]byte, 16*rb)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		pk1, pk2 := make([]byte, 512*nb), make([]byte, 512*nb)
		ws1, ws2 := make([]float32, 16*nb), make([]float32, 16*nb)
		packQ80(pk1, ws1, src, rb, nb)
		packQ80AMX(&pk2[0], &ws2[0], &src[0], rb, nb)
		if !bytes.Equal(pk1, pk2) {
			t.Fatalf("packQ80AMX nb=%d: quants differ from packQ80", nb)
		}
		for i := range ws1 {
			if math.Float32bits(ws1[i]) != math.Float32bits(ws2[i]) && !(ws1[i] != ws1[i] && ws2[i] != ws2[i]) { // NaN payloads may differ
				t.Fatalf("packQ80AMX nb=%d: scale %d = %v, want %v", nb, i, ws2[i], ws1[i])
			}
		}
	}
}

// pack16Q4K / pack16Q6K interleave 16 plain rows exactly as packGroupQ4K /
// packGroupQ6K do 8 at a time.
func TestAMXPack16(t *testing.T) {
	if !hasLevel("amx") {
		amxSkip(t)
	}
	r := rand.New(rand.NewPCG(41, 42))
	var planes [256]byte
	for _, c := range []struct {
		typ    quant.Type
		pack16 func(g, src []byte, rb int, planes *[256]byte)
		pack8  func(gb, src []byte, rb int)
	}{
		{quant.Q4_K, pack16Q4K, packGroupQ4K},
		{quant.Q6_K, pack16Q6K, packGroupQ6K},
	} {
		bs := c.typ.TypeSize()
		rb := 3*bs + 7
		src := make([]byte, 16*rb)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		want := make([]byte, 16*bs)
		c.pack8(want[:8*bs], src[bs:], rb)
		c.pack8(want[8*bs:], src[8*rb+bs:], rb)
		got := make([]byte, 16*bs)
		c.pack16(got, src[bs:], rb, &planes)
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%v: byte %d of the group blocks = %#x, want %#x", c.typ, i, got[i], want[i])
				}
			}
		}
	}
}
