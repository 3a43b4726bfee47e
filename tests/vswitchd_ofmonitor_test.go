package tests

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// ofMonitor is a running `ovs-ofctl monitor` of one switch.
type ofMonitor struct {
	s   *ofSwitch
	cmd *exec.Cmd
	out *lockedBuffer
}

// startMonitor runs `ovs-ofctl -O version monitor BR watch:SPEC` against s
// and waits for its reply to the monitor request (the initial flows).
func (s *ofSwitch) startMonitor(version, spec string) *ofMonitor {
	s.t.Helper()
	m := &ofMonitor{s: s, out: &lockedBuffer{}}
	m.cmd = exec.Command(vswOfctl, "-O", version, "monitor", s.br, "watch:"+spec)
	m.cmd.Env = append(os.Environ(), "OVS_RUNDIR="+s.dir)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(m.stop)
	m.waitFor(`FLOW_MONITOR reply .*\(xid=0x[1-9a-f]`)
	return m
}

// waitFor waits until the monitor printed a line matching re.
func (m *ofMonitor) waitFor(re string) {
	m.s.t.Helper()
	r := regexp.MustCompile(`(?m)` + re)
	vswWait(m.s.t, vswTimeout, fmt.Sprintf("ovs-ofctl monitor to print %q", re), func() bool {
		if m.cmd.ProcessState != nil {
			return true
		}
		return r.MatchString(m.out.String())
	})
	if !r.MatchString(m.out.String()) {
		m.s.t.Fatalf("ovs-ofctl monitor ended:\n%s", m.out.String())
	}
}

// stop ends the monitor (SIGTERM, by the PID it started with) and returns
// what it printed.
func (m *ofMonitor) stop() {
	if m.cmd.ProcessState == nil {
		m.cmd.Process.Signal(syscall.SIGTERM)
		m.cmd.Wait()
	}
}

// normalizeMonitor normalises a monitor's output for comparison: the
// switch's names and addresses, ovs-ofctl's own log lines (the signal
// that ends it) and the order of the updates within one reply (a delete
// of several flows reports them in the switch's table order).
func (m *ofMonitor) normalized() string {
	out := m.s.normalizeOfctl(m.out.String())
	var blocks [][]string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "|fatal_signal|"), l == "":
		case strings.HasPrefix(l, " ") && len(blocks) > 0:
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
		default:
			blocks = append(blocks, []string{l})
		}
	}
	var b strings.Builder
	for _, blk := range blocks {
		slices.Sort(blk[1:])
		b.WriteString(strings.Join(blk, "\n") + "\n")
	}
	return b.String()
}

// TestOpenFlowMonitorDifferential runs Debian's `ovs-ofctl monitor BR
// watch:` in every OpenFlow version against govs and Debian's
// ovs-vswitchd while other ovs-ofctl commands change the flow tables, and
// requires the same output: the initial flows, then each change as the
// switch reports it.
func TestOpenFlowMonitorDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gmnd", "10.214.0", "gmno", "10.215.0")
	both := func(args ...string) {
		t.Helper()
		for _, s := range []*ofSwitch{deb, govs} {
			a := slices.Clone(args)
			for i := range a {
				if a[i] == "BR" {
					a[i] = s.br
				}
			}
			// Errors are part of the comparison: the monitors report
			// only what changed.
			s.ofctl(a...)
		}
	}
	versions := []string{"OpenFlow10", "OpenFlow11", "OpenFlow12", "OpenFlow13", "OpenFlow14", "OpenFlow15"}
	for i, version := range versions {
		t.Run(version, func(t *testing.T) {
			both("del-flows", "BR")
			both("add-flow", "BR", "priority=0,actions=NORMAL")
			both("add-flow", "BR", "table=2,priority=9,arp,cookie=0x7,actions=drop")
			spec := ""
			if i%2 == 1 {
				spec = "!initial,out_port=2"
			}
			mons := []*ofMonitor{deb.startMonitor(version, spec), govs.startMonitor(version, spec)}
			steps := [][]string{
				{"add-flow", "BR", "priority=7,udp,actions=drop"},
				{"add-flow", "BR", "priority=7,udp,actions=drop"},              // replaced: ADDED again
				{"add-flow", "BR", "priority=7,udp,cookie=9,actions=output:2"}, // new cookie and actions
				{"mod-flows", "BR", "udp,actions=output:2"},                    // same actions, cookie 0: MODIFIED
				{"mod-flows", "BR", "udp,actions=output:1"},                    // new actions: MODIFIED
				{"mod-flows", "BR", "tcp,actions=output:2"},                    // no match: adds in 1.0
				{"-O", "OpenFlow13", "add-flow", "BR", "table=4,priority=3,ip,nw_dst=10.1.0.0/16,idle_timeout=50,actions=output:2,output:3"},
				{"--strict", "del-flows", "BR", "priority=7,udp"},
				{"del-flows", "BR", "table=4"},
				{"add-flow", "BR", "table=9,actions=drop"},
			}
			// Every step in one version of each encoding (Nicira, ONF,
			// 1.4+); the others share its code: three steps suffice.
			if version != "OpenFlow10" && version != "OpenFlow13" && version != "OpenFlow15" {
				steps = [][]string{steps[2], steps[4], steps[7]}
			}
			for _, args := range steps {
				both(args...)
			}
			if i == 0 || i == len(versions)-1 {
				// A hard timeout expires (DELETED reason=hard) on both
				// (in two versions only: it takes a second).
				both("add-flow", "BR", "table=1,priority=8,ip,hard_timeout=1,actions=output:2")
				for _, m := range mons {
					m.waitFor(`reason=hard`)
				}
			}
			// The marker flow shows that every earlier update arrived.
			both("add-flow", "BR", "table=10,actions=output:2")
			for _, m := range mons {
				m.waitFor(`table=10 `)
				m.stop()
			}
			want, got := mons[0].normalized(), mons[1].normalized()
			if got != want {
				t.Errorf("ovs-ofctl -O %s monitor BR watch:%s\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", version, spec, got, want)
			}
			t.Logf("compared:\n%s", got)
		})
	}
}
