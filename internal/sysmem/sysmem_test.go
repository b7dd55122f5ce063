package sysmem

import (
	"errors"
	"strings"
	"testing"
)

// A phone's /proc/meminfo (8 GiB, 2.5 GiB available), as Android's kernel
// writes it.
const phoneMeminfo = `MemTotal:        7696580 kB
MemFree:          180236 kB
MemAvailable:    2621440 kB
Buffers:            3412 kB
Cached:          2710436 kB
SwapCached:        41216 kB
SwapTotal:       6291452 kB
SwapFree:        3207276 kB
`

func TestParse(t *testing.T) {
	in, err := Parse(strings.NewReader(phoneMeminfo))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Info{Total: 7696580 << 10, Available: 2621440 << 10}); in != want {
		t.Errorf("Parse = %+v, want %+v", in, want)
	}
	for name, text := range map[string]string{
		"no MemAvailable (kernels before 3.14)": "MemTotal: 100 kB\nMemFree: 50 kB\n",
		"empty":                                 "",
		"not a number":                          "MemTotal: lots kB\nMemAvailable: 1 kB\n",
		"no value":                              "MemTotal:\nMemAvailable: 1 kB\n",
		"negative":                              "MemTotal: 100 kB\nMemAvailable: -1 kB\n",
		"absurd":                                "MemTotal: 99999999999999999 kB\nMemAvailable: 1 kB\n",
	} {
		if in, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: Parse = %+v, want an error", name, in)
		}
	}
}

func TestRead(t *testing.T) {
	in, err := Read()
	if err != nil {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	if in.Total <= 0 || in.Available <= 0 || in.Available > in.Total {
		t.Errorf("Read = %+v", in)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(phoneMeminfo)
	f.Fuzz(func(t *testing.T, s string) {
		in, err := Parse(strings.NewReader(s))
		if err == nil && (in.Total <= 0 || in.Available <= 0) {
			t.Fatalf("Parse(%q) = %+v without an error", s, in)
		}
	})
}

// The 1.7B Q4_K_M (weights 1.03 GiB, KV of 8192 positions with the
// agent's rings 217 MiB at f16, buffers 10 MiB: model info and
// local.RunPositions) on phones of 8 and 4 GiB: the refusal names every number
// (weights, KV cache, buffers, what is kept free, MemAvailable, MemTotal);
// a machine with room for the model but not for its repacked copy runs it
// from the file's mapping.
func TestFit(t *testing.T) {
	const MiB = 1 << 20
	need := Need{Model: "Spark-X2.5-1.7B-Q4_K_M.gguf", Weights: 1055 * MiB, KV: 217 * MiB, Scratch: 10 * MiB,
		Positions: 8192, Sequences: 1, KVType: "f16", Repack: 1055 * MiB}
	phone := Info{Total: 7696580 << 10, Available: 4 << 30}
	repack, why, err := phone.Fit(need)
	if err != nil || !repack || why != "" {
		t.Errorf("8 GiB phone, 4 GiB available: repack %v (%q), %v; want the model and its repack", repack, why, err)
	}
	// While the copy is made, the file's pages and the copy are both in
	// memory: 1055+1055+217+10 MiB and 512 MiB free is more than 2.5 GiB.
	tight := Info{Total: 7696580 << 10, Available: 2560 * MiB}
	repack, why, err = tight.Fit(need)
	if err != nil || repack || !strings.Contains(why, "1.0 GiB") || !strings.Contains(why, "2.5 GiB") {
		t.Errorf("2.5 GiB available: repack %v (%q), %v; want the model without its repack, saying why", repack, why, err)
	}
	noRepack := need
	noRepack.Repack = 0
	if repack, why, err := tight.Fit(noRepack); err != nil || repack || why != "" {
		t.Errorf("nothing to repack: %v %q %v", repack, why, err)
	}
	full := Info{Total: 4 << 30, Available: 1200 * MiB}
	if _, _, err := (Info{Total: 4 << 30, Available: 1055*MiB + 217*MiB + 10*MiB + 512*MiB}).Fit(need); err != nil {
		t.Errorf("exactly enough: %v", err)
	}
	_, _, err = full.Fit(need)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("1200 MiB available: %v, want a *FitError", err)
	}
	msg := err.Error()
	for _, want := range []string{"Spark-X2.5-1.7B-Q4_K_M.gguf", "needs 1.3 GiB", "weights 1.0 GiB", "KV cache 217 MiB for 8192 positions at f16",
		"buffers 10 MiB", "512 MiB kept free", "MemAvailable is 1.2 GiB", "MemTotal 4.0 GiB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	// Several sequences: the KV is theirs together, and the message says
	// how many.
	many := need
	many.Sequences, many.KV = 4, 4*217*MiB
	if _, _, err := (Info{Total: 4 << 30, Available: 2000 * MiB}).Fit(many); err == nil || !strings.Contains(err.Error(), "in each of 4 sequences") {
		t.Errorf("4 sequences in 2000 MiB: %v", err)
	}
	// The reserve is an eighth of a small machine.
	if r := (Info{Total: 2 << 30}).Reserve(); r != 256*MiB {
		t.Errorf("reserve of 2 GiB = %d, want 256 MiB", r)
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1 << 10: "1 KiB", 150 << 20: "150 MiB", 1181116006: "1.1 GiB"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}
