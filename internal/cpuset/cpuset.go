// Package cpuset reads the CPUs of a Linux machine from sysfs
// (/sys/devices/system/cpu) and chooses the ones the engine runs on: the
// fastest cluster(s), one thread per physical core. Phones mix fast and
// slow cores (Snapdragon 8 Elite 2+6, 8 Gen 3 1+3+2+2, Tensor G4 1+3+4,
// Dimensity 9400 1+3+4), and so do Intel's hybrids (P and E cores).
//
// Speed comes from cpu_capacity (the scheduler's relative capacity, 1024
// for the biggest core: arm64 and RISC-V kernels), else from
// cpufreq/cpuinfo_max_freq, else all CPUs count as equal; Intel hybrids
// also name their P cores in /sys/devices/cpu_core/cpus. The reader takes
// an fs.FS so tests run on copied trees.
package cpuset

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// SysRoot is where the kernel describes the CPUs, and the root of the
// trees Read takes (with "devices/cpu_core" beside it on Intel hybrids).
const SysRoot = "/sys"

// CPU is one logical CPU.
type CPU struct {
	ID int
	// Capacity is cpu_capacity (0: not reported).
	Capacity int
	// MaxFreq is cpuinfo_max_freq in kHz (0: not reported).
	MaxFreq int
	// Core identifies the physical core (package and core id); SMT
	// siblings share it.
	Core string
	// Efficiency is true for the E cores of an Intel hybrid.
	Efficiency bool
}

// speed orders CPUs: the capacity when the kernel reports it (it folds
// in both the core type and its clock), else the clock, scaled down for
// an Intel E core (whose clock is not comparable to a P core's).
func (c CPU) speed() int {
	switch {
	case c.Capacity > 0:
		return c.Capacity
	case c.MaxFreq > 0 && c.Efficiency:
		return c.MaxFreq / 2
	case c.MaxFreq > 0:
		return c.MaxFreq
	case c.Efficiency:
		return 1
	}
	return 2
}

// Read reads the online CPUs from sys, a tree laid out like /sys
// (devices/system/cpu/online, devices/system/cpu/cpuN/...). Files that are
// missing leave their field zero; a tree without CPUs is an error.
func Read(sys fs.FS) ([]CPU, error) {
	const base = "devices/system/cpu"
	var ids []int
	if b, err := fs.ReadFile(sys, base+"/online"); err == nil {
		ids, err = ParseList(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s/online: %w", base, err)
		}
	} else {
		entries, err := fs.ReadDir(sys, base)
		if err != nil {
			return nil, fmt.Errorf("read CPUs: %w", err)
		}
		for _, e := range entries {
			if n, ok := strings.CutPrefix(e.Name(), "cpu"); ok {
				if id, err := strconv.Atoi(n); err == nil {
					ids = append(ids, id)
				}
			}
		}
		sort.Ints(ids)
	}
	if len(ids) == 0 {
		return nil, errors.New("read CPUs: none online")
	}
	var atoms []int
	if b, err := fs.ReadFile(sys, "devices/cpu_atom/cpus"); err == nil {
		atoms, _ = ParseList(strings.TrimSpace(string(b)))
	}
	readInt := func(name string) int {
		b, err := fs.ReadFile(sys, name)
		if err != nil {
			return 0
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	cpus := make([]CPU, 0, len(ids))
	for _, id := range ids {
		dir := fmt.Sprintf("%s/cpu%d", base, id)
		c := CPU{
			ID:         id,
			Capacity:   readInt(dir + "/cpu_capacity"),
			MaxFreq:    readInt(dir + "/cpufreq/cpuinfo_max_freq"),
			Efficiency: slices.Contains(atoms, id),
		}
		c.Core = fmt.Sprintf("%d:%d", readInt(dir+"/topology/physical_package_id"), readInt(dir+"/topology/core_id"))
		if _, err := fs.Stat(sys, dir+"/topology/core_id"); err != nil {
			c.Core = "cpu" + strconv.Itoa(id) // no topology: every CPU its own core
		}
		cpus = append(cpus, c)
	}
	return cpus, nil
}

// Cluster is a group of CPUs of the same speed.
type Cluster struct {
	CPUs  []int
	Speed int
}

// Choice is the CPUs the engine runs on, and why.
type Choice struct {
	// CPUs are the chosen logical CPUs, one per physical core.
	CPUs []int
	// Clusters are every cluster, fastest first.
	Clusters []Cluster
	// Used is how many of Clusters the choice takes CPUs from.
	Used int
}

// minShare is how fast, against the fastest core, a cluster must be to be
// used: a core at 60 % of the fastest still adds throughput when work is
// taken in small pieces (each piece it holds at the end of a pass delays
// the pass by under twice a piece's time on a fast core), while the
// phones' little cores (A520, A55: a third of the big ones or less) mostly
// add waiting and share the memory bandwidth decode is bound by. It is a
// rule of thumb, not a measurement on each phone: --cpus overrides it.
const minShare = 0.6

// Choose picks the CPUs for the engine from cpus, restricted to allowed
// (the process's affinity; nil: all): one logical CPU per physical core,
// from the clusters at least minShare as fast as the fastest. threads > 0
// asks for that many: the fastest cores first, then slower clusters if it
// must.
func Choose(cpus []CPU, allowed []int, threads int) Choice {
	var usable []CPU
	seenCore := map[string]bool{}
	for _, c := range cpus {
		if allowed != nil && !slices.Contains(allowed, c.ID) {
			continue
		}
		if seenCore[c.Core] {
			continue // an SMT sibling: same execution units
		}
		seenCore[c.Core] = true
		usable = append(usable, c)
	}
	if len(usable) == 0 {
		return Choice{}
	}
	bySpeed := map[int][]int{}
	for _, c := range usable {
		bySpeed[c.speed()] = append(bySpeed[c.speed()], c.ID)
	}
	var ch Choice
	for s, ids := range bySpeed {
		ch.Clusters = append(ch.Clusters, Cluster{CPUs: ids, Speed: s})
	}
	sort.Slice(ch.Clusters, func(i, j int) bool { return ch.Clusters[i].Speed > ch.Clusters[j].Speed })
	top := ch.Clusters[0].Speed
	for _, cl := range ch.Clusters {
		want := float64(cl.Speed) >= minShare*float64(top)
		if threads > 0 {
			want = len(ch.CPUs) < threads
		}
		if !want {
			break
		}
		ch.Used++
		for _, id := range cl.CPUs {
			if threads > 0 && len(ch.CPUs) == threads {
				break
			}
			ch.CPUs = append(ch.CPUs, id)
		}
	}
	sort.Ints(ch.CPUs)
	return ch
}

// Describe says which cores run the engine, for headers: "CPUs 4-7, the
// fastest 4 of 8 cores".
func (ch Choice) Describe() string {
	total := 0
	for _, cl := range ch.Clusters {
		total += len(cl.CPUs)
	}
	switch {
	case len(ch.CPUs) == 0:
		return "no CPUs"
	case len(ch.Clusters) == 1:
		return fmt.Sprintf("CPUs %s, %d alike cores", FormatList(ch.CPUs), total)
	case len(ch.CPUs) == total:
		return fmt.Sprintf("CPUs %s, all %d cores (%d kinds)", FormatList(ch.CPUs), total, len(ch.Clusters))
	}
	return fmt.Sprintf("CPUs %s, the fastest %d of %d cores", FormatList(ch.CPUs), len(ch.CPUs), total)
}

// ParseList parses a CPU list as sysfs and taskset write it: "0-3,6,8-9".
func ParseList(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty CPU list")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range", s, part)
			}
		}
		if b >= MaxCPU {
			return nil, fmt.Errorf("CPU list %q: CPU %d is beyond %d", s, b, MaxCPU-1)
		}
		for i := a; i <= b; i++ {
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// MaxCPU bounds CPU numbers (the kernel's affinity masks here hold 1024).
const MaxCPU = 1024

// FormatList writes ids as "0-3,6".
func FormatList(ids []int) string {
	ids = slices.Clone(ids)
	sort.Ints(ids)
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		} else {
			fmt.Fprintf(&b, "%d", ids[i])
		}
		i = j + 1
	}
	return b.String()
}

// Placement is where an engine's threads run.
type Placement struct {
	// Threads is the number of engine threads (0: the engine's default).
	Threads int
	// CPUs are the CPUs the threads are pinned to (nil: not pinned).
	CPUs []int
	// What says it in a few words, for headers ("CPUs 2-7, the fastest
	// 6 of 8 cores").
	What string
}

// Place decides where an engine's threads run on this machine: on cpus
// when given (--cpus; each must be one this process may run on), else on
// the fastest cores (Choose), pinned only when that leaves slower cores
// out (on a machine of alike cores the scheduler is left to place them,
// as before). threads > 0 (--threads) is the number of threads; else one
// per chosen core.
func Place(threads int, cpus []int) (Placement, error) {
	if len(cpus) > 0 {
		if allowed, err := Allowed(); err == nil && allowed != nil {
			for _, c := range cpus {
				if !slices.Contains(allowed, c) {
					return Placement{}, fmt.Errorf("CPU %d is not one this process may run on (%s)", c, FormatList(allowed))
				}
			}
		}
		if threads <= 0 {
			threads = len(cpus)
		}
		return Placement{Threads: threads, CPUs: cpus, What: "CPUs " + FormatList(cpus)}, nil
	}
	return placeAuto(threads), nil
}

func placeAuto(threads int) Placement {
	all, err := System()
	if err != nil {
		return Placement{Threads: threads, What: "not pinned (no CPU topology on this OS)"}
	}
	allowed, _ := Allowed()
	ch := Choose(all, allowed, threads)
	if len(ch.CPUs) == 0 {
		return Placement{Threads: threads, What: "not pinned (no CPU this process may use was found)"}
	}
	if threads <= 0 {
		threads = len(ch.CPUs)
	}
	if len(ch.Clusters) == 1 || !CanPin {
		return Placement{Threads: threads, What: ch.Describe() + ", not pinned"}
	}
	return Placement{Threads: threads, CPUs: ch.CPUs, What: ch.Describe()}
}
