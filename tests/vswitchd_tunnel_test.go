package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tnlSwitch is an ovs-vswitchd (govs' or Debian's) running in its own
// network namespace, so that its kernel routes are the namespace's.
type tnlSwitch struct {
	e  *vswEnv
	ns string
}

// tnlStart creates namespace name, sets it up as the reference setup
// (veths d0/d0p and d1/d1p with fixed MACs so link-local addresses are
// the same everywhere; addresses and routes on d0) and starts bin there.
func tnlStart(t *testing.T, name, bin string) *tnlSwitch {
	t.Helper()
	e := vswNewEnv(t, true)
	vswRun("ip", "netns", "del", name)
	if _, err := vswRun("ip", "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vswRun("ip", "netns", "del", name) })
	for _, c := range []string{
		"ip link set lo up",
		// Link-local addresses usable at once, not after DAD at some
		// moment that differs between the two switches' namespaces.
		"sysctl -qw net.ipv6.conf.default.accept_dad=0",
		"ip link add d0 address 02:00:00:00:00:01 type veth peer name d0p address 02:00:00:00:00:02",
		"ip link add d1 address 02:00:00:00:00:03 type veth peer name d1p address 02:00:00:00:00:04",
		"ip link set d0 up", "ip link set d0p up", "ip link set d1 up", "ip link set d1p up",
		"ip addr add 10.1.1.1/24 dev d0",
		"ip addr add 10.1.1.5/16 dev d0",
		"ip addr add 2001:db8::1/64 dev d0 nodad",
		"ip route add 192.168.7.0/24 via 10.1.1.254 dev d0",
		"ip route add 192.168.8.0/24 via 10.1.1.254 dev d0 src 10.1.1.5",
	} {
		if _, err := vswRun("ip", append([]string{"netns", "exec", name}, strings.Fields(c)...)...); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"netns", "exec", name, bin, "unix:" + e.sock(), "--pidfile", "--detach", "--no-chdir",
		"--log-file=" + e.logPath(), "-vconsole:off"}
	if _, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, "ip", args...); err != nil {
		t.Fatal(err)
	}
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	if pid <= 0 {
		t.Fatal("ovs-vswitchd --detach returned without a pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })
	return &tnlSwitch{e: e, ns: name}
}

// run gives what Debian's ovs-appctl prints (stdout and stderr) for args.
func (s *tnlSwitch) run(args ...string) string {
	out, err := s.e.appctl(args...)
	if err != nil {
		// vswRunEnv wraps the output into the error; keep only the output.
		return "ERROR " + out
	}
	return out
}

// ip runs ip(8) in the switch's namespace.
func (s *tnlSwitch) ip(t *testing.T, args string) {
	t.Helper()
	if _, err := vswRun("ip", append([]string{"netns", "exec", s.ns}, strings.Fields(args)...)...); err != nil {
		t.Fatal(err)
	}
}

// sortedLines is out with its lines sorted: ovs/route/show lists routes
// of one prefix length in OVS's classifier hash order, which govs does
// not reproduce.
func sortedLines(out string) string {
	l := strings.Split(out, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// The route and neighbour commands give Debian's ovs-vswitchd's output,
// errors and exit codes, and the table follows kernel route changes.
func TestVswitchdTunnelTablesAsDebian(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/ovs-vswitchd"); err != nil {
		t.Fatalf("Debian's ovs-vswitchd is needed as the reference: %v", err)
	}
	tag := fmt.Sprint(os.Getpid() % 100000)
	govs := tnlStart(t, "gtnl-g"+tag, vswBinary(t))
	deb := tnlStart(t, "gtnl-d"+tag, "/usr/sbin/ovs-vswitchd")

	// Both have dumped the namespace's routes once the local ones show.
	for _, s := range []*tnlSwitch{govs, deb} {
		vswWait(t, 20*time.Second, "kernel routes in ovs/route/show", func() bool {
			return strings.Contains(s.run("ovs/route/show"), "192.168.8.0/24")
		})
	}
	compare := func(cmds []string) {
		t.Helper()
		for _, c := range cmds {
			args := strings.Fields(c)
			g, d := govs.run(args...), deb.run(args...)
			if args[0] == "ovs/route/show" || strings.HasSuffix(args[0], "/show") {
				g, d = sortedLines(g), sortedLines(d)
			}
			if g != d {
				t.Errorf("ovs-appctl %s:\ngovs:\n%s\nDebian:\n%s", c, g, d)
			}
		}
	}
	compare([]string{
		"ovs/route/show",
		"ovs/route/add 10.2.0.0/16 d0",
		"ovs/route/add 10.3.0.0/16 d0 10.1.1.200",
		"ovs/route/add 10.4.0.0/16 d0 10.1.1.200 pkt_mark=7",
		"ovs/route/add 10.5.0.0/16 d0 src=10.1.1.5",
		"ovs/route/add 10.7.0.0/16 d1",
		"ovs/route/add 10.7.0.0/16 nosuch",
		"ovs/route/add bogus d0",
		"ovs/route/add 10.8.0.0/33 d0",
		"ovs/route/add 10.8.0.0/16 d0 junk",
		"ovs/route/add 10.3.0.0/16 d0 10.1.1.200 junk",
		"ovs/route/add 10.8.0.1/16 d0",
		"ovs/route/add 10.1.9.0/255.255.255.0 d0",
		"ovs/route/add 2001:db9::/32 d0 2001:db8::fe",
		"ovs/route/add 2001:dba::/32 d0 10.1.1.1",
		"ovs/route/add 10.9.0.0/16 d0 pkt_mark=abc",
		"ovs/route/add 0.0.0.0/0 d0 10.1.1.254",
		"ovs/route/add",
		"ovs/route/add 10.9.0.0/16",
		"ovs/route/add 10.9.0.0/16 d0 10.1.1.254 pkt_mark=1 extra",
		"ovs/route/show",
		"ovs/route/lookup 10.2.3.4",
		"ovs/route/lookup 10.4.3.4 pkt_mark=7",
		"ovs/route/lookup 192.168.8.9",
		"ovs/route/lookup 10.1.1.1",
		"ovs/route/lookup 10.1.2.3",
		"ovs/route/lookup 2001:db9::5",
		"ovs/route/lookup 2001:db8::5",
		"ovs/route/lookup 10.2.3.4/24",
		"ovs/route/lookup nonsense",
		"ovs/route/lookup 8.8.8.8 pkt_mark=x",
		"ovs/route/lookup ::1",
		"ovs/route/del 10.2.0.0/16",
		"ovs/route/del 10.4.0.0/16",
		"ovs/route/del 10.4.0.0/16 pkt_mark=7",
		"ovs/route/del 192.168.7.0/24",
		"ovs/route/del bogus",
		"ovs/route/del 10.9.0.0/16 pkt_mark=zz",
		"ovs/route/show",
	})

	// A kernel change: both re-read the table, keeping user routes.
	for _, s := range []*tnlSwitch{govs, deb} {
		s.ip(t, "ip route add 172.16.0.0/12 via 10.1.1.254")
		s.ip(t, "ip addr add 10.20.0.1/24 dev d1")
		s.ip(t, "ip route del 192.168.7.0/24")
		vswWait(t, 20*time.Second, "the route change in ovs/route/show", func() bool {
			out := s.run("ovs/route/show")
			return strings.Contains(out, "172.16.0.0/12") && strings.Contains(out, "10.20.0.0/24") &&
				!strings.Contains(out, "192.168.7.0/24")
		})
	}
	compare([]string{"ovs/route/show", "ovs/route/lookup 172.17.0.1", "ovs/route/lookup 10.20.0.9"})

	compare([]string{
		"tnl/arp/show",
		"tnl/neigh/show",
		"tnl/arp/set br0 10.1.1.9 aa:bb:cc:dd:ee:ff",
		"tnl/neigh/set br0 2001:db8::9 aa:bb:cc:dd:ee:01",
		"tnl/neigh/set br1 10.1.1.9 aa:bb:cc:dd:ee:02",
		"tnl/neigh/set br0 bogus aa:bb:cc:dd:ee:01",
		"tnl/neigh/set br0 10.1.1.10 zz",
		"tnl/neigh/set br0 10.1.1.10",
		"tnl/neigh/set br0 10.1.1.10 aa:bb:cc:dd:ee:ff extra",
		"tnl/neigh/show",
		"tnl/arp/show",
		"tnl/neigh/aging",
		"tnl/neigh/aging 100",
		"tnl/arp/aging",
		"tnl/neigh/aging 0",
		"tnl/neigh/aging 3601",
		"tnl/neigh/aging abc",
		"tnl/neigh/aging 3600",
		"tnl/neigh/flush",
		"tnl/neigh/show",
		"tnl/arp/set br0 10.1.1.9 aa:bb:cc:dd:ee:ff",
		"tnl/arp/flush",
		"tnl/arp/show",
		"tnl/neigh/flush extra",
	})
}
