//go:build linux

package datapath

import (
	"sync"

	"golang.org/x/sys/unix"
)

// processCPUs are the CPUs the process may run on, as it started (the
// affinity of the thread that first asks, before any worker is pinned).
var processCPUs = sync.OnceValue(func() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
})

// setThreadCPUs sets the affinity of thread tid (0: the calling one).
func setThreadCPUs(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(tid, &set)
}

func gettid() int { return unix.Gettid() }
