package cpuset

import (
	"os"

	"golang.org/x/sys/unix"
)

// System reads this machine's CPUs from /sys.
func System() ([]CPU, error) { return Read(os.DirFS(SysRoot)) }

// Allowed returns the CPUs this process may run on (its affinity mask,
// which a cpuset cgroup or taskset may have narrowed).
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var ids []int
	for i := 0; i < MaxCPU; i++ {
		if set.IsSet(i) {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

// Pin restricts the calling OS thread to cpus (sched_setaffinity). The
// caller locks its goroutine to the thread first.
func Pin(cpus []int) error {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}

// CanPin reports whether Pin does anything here.
const CanPin = true
