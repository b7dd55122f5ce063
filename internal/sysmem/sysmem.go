// Package sysmem reads how much memory a machine has free (Linux's and
// Android's /proc/meminfo) and decides whether a model fits in it, and
// whether its repacked copy may be made too. A phone kills apps (and
// eventually droidgo) when memory runs out, and reclaims anonymous memory
// (zram) before it drops file pages: so the weights stay mapped from their
// file, and an anonymous copy is made only when there is room for it.
package sysmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Info is the machine's memory, in bytes.
type Info struct {
	// Total is MemTotal; Available is MemAvailable, the kernel's estimate
	// of what can be used without swapping (free memory plus reclaimable
	// caches).
	Total, Available int64
}

// Read reads /proc/meminfo.
func Read() (Info, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads a /proc/meminfo text.
func Parse(r io.Reader) (Info, error) {
	var in Info
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "MemTotal":
			dst = &in.Total
		case "MemAvailable":
			dst = &in.Available
		default:
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return Info{}, fmt.Errorf("meminfo: %s has no value", k)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 || n > 1<<50 {
			return Info{}, fmt.Errorf("meminfo: bad %s %q", k, f[0])
		}
		unit := int64(1)
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			unit = 1024
		}
		*dst = n * unit
	}
	if err := sc.Err(); err != nil {
		return Info{}, err
	}
	if in.Total == 0 || in.Available == 0 {
		return Info{}, errors.New("meminfo: no MemTotal or MemAvailable")
	}
	return in, nil
}

// Need is what a model needs, in bytes.
type Need struct {
	// Model names the model in messages.
	Model string
	// Weights are mapped from the file; KV is the cache of Sequences
	// sequences of Positions positions each, of type KVType; Scratch the
	// engine's buffers.
	Weights, KV, Scratch int64
	Positions, Sequences int
	KVType               string
	// Repack is the anonymous copy the interleaved kernels would make (0:
	// none pays on this CPU).
	Repack int64
}

// Reserve is what Fit keeps free for the rest of the machine: an eighth
// of its memory, at most 512 MiB (a phone's system and foreground app).
func (i Info) Reserve() int64 { return min(512<<20, i.Total/8) }

// FitError is a model that does not fit; it names every number.
type FitError struct {
	Need Need
	Info Info
}

func (e *FitError) Error() string {
	n := e.Need
	seqs := ""
	if n.Sequences > 1 {
		seqs = fmt.Sprintf(" in each of %d sequences", n.Sequences)
	}
	return fmt.Sprintf("model %s does not fit in memory: it needs %s (weights %s mapped from the file, KV cache %s for %d positions%s at %s, buffers %s) with %s kept free for the system, but MemAvailable is %s (MemTotal %s): close other apps or use a smaller model",
		n.Model, Human(n.Weights+n.KV+n.Scratch), Human(n.Weights), Human(n.KV), n.Positions, seqs, n.KVType, Human(n.Scratch),
		Human(e.Info.Reserve()), Human(e.Info.Available), Human(e.Info.Total))
}

// Fit says whether n fits (a *FitError when it does not: the weights, KV
// and buffers must leave Reserve of MemAvailable free) and whether the
// repacked copy may be made too (repack false, with the reason, when it
// may not). While the copy is made, the file's pages it reads and the copy
// are both in memory, and the copy is anonymous memory a phone can only
// compress or kill for, never drop: so it is made only when the weights
// twice over, KV and buffers still leave Reserve free.
func (i Info) Fit(n Need) (repack bool, why string, err error) {
	base := n.Weights + n.KV + n.Scratch
	if base+i.Reserve() > i.Available {
		return false, "", &FitError{Need: n, Info: i}
	}
	if n.Repack == 0 {
		return false, "", nil
	}
	if base+n.Repack+i.Reserve() > i.Available {
		return false, fmt.Sprintf("the weights are not repacked: their interleaved copy (%s of anonymous memory) would leave less than %s of the %s available; they are read from the file's mapping instead (slower decoding)",
			Human(n.Repack), Human(i.Reserve()), Human(i.Available)), nil
	}
	return true, "", nil
}

// Human writes a byte count as 1.1 GiB, 150 MiB, 12 KiB.
func Human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
