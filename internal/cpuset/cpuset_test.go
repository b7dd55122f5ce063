package cpuset

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the sysfs trees in testdata from the tables below")

// A machine is the part of sysfs the reader looks at, written as the
// kernel would for a SoC. These are NOT copies of real phones' trees (no
// phone is at hand); they are built from public facts:
//   - core types, counts and top clocks from the vendors' spec sheets
//     (Qualcomm: 8 Elite 2x4.32 + 6x3.53 GHz Oryon; 8 Gen 3 1x3.3 X4 +
//     3x3.15 + 2x2.96 A720 + 2x2.27 A520; Google: Tensor G4 1x3.1 X4 +
//     3x2.6 A720 + 4x1.92 A520; MediaTek: Dimensity 9400 1x3.626 X925 +
//     3x3.3 X4 + 4x2.4 A720), with cpu numbering little-first as those
//     kernels number them;
//   - cpu_capacity as arm64 kernels compute it: capacity-dmips-mhz times
//     the top clock, the largest scaled to 1024 (drivers/base/
//     arch_topology.c), with the capacity-dmips-mhz of mainline Linux's
//     sm8650.dtsi (A520 1024, A720 1792, X4 1894), none for the 8 Elite
//     (mainline sm8750.dtsi gives its identical Oryon cores none, so
//     capacity follows the clock), and for the X925 an estimate (X4 x
//     1.15, Arm's stated IPC gain), the one number here not published;
//   - an Intel hybrid (4 P cores with 2 threads each + 8 E cores, i7-1260P
//     clocks), which reports no cpu_capacity but lists its cores under
//     devices/cpu_core and devices/cpu_atom;
//   - this project's build host, a 2-vCPU EPYC VM (copied: cpu_capacity
//     1024, no cpufreq).
type machine struct {
	name   string
	groups []group
	hybrid bool // write devices/cpu_core and cpu_atom
	// want is the default choice; wantThreads maps a thread count to its
	// choice.
	want        []int
	wantThreads map[int][]int
}

type group struct {
	n        int
	dmips    int // capacity-dmips-mhz (0: capacity from the clock alone; -1: none reported)
	freq     int // kHz (0: no cpufreq)
	smt      int // threads per core (0 = 1)
	atom     bool
	fixedCap int // cpu_capacity as read on the host (overrides the computation)
}

var machines = []machine{
	{name: "snapdragon-8-elite", groups: []group{{n: 6, freq: 3532800}, {n: 2, freq: 4320000}},
		want: []int{0, 1, 2, 3, 4, 5, 6, 7}, wantThreads: map[int][]int{2: {6, 7}, 4: {0, 1, 6, 7}}},
	{name: "snapdragon-8-gen-3", groups: []group{{n: 2, dmips: 1024, freq: 2265600}, {n: 3, dmips: 1792, freq: 3148800}, {n: 2, dmips: 1792, freq: 2956800}, {n: 1, dmips: 1894, freq: 3302400}},
		want: []int{2, 3, 4, 5, 6, 7}, wantThreads: map[int][]int{1: {7}, 4: {2, 3, 4, 7}, 8: {0, 1, 2, 3, 4, 5, 6, 7}}},
	{name: "tensor-g4", groups: []group{{n: 4, dmips: 1024, freq: 1920000}, {n: 3, dmips: 1792, freq: 2600000}, {n: 1, dmips: 1894, freq: 3100000}},
		want: []int{4, 5, 6, 7}, wantThreads: map[int][]int{2: {4, 7}, 6: {0, 1, 4, 5, 6, 7}}},
	{name: "dimensity-9400", groups: []group{{n: 4, dmips: 1792, freq: 2400000}, {n: 3, dmips: 1894, freq: 3300000}, {n: 1, dmips: 2178, freq: 3626000}},
		want: []int{4, 5, 6, 7}, wantThreads: map[int][]int{8: {0, 1, 2, 3, 4, 5, 6, 7}}},
	{name: "intel-hybrid", hybrid: true, groups: []group{{n: 4, dmips: -1, freq: 4700000, smt: 2}, {n: 8, dmips: -1, freq: 3400000, atom: true}},
		want: []int{0, 2, 4, 6}, wantThreads: map[int][]int{6: {0, 2, 4, 6, 8, 9}}},
	{name: "epyc-vm", groups: []group{{n: 2, dmips: -1, fixedCap: 1024}},
		want: []int{0, 1}},
}

// files returns the sysfs files of m, path to content.
func (m machine) files() map[string]string {
	files := map[string]string{}
	maxRaw := 0
	for _, g := range m.groups {
		maxRaw = max(maxRaw, m.raw(g))
	}
	cpu, core := 0, 0
	var cores, atoms []int
	for _, g := range m.groups {
		smt := max(g.smt, 1)
		for range g.n {
			first := cpu
			for t := range smt {
				dir := fmt.Sprintf("devices/system/cpu/cpu%d", cpu)
				switch {
				case g.fixedCap > 0:
					files[dir+"/cpu_capacity"] = fmt.Sprint(g.fixedCap)
				case g.dmips >= 0:
					files[dir+"/cpu_capacity"] = fmt.Sprint(m.raw(g) * 1024 / maxRaw)
				}
				if g.freq > 0 {
					files[dir+"/cpufreq/cpuinfo_max_freq"] = fmt.Sprint(g.freq)
				}
				files[dir+"/topology/core_id"] = fmt.Sprint(core)
				files[dir+"/topology/physical_package_id"] = "0"
				files[dir+"/topology/thread_siblings_list"] = FormatList([]int{first, first + smt - 1})
				if smt == 1 {
					files[dir+"/topology/thread_siblings_list"] = fmt.Sprint(first)
				}
				if g.atom {
					atoms = append(atoms, cpu)
				} else {
					cores = append(cores, cpu)
				}
				_ = t
				cpu++
			}
			core++
		}
	}
	files["devices/system/cpu/online"] = FormatList(seq(cpu))
	if m.hybrid {
		files["devices/cpu_core/cpus"] = FormatList(cores)
		files["devices/cpu_atom/cpus"] = FormatList(atoms)
	}
	return files
}

// raw is capacity-dmips-mhz times the clock (the clock alone when the tree
// gives no dmips), as arch_topology.c multiplies them.
func (m machine) raw(g group) int {
	if g.dmips <= 0 {
		return g.freq
	}
	return g.dmips * g.freq
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestTreesMatchTables: the committed trees are what the tables say (go
// test -update rewrites them).
func TestTreesMatchTables(t *testing.T) {
	for _, m := range machines {
		root := filepath.Join("testdata", m.name)
		want := m.files()
		if *update {
			os.RemoveAll(root)
			for p, c := range want {
				if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(c+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := map[string]string{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			got[filepath.ToSlash(rel)] = strings.TrimSuffix(string(b), "\n")
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v (run go test -update)", m.name, err)
		}
		for p, c := range want {
			if got[p] != c {
				t.Errorf("%s: %s is %q, the table says %q (go test -update rewrites it)", m.name, p, got[p], c)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d files, the table makes %d", m.name, len(got), len(want))
		}
	}
}

// TestChoose: on each SoC the default is the fastest cluster(s) (those at
// least 60 % as fast as the fastest core), one thread per core; a thread
// count takes the fastest cores first.
func TestChoose(t *testing.T) {
	for _, m := range machines {
		t.Run(m.name, func(t *testing.T) {
			cpus, err := Read(os.DirFS(filepath.Join("testdata", m.name)))
			if err != nil {
				t.Fatal(err)
			}
			ch := Choose(cpus, nil, 0)
			if !slices.Equal(ch.CPUs, m.want) {
				t.Errorf("default choice %v, want %v (clusters %+v)", ch.CPUs, m.want, ch.Clusters)
			}
			t.Logf("%s: %s", m.name, ch.Describe())
			for n, want := range m.wantThreads {
				if got := Choose(cpus, nil, n).CPUs; !slices.Equal(got, want) {
					t.Errorf("%d threads: %v, want %v", n, got, want)
				}
			}
		})
	}
}

// TestChooseAllowed: CPUs outside the process's affinity (a cpuset cgroup,
// taskset) are never chosen; the choice is made among the others.
func TestChooseAllowed(t *testing.T) {
	cpus, err := Read(os.DirFS("testdata/snapdragon-8-gen-3"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Choose(cpus, []int{0, 1, 2, 3}, 0).CPUs; !slices.Equal(got, []int{2, 3}) {
		t.Errorf("allowed 0-3: %v, want [2 3] (the A720s, not the A520s)", got)
	}
	if got := Choose(cpus, []int{0, 1}, 0).CPUs; !slices.Equal(got, []int{0, 1}) {
		t.Errorf("allowed 0-1: %v, want the little cores, all there is", got)
	}
	if got := Choose(cpus, []int{}, 0).CPUs; len(got) != 0 {
		t.Errorf("nothing allowed: %v", got)
	}
}

func TestDescribe(t *testing.T) {
	cpus, _ := Read(os.DirFS("testdata/tensor-g4"))
	if got, want := Choose(cpus, nil, 0).Describe(), "CPUs 4-7, the fastest 4 of 8 cores"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	cpus, _ = Read(os.DirFS("testdata/epyc-vm"))
	if got, want := Choose(cpus, nil, 0).Describe(), "CPUs 0-1, 2 alike cores"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := Read(os.DirFS(t.TempDir())); err == nil {
		t.Error("Read of an empty tree succeeded")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "devices/system/cpu"), 0o755)
	os.WriteFile(filepath.Join(dir, "devices/system/cpu/online"), []byte("0-x\n"), 0o644)
	if _, err := Read(os.DirFS(dir)); err == nil {
		t.Error("Read accepted a bad online list")
	}
	// Without online or topology files every cpuN directory is one core.
	dir = t.TempDir()
	for i := range 3 {
		os.MkdirAll(filepath.Join(dir, fmt.Sprintf("devices/system/cpu/cpu%d", i)), 0o755)
	}
	cpus, err := Read(os.DirFS(dir))
	if err != nil || len(cpus) != 3 || len(Choose(cpus, nil, 0).CPUs) != 3 {
		t.Errorf("bare tree: %+v, %v", cpus, err)
	}
}

func TestParseFormatList(t *testing.T) {
	for in, want := range map[string]string{"0-3,6": "0-3,6", "7,6,5": "5-7", "0": "0", "1-1,3-4": "1,3-4", " 2 , 0-1 ": "0-2"} {
		ids, err := ParseList(in)
		if err != nil || FormatList(ids) != want {
			t.Errorf("ParseList(%q) = %v, %v; formatted %q, want %q", in, ids, err, FormatList(ids), want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-", "0,,1", "4096", "0-100000"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
}

func FuzzParseList(f *testing.F) {
	f.Add("0-3,6")
	f.Add("1023")
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseList(s)
		if err != nil {
			return
		}
		again, err := ParseList(FormatList(ids))
		if err != nil || !slices.Equal(ids, again) {
			t.Fatalf("ParseList(%q) = %v; FormatList round trip %v, %v", s, ids, again, err)
		}
		if len(ids) == 0 || ids[len(ids)-1] >= MaxCPU {
			t.Fatalf("ParseList(%q) = %v", s, ids)
		}
	})
}

// TestSystem reads this machine: whatever it has, the choice is not empty
// and stays within the process's affinity.
func TestSystem(t *testing.T) {
	cpus, err := System()
	if err != nil {
		t.Skipf("no sysfs here: %v", err)
	}
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	ch := Choose(cpus, allowed, 0)
	if len(ch.CPUs) == 0 {
		t.Fatalf("no CPU chosen from %+v (allowed %v)", cpus, allowed)
	}
	for _, c := range ch.CPUs {
		if allowed != nil && !slices.Contains(allowed, c) {
			t.Errorf("chose CPU %d outside the affinity %v", c, allowed)
		}
	}
	t.Logf("this machine: %s", ch.Describe())
	p, err := Place(0, nil)
	if err != nil || p.Threads < 1 || p.What == "" {
		t.Errorf("Place(0, nil) = %+v, %v", p, err)
	}
	t.Logf("placement: %+v", p)
	if p, err := Place(0, allowed[:1]); err != nil || p.Threads != 1 || len(p.CPUs) != 1 {
		t.Errorf("Place(0, %v) = %+v, %v", allowed[:1], p, err)
	}
	if p, _ := Place(3, allowed[:1]); p.Threads != 3 {
		t.Errorf("Place(3, %v) = %+v", allowed[:1], p)
	}
	if _, err := Place(0, []int{MaxCPU - 1}); CanPin && err == nil {
		t.Errorf("Place accepted CPU %d, outside the affinity %v", MaxCPU-1, allowed)
	}
}
