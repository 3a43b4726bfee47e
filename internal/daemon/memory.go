package daemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"
)

// processStart is when this process started, the base of the memory
// monitor's "after N seconds" (OVS's time_boot_msec).
var processStart = time.Now()

// memoryCheckInterval is lib/memory.c's MEMORY_CHECK_INTERVAL: the first
// report comes this long after start, and the peak RSS is checked as often.
const memoryCheckInterval = 10 * time.Second

// MemoryReport renders usage as OVS's memory_report does: "key:value"
// pairs sorted by key, separated by spaces, and a newline (which
// unixctl_command_reply adds).
func MemoryReport(usage map[string]uint64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(usage)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, usage[k])
	}
	b.WriteByte('\n')
	return b.String()
}

// MemoryMonitor is lib/memory.c: it registers memory/show on u (if not
// nil), which answers with usage's report, and logs on the "memory"
// module, as OVS daemons do, the peak resident set size 10 s after start
// and again whenever it has grown by half since the last such line, each
// followed by usage's report. Stop it by closing stop.
func MemoryMonitor(log *Logger, u *UnixctlServer, usage func() map[string]uint64, stop <-chan struct{}) {
	if u != nil {
		u.Register("memory/show", "", 0, 0, func([]string) (string, error) {
			return MemoryReport(usage()), nil
		})
	}
	if log == nil {
		return
	}
	mod := log.Module("memory")
	go func() {
		t := time.NewTimer(time.Until(processStart.Add(memoryCheckInterval)))
		defer t.Stop()
		var last uint64
		var lastAt time.Time
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			t.Reset(memoryCheckInterval)
			now := time.Now()
			peak := peakRSS()
			switch {
			case peak == 0:
				continue
			case last == 0:
				mod.Infof("%d kB peak resident set size after %.1f seconds", peak, now.Sub(processStart).Seconds())
			case float64(peak) >= float64(last)*1.5:
				mod.Infof("peak resident set size grew %.0f%% in last %.1f seconds, from %d kB to %d kB",
					(float64(peak)/float64(last)-1)*100, now.Sub(lastAt).Seconds(), last, peak)
			default:
				continue
			}
			last, lastAt = peak, now
			mod.Infof("%s", strings.TrimSuffix(MemoryReport(usage()), "\n"))
		}
	}()
}

// peakRSS is getrusage's ru_maxrss: the process's peak resident set size,
// in kB on Linux; 0 if unknown.
func peakRSS() uint64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil || ru.Maxrss < 0 {
		return 0
	}
	return uint64(ru.Maxrss)
}
