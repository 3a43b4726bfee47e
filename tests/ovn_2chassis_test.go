package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOvnTwoChassis runs Debian's OVN 23.03 across two chassis, hv1 and
// hv2, each a switch in its own network namespace with its own rundir,
// joined by a veth underlay: the test starts the NB and SB databases and
// ovn-northd (Debian's, reached over unix sockets, which the namespaces
// share), and on each chassis an ovsdb-server, an ovs-vswitchd and an
// ovn-controller with ovn-encap-type=geneve and its underlay address as
// ovn-encap-ip. ovn-controller makes br-int and the Geneve tunnel port to
// the other chassis; the underlay address is on br-phy, which holds the
// underlay veth, so that the userspace datapath encapsulates and
// decapsulates natively. VIFs (namespaces behind veths into a chassis's
// namespace) of one logical switch on different chassis ping and run
// iperf3 over Geneve; a logical router joins a second switch whose VIF
// is on the other chassis, and they ping across; an ACL dropping ICMP
// towards one port is enforced, and lifted again; ovn-nbctl --wait=hv
// returns once both chassis caught up. Nothing either ovn-controller
// sends is refused (and on govs, its switch logs no refusal or warning).
// The subtest debian runs Debian's ovsdb-server and ovs-vswitchd (netdev
// datapath) as both chassis, govs runs govs' own.
func TestOvnTwoChassis(t *testing.T) {
	ovsdbNeed(t, ovnNorthd, ovnController, ovnNbctl, ovnSbctl, ovsVswitchd, ovsdbNBSchema, ovnSBSchema, ovsdbDebianServer)
	vswNeedRoot(t)
	t.Run("debian", func(t *testing.T) { ovn2Run(t, "o2d", true) })
	t.Run("govs", func(t *testing.T) { ovn2Run(t, "o2g", false) })
}

// ovn2Chassis is one chassis of TestOvnTwoChassis.
type ovn2Chassis struct {
	name    string // system-id: hv1, hv2
	ns      string // the switch's network namespace
	dir     string // rundir: sockets, pidfiles, logs
	encapIP string
	vsctl   func(...string) string
}

// ovn2Run builds the two chassis (Debian's switch if debian, else govs')
// with namespace names starting with prefix, and runs the checks.
func ovn2Run(t *testing.T, prefix string, debian bool) {
	start := time.Now()
	// The steps' times, in the log, show where a slow run waited.
	step := func(what string) { t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what) }
	central, nb, sb := ovnCentral(t, prefix+"c-")
	var hvs []*ovn2Chassis
	for i, name := range []string{"hv1", "hv2"} {
		hvs = append(hvs, ovn2StartChassis(t, prefix, name, "172.31.9."+string(rune('1'+i)), debian))
	}
	// The underlay: one veth between the two namespaces, on each br-phy.
	if _, err := vswRun("ip", "link", "add", "ul", "netns", hvs[0].ns, "type", "veth", "peer", "name", "ul", "netns", hvs[1].ns); err != nil {
		t.Fatal(err)
	}
	for _, hv := range hvs {
		ovn2IP(t, hv.ns, "link set ul up")
		hv.vsctl("add-port", "br-phy", "ul")
	}
	for _, hv := range hvs {
		ovn2StartController(t, hv, central, sb, debian)
	}

	// VIFs: a on hv1, b and c on hv2.
	a := ovn2VIF(t, prefix, "a", hvs[0], "sw0-p1", "50:54:00:00:00:01", "10.0.0.1/24", "10.0.0.254", debian)
	b := ovn2VIF(t, prefix, "b", hvs[1], "sw0-p2", "50:54:00:00:00:02", "10.0.0.2/24", "10.0.0.254", debian)
	c := ovn2VIF(t, prefix, "c", hvs[1], "sw1-p1", "50:54:00:00:01:01", "10.0.1.1/24", "10.0.1.254", debian)
	nbctl := func(args ...string) string {
		t.Helper()
		return ovnRun(t, ovnNbctl, append([]string{"--db=" + nb, "--timeout=30"}, args...)...)
	}
	nbctl(append([]string{"ls-add", "sw0",
		"--", "lsp-add", "sw0", "sw0-p1", "--", "lsp-set-addresses", "sw0-p1", "50:54:00:00:00:01 10.0.0.1",
		"--", "lsp-add", "sw0", "sw0-p2", "--", "lsp-set-addresses", "sw0-p2", "50:54:00:00:00:02 10.0.0.2",
		"--", "ls-add", "sw1",
		"--", "lsp-add", "sw1", "sw1-p1", "--", "lsp-set-addresses", "sw1-p1", "50:54:00:00:01:01 10.0.1.1"},
		ovnRouterCmds...)...)

	step("chassis and VIFs up")
	// Each port is bound by the chassis it is on, and each chassis has
	// made its Geneve port towards the other.
	for _, p := range []struct{ port, hv string }{{"sw0-p1", "hv1"}, {"sw0-p2", "hv2"}, {"sw1-p1", "hv2"}} {
		vswWait(t, vswTimeout, p.port+" bound on "+p.hv+" and up", func() bool {
			out, _ := vswRun(ovnSbctl, "--db="+sb, "--bare", "--columns=chassis,up", "find", "Port_Binding", "logical_port="+p.port)
			f := strings.Fields(out)
			if len(f) != 2 || f[1] != "true" {
				return false
			}
			name, _ := vswRun(ovnSbctl, "--db="+sb, "--bare", "get", "Chassis", f[0], "name")
			return strings.TrimSpace(name) == p.hv
		})
	}
	for i, hv := range hvs {
		other := hvs[1-i]
		tunnel := "ovn-" + other.name + "-0"
		vswWait(t, vswTimeout, hv.name+"'s tunnel port "+tunnel, func() bool {
			out := hv.vsctl("--if-exists", "get", "interface", tunnel, "type", "options:remote_ip", "ofport")
			f := strings.Fields(out)
			return len(f) == 3 && f[0] == "geneve" && f[1] == `"`+other.encapIP+`"` && f[2] != "-1" && f[2] != "[]"
		})
	}
	step("ports bound, tunnel ports made")
	// --wait=hv returns once both chassis have installed the change.
	nbctl("--wait=hv", "sync")
	nbCfg := strings.TrimSpace(nbctl("get", "NB_Global", ".", "nb_cfg"))
	hvCfg := strings.TrimSpace(nbctl("get", "NB_Global", ".", "hv_cfg"))
	if nbCfg == "0" || hvCfg != nbCfg {
		t.Errorf("after --wait=hv: NB nb_cfg %s, hv_cfg %s", nbCfg, hvCfg)
	}

	step("--wait=hv sync returned")
	// One logical switch across the chassis: the only way from a to b is
	// the underlay, in Geneve.
	a.waitPing("10.0.0.2")
	b.waitPing("10.0.0.1")
	t.Logf("iperf3 over Geneve, hv1 to hv2: %s", vswIperfSummary(a.iperf(b, "10.0.0.2", "-t", "1")))
	step("ping and iperf3")
	// The router: a (sw0, hv1) and c (sw1, hv2).
	a.waitPing("10.0.1.1")
	c.waitPing("10.0.0.1")

	step("ping through the router")
	// ACLs, with conntrack on both chassis.
	ovnCheckACL(nbctl, a, b, c)
	step("ACL")

	// Nothing was refused, no daemon died, and ovn-controller never had
	// to start over.
	for _, hv := range hvs {
		if !debian {
			ovnCheckSwitchLog(t, filepath.Join(hv.dir, "ovs-vswitchd.log"))
		}
		ovnCheckControllerLog(t, filepath.Join(hv.dir, "ovn-controller.log"))
		for _, pf := range []string{"ovn-controller.pid", "ovs-vswitchd.pid"} {
			if !vswAlive(vswReadPid(filepath.Join(hv.dir, pf))) {
				t.Errorf("%s's %s is not running", hv.name, pf)
			}
		}
	}
	step("done")
}

// ovn2IP runs ip(8) with args in namespace ns.
func ovn2IP(t *testing.T, ns, args string) {
	t.Helper()
	if _, err := vswRun("ip", append([]string{"-n", ns}, strings.Fields(args)...)...); err != nil {
		t.Fatal(err)
	}
}

// ovn2StartChassis makes namespace <prefix>-<name> and starts the
// chassis's switch in it: Debian's ovsdb-server and ovs-vswitchd (netdev
// datapath) if debian, else govs' own, each with its own rundir. br-phy
// holds encapIP (br-int is ovn-controller's to make).
func ovn2StartChassis(t *testing.T, prefix, name, encapIP string, debian bool) *ovn2Chassis {
	t.Helper()
	hv := &ovn2Chassis{name: name, ns: prefix + "-" + name, encapIP: encapIP}
	vswClaim(t, hv.ns)
	tunNS(t, hv.ns)
	if debian {
		hv.dir = ovsdbKeptDir(t, prefix+name+"-", "OVN chassis "+name)
		db := "unix:" + filepath.Join(hv.dir, "db.sock")
		ovnRun(t, ovsdbTool, "create", filepath.Join(hv.dir, "conf.db"), ovsdbVSwitchSch)
		ovnDaemon(t, hv.dir, "ovsdb-server", ovsdbDebianServer, filepath.Join(hv.dir, "conf.db"), "--remote=p"+db,
			"--unixctl="+filepath.Join(hv.dir, "ovsdb-server.ctl"))
		hv.vsctl = func(args ...string) string {
			t.Helper()
			return ovnRun(t, ovsdbVsctl, append([]string{"--db=" + db, "--timeout=60"}, args...)...)
		}
		hv.vsctl("--no-wait", "init")
		ovnDaemon(t, hv.dir, "ovs-vswitchd", "ip", "netns", "exec", hv.ns, ovsVswitchd, db,
			"--unixctl="+filepath.Join(hv.dir, "ovs-vswitchd.ctl"))
		hv.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev")
	} else {
		sw := tunStartSwitch(t, hv.ns)
		hv.dir = sw.e.dir
		hv.vsctl = func(args ...string) string {
			t.Helper()
			return sw.e.mustVsctl(args...)
		}
		hv.vsctl("add-br", "br-phy")
	}
	ovn2IP(t, hv.ns, "addr add "+encapIP+"/24 dev br-phy")
	ovn2IP(t, hv.ns, "link set br-phy up")
	return hv
}

// ovn2StartController points hv at the Southbound database sb and starts
// its ovn-controller in its namespace, which makes br-int.
func ovn2StartController(t *testing.T, hv *ovn2Chassis, central, sb string, debian bool) {
	t.Helper()
	ids := []string{"set", "open", ".", "external_ids:system-id=" + hv.name, "external_ids:ovn-remote=" + sb,
		"external_ids:ovn-encap-type=geneve", "external_ids:ovn-encap-ip=" + hv.encapIP}
	if debian {
		ids = append(ids, "external_ids:ovn-bridge-datapath-type=netdev")
	}
	hv.vsctl(ids...)
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{filepath.Join(hv.dir, "ovn-controller.log"), filepath.Join(hv.dir, "ovs-vswitchd.log"),
				filepath.Join(central, "ovn-northd.log")} {
				if b, err := os.ReadFile(f); err == nil {
					t.Logf("%s %s:\n%s", hv.name, filepath.Base(f), vswTail(string(b), 40))
				}
			}
		}
	})
	ovnDaemon(t, hv.dir, "ovn-controller", "ip", "netns", "exec", hv.ns, ovnController, "unix:"+filepath.Join(hv.dir, "db.sock"))
	vswWait(t, vswTimeout, hv.name+": ovn-controller to create br-int", func() bool {
		return strings.TrimSpace(hv.vsctl("--if-exists", "get", "bridge", "br-int", "name")) == "br-int"
	})
}

// ovn2VIF makes VIF namespace <prefix>-<tag> with eth0 at addr (CIDR), MTU
// 1400 (its frames fit the underlay's 1500 in Geneve), a default route
// via gw, and a veth into hv's namespace on br-int as logical port iface.
// Debian's userspace datapath does not fill in checksums left to offload:
// on it, the VIF sends them filled in.
func ovn2VIF(t *testing.T, prefix, tag string, hv *ovn2Chassis, iface, mac, addr, gw string, debian bool) *vswNS {
	t.Helper()
	ns := &vswNS{t: t, Name: prefix + "-" + tag, Host: prefix + tag}
	vswClaim(t, ns.Name)
	tunNS(t, ns.Name)
	if _, err := vswRun("ip", "link", "add", ns.Host, "netns", hv.ns, "type", "veth", "peer", "name", "eth0", "netns", ns.Name); err != nil {
		t.Fatal(err)
	}
	ovn2IP(t, hv.ns, "link set "+ns.Host+" up")
	for _, c := range []string{"link set eth0 address " + mac, "link set eth0 mtu 1400 up", "addr add " + addr + " dev eth0",
		"route add default via " + gw} {
		ovn2IP(t, ns.Name, c)
	}
	if debian {
		ns.exec("ethtool", "-K", "eth0", "tx", "off")
	}
	hv.vsctl("add-port", "br-int", ns.Host, "--", "set", "interface", ns.Host, "external_ids:iface-id="+iface)
	return ns
}
