package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/cpuset"
)

// coreFlags are --threads and --cpus: how many threads the in-process
// engine computes with and on which CPUs. Every command that runs the
// engine defines them here; the commands that read the settings (run,
// eval, serve, bench agent, model chat) turn them into the threads and
// cpus settings, which config checks (the same checks as the file's and
// the environment's); the others (model bench, logits, generate) check
// them against the same rules and place the engine directly.
type coreFlags struct {
	threads int
	cpus    string
}

func (cf *coreFlags) add(f *pflag.FlagSet) {
	f.IntVarP(&cf.threads, "threads", "t", 0, "threads of the in-process engine (0: the threads setting, else one per core it runs on)")
	f.StringVar(&cf.cpus, "cpus", "", "CPUs the in-process engine runs on, its threads pinned to them (`LIST` such as 4-7 or 0,2,4; default: the cpus setting, else the fastest cores: on phones and hybrid CPUs the slower ones are left out)")
}

// apply writes the flags that were given (changed reports which) into the
// threads and cpus settings, with the flag as their source.
func (cf *coreFlags) apply(cfg *config.Config, changed func(flag string) bool) error {
	if changed("threads") {
		if err := cfg.SetFlag("threads", strconv.Itoa(cf.threads), "threads"); err != nil {
			return usageErr(err)
		}
	}
	if changed("cpus") {
		if err := cfg.SetFlag("cpus", cf.cpus, "cpus"); err != nil {
			return usageErr(err)
		}
	}
	return nil
}

// place checks the flags and decides where the engine runs, for the
// commands that do not read the settings.
func (cf *coreFlags) place() (cpuset.Placement, error) {
	if err := checkThreads(cf.threads); err != nil {
		return cpuset.Placement{}, err
	}
	if err := config.CheckStringFlag("cpus", "cpus", cf.cpus); err != nil {
		return cpuset.Placement{}, usageErr(err)
	}
	return placeEngine(cf.threads, cf.cpus, "flag --cpus")
}

// placeEngine decides where the engine's threads run: on the CPUs of the
// cpus setting when it is set (source names where it came from, for the
// error), else on this machine's fastest cores (cpuset.Place).
func placeEngine(threads int, cpus, source string) (cpuset.Placement, error) {
	var list []int
	if strings.TrimSpace(cpus) != "" {
		var err error
		if list, err = cpuset.ParseList(cpus); err != nil {
			return cpuset.Placement{}, usageErr(fmt.Errorf("cpus (%s): %w", source, err))
		}
	}
	p, err := cpuset.Place(threads, list)
	if err != nil {
		return p, usageErr(fmt.Errorf("cpus (%s): %w", source, err))
	}
	if list != nil {
		p.What += " (" + source + ")"
	}
	return p, nil
}
