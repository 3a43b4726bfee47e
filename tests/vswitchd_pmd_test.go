package tests

// End-to-end test of other_config:pmd-cpu-mask. Kernel objects are named
// gvpm*.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVswitchdPMDCPUMask: with pmd-cpu-mask set, the worker threads of
// the switch (those that woke for traffic) are pinned to the mask's CPUs,
// follow live changes at once, and are unpinned when it is removed;
// pmd-rxq-show lists the queues under their CPUs; a mask with digits that
// are not hexadecimal is warned about as OVS does.
func TestVswitchdPMDCPUMask(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gvpm", "a", "10.251.82.1/24")
	b := vswAddPrefixedNS(t, "gvpm", "b", "10.251.82.2/24")
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	all := gvpmThreads(t, pid)
	if len(all) != 1 || !strings.Contains(gvpmKeys(all), "-") {
		t.Fatalf("this test needs the switch's threads free to run on 2 CPUs or more: %v", all)
	}
	free := gvpmKeys(all)
	const br = "gvpmbr"
	e.mustVsctl("set", "open_vswitch", ".", "other_config:pmd-cpu-mask=0x2",
		"--", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "set", "interface", a.Host, "options:n_rxq=2",
		"--", "add-port", br, b.Host)
	a.waitPing("10.251.82.2")
	// 8 flows leave both of a's queues without traffic 1 time in 128.
	a.iperf(b, "10.251.82.2", "-P", "8", "-t", "1")
	vswWait(t, vswTimeout, "3 threads on CPU 1", func() bool { return gvpmThreads(t, pid)["1"] >= 3 })
	if th := gvpmThreads(t, pid); th["0"] != 0 {
		t.Errorf("threads on CPU 0 under mask 0x2: %v", th)
	}
	show := e.mustAppctl("dpif-netdev/pmd-rxq-show")
	if !strings.Contains(show, "pmd thread numa_id 0 core_id 1:\n") || strings.Contains(show, "core_id 0:") || strings.Count(show, "  port: ") != 4 {
		t.Errorf("pmd-rxq-show under mask 0x2:\n%s", show)
	}

	// Live: the pinned threads move at once, without traffic.
	n := gvpmThreads(t, pid)["1"]
	e.mustVsctl("set", "open_vswitch", ".", "other_config:pmd-cpu-mask=1")
	vswWait(t, vswTimeout, "the threads to move to CPU 0", func() bool {
		th := gvpmThreads(t, pid)
		return th["0"] == n && th["1"] == 0
	})
	e.mustVsctl("set", "open_vswitch", ".", "other_config:pmd-cpu-mask=3")
	vswWait(t, vswTimeout, "threads on CPU 0 and CPU 1", func() bool {
		th := gvpmThreads(t, pid)
		return th["0"] >= 1 && th["1"] >= 1 && th["0"]+th["1"] == n
	})
	show = e.mustAppctl("dpif-netdev/pmd-rxq-show")
	if !strings.Contains(show, "core_id 0:\n") || !strings.Contains(show, "core_id 1:\n") {
		t.Errorf("pmd-rxq-show under mask 3:\n%s", show)
	}
	a.waitPing("10.251.82.2")

	e.mustVsctl("remove", "open_vswitch", ".", "other_config", "pmd-cpu-mask")
	vswWait(t, vswTimeout, "every thread free again", func() bool {
		th := gvpmThreads(t, pid)
		return len(th) == 1 && th[free] > 0
	})

	e.mustVsctl("set", "open_vswitch", ".", "other_config:pmd-cpu-mask=0xz")
	vswWait(t, vswTimeout, "the bad mask reported", func() bool {
		log, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(log), "|WARN|Invalid cpu mask: z") &&
			strings.Contains(string(log), "pmd-cpu-mask 0xz selects no CPU")
	})
	if th := gvpmThreads(t, pid); len(th) != 1 {
		t.Errorf("threads pinned under a mask selecting no CPU: %v", th)
	}
	a.waitPing("10.251.82.2")
}

// gvpmThreads counts process pid's threads by Cpus_allowed_list.
func gvpmThreads(t *testing.T, pid int) map[string]int {
	t.Helper()
	st, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(st) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	m := map[string]int{}
	for _, f := range st {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				m[strings.TrimSpace(v)]++
			}
		}
	}
	return m
}

func gvpmKeys(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}
