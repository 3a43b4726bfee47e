package tests

import (
	"encoding/json"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// tunNode is one side of a tunnel test: a namespace with a govs switch
// (its own rundir), an underlay bridge br-phy holding the underlay veth
// "ul" with the tunnel address on br-phy's internal port, an integration
// bridge br-int with the tunnel port tun0, and a VIF namespace behind
// br-int (its eth0 at MTU 1450, so that encapsulated frames fit the
// underlay's 1500).
type tunNode struct {
	sw  *tnlSwitch
	vif *vswNS
}

// tunNS creates namespace name, removed when the test ends.
func tunNS(t *testing.T, name string) {
	t.Helper()
	vswRun("ip", "netns", "del", name)
	if _, err := vswRun("ip", "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vswRun("ip", "netns", "del", name) })
	if _, err := vswRun("ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
}

// tunStartSwitch starts govs' ovs-vswitchd in namespace ns with its own
// database and rundir.
func tunStartSwitch(t *testing.T, ns string) *tnlSwitch { return tunStartBin(t, ns, vswBinary(t)) }

// tunStartBin starts ovs-vswitchd bin (govs' or Debian's) in namespace ns
// with its own database and rundir.
func tunStartBin(t *testing.T, ns, bin string) *tnlSwitch {
	t.Helper()
	e := vswNewEnv(t, true)
	args := []string{"netns", "exec", ns, bin, "unix:" + e.sock(), "--pidfile", "--detach", "--no-chdir",
		"--log-file=" + e.logPath(), "-vconsole:off"}
	if _, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, "ip", args...); err != nil {
		t.Fatal(err)
	}
	pid := vswReadPid(e.dir + "/ovs-vswitchd.pid")
	if pid <= 0 {
		t.Fatal("ovs-vswitchd --detach returned without a pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })
	return &tnlSwitch{e: e, ns: ns}
}

// tunSetup builds one side: namespace tag's switch, underlay address
// local (CIDR) on br-phy, tunnel port of typ towards remote, VIF
// namespace with vifAddr.
func tunSetup(t *testing.T, tag, local, remote, typ, vifAddr string) *tunNode {
	t.Helper()
	return tunSetupBin(t, tag, vswBinary(t), local, remote, typ, vifAddr)
}

// tunSetupBin is tunSetup with ovs-vswitchd bin.
func tunSetupBin(t *testing.T, tag, bin, local, remote, typ, vifAddr string) *tunNode {
	t.Helper()
	ns := "gtun-" + tag
	tunNS(t, ns)
	sw := tunStartBin(t, ns, bin)
	vif := &vswNS{t: t, Name: "gtun-v" + tag, Host: "vif"}
	tunNS(t, vif.Name)
	for _, c := range []string{
		"ip link add vif netns " + ns + " type veth peer name eth0 netns " + vif.Name,
		"ip -n " + ns + " link set vif up",
		"ip -n " + vif.Name + " link set eth0 mtu 1450 up",
		"ip -n " + vif.Name + " addr add " + vifAddr + " dev eth0",
	} {
		if _, err := vswRun("sh", "-c", c); err != nil {
			t.Fatal(err)
		}
	}
	e := sw.e
	e.mustVsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
		"--", "add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev")
	// Debian's ovs-vswitchd creates the bridge's tap device after the
	// transaction.
	vswWait(t, vswTimeout, "br-phy's device", func() bool {
		_, err := vswRun("ip", "-n", ns, "link", "show", "br-phy")
		return err == nil
	})
	sw.ip(t, "ip addr add "+local+" dev br-phy")
	sw.ip(t, "ip link set br-phy up")
	e.mustVsctl("add-port", "br-int", "vif", "--", "add-port", "br-int", "tun0", "--", "set", "interface", "tun0",
		"type="+typ, "options:remote_ip="+remote, "options:key=5")
	return &tunNode{sw: sw, vif: vif}
}

// tunUnderlay joins the two sides' namespaces with the veth "ul" and puts
// it on each br-phy (its kernel ARP off).
func tunUnderlay(t *testing.T, a, b *tunNode) {
	t.Helper()
	if _, err := vswRun("ip", "link", "add", "ul", "netns", a.sw.ns, "type", "veth", "peer", "name", "ul", "netns", b.sw.ns); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*tunNode{a, b} {
		// arp off: the kernel must not answer ARP for br-phy's
		// address from ul itself. Debian's netdev datapath leaves
		// ul's frames to the kernel too, and its reply with ul's MAC
		// raced br-phy's, so the other side sometimes learned ul's
		// MAC and its tunnel packets never reached br-phy.
		n.sw.ip(t, "ip link set ul arp off up")
		n.sw.e.mustVsctl("add-port", "br-phy", "ul")
	}
}

// tunRetype makes each node's tun0 a typ tunnel.
func tunRetype(t *testing.T, typ string, nodes ...*tunNode) {
	t.Helper()
	for _, n := range nodes {
		n.sw.e.mustVsctl("set", "interface", "tun0", "type="+typ)
	}
}

// tunPingIperf waits until a's VIF (aIP) and b's (bIP) ping each other,
// then runs a 1 s iperf3 TCP from a to b and logs its figure under label.
func tunPingIperf(t *testing.T, a, b *tunNode, aIP, bIP, label string) {
	t.Helper()
	a.vif.waitPing(bIP)
	b.vif.waitPing(aIP)
	out := a.vif.iperf(b.vif, bIP, "-t", "1")
	t.Logf("%s: ping both ways; iperf3 TCP a to b: %s", label, vswIperfSummary(out))
}

// TestTunnelGovsToGovs runs VXLAN, then Geneve, then GRE between two govs
// switches in their own namespaces, joined by a veth underlay: ping both
// ways, iperf3 TCP over each (the figures are logged), the status and
// tnl/ports/show (-v) of the tunnel port, and the underlay ports' socket
// buffers.
func TestTunnelGovsToGovs(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "a", "172.31.0.1/24", "172.31.0.2", "vxlan", "10.9.0.1/24")
	b := tunSetup(t, "b", "172.31.0.2/24", "172.31.0.1", "vxlan", "10.9.0.2/24")
	tunUnderlay(t, a, b)

	vswWait(t, vswTimeout, "tunnel status", func() bool {
		out, _ := a.sw.e.vsctl("get", "interface", "tun0", "status")
		return strings.Contains(out, `tunnel_egress_iface=br-phy`) && strings.Contains(out, `tunnel_egress_iface_carrier=up`)
	})
	if of := a.sw.e.ofport("tun0"); of <= 0 {
		t.Fatalf("tun0 ofport %d", of)
	}
	// The underlay ports leave their 240-frame receive ring for a 4 MiB
	// socket buffer (the kernel doubles it): the far switch's segments
	// overflowed the ring (vswitchd/bridge/underlay.go).
	for _, n := range []*tunNode{a, b} {
		gvofWaitStatus(n.sw.e, "ul", "rx_sock_buf", "8388608")
	}
	a.vif.waitPing("10.9.0.2")
	b.vif.waitPing("10.9.0.1")
	out := a.vif.iperf(b.vif, "10.9.0.2", "-t", "3")
	t.Logf("iperf3 TCP over VXLAN, govs to govs: %s", vswIperfSummary(out))
	if dump := a.sw.run("dpctl/dump-flows"); !strings.Contains(dump, "tnl_push") || !strings.Contains(dump, "tnl_pop") {
		t.Errorf("no tunnel actions in the datapath flows:\n%s", dump)
	}
	tunCheckPortsShow(t, a, "vxlan_sys_4789", "eth_type(0x0800),ipv4(dst=172.31.0.1,proto=17,frag=no),udp(dst=4789)")

	// options:egress_pkt_mark marks what leaves through the tunnel: a set
	// of skb_mark before its tnl_push, as OVS's netdev datapath commits
	// it; traffic passes as before.
	a.sw.e.mustVsctl("set", "interface", "tun0", "options:egress_pkt_mark=5")
	vswWait(t, vswTimeout, "set(skb_mark(0x5)) before a's tnl_push", func() bool {
		a.vif.exec("ping", "-q", "-n", "-c", "1", "-W", "1", "10.9.0.2")
		return strings.Contains(a.sw.run("dpctl/dump-flows"), "set(skb_mark(0x5)),tnl_push(")
	})
	if out, _ := a.sw.e.vsctl("get", "interface", "tun0", "error"); strings.TrimSpace(out) != "[]" {
		t.Errorf("tun0 error with egress_pkt_mark: %s", out)
	}
	a.vif.waitPing("10.9.0.2")

	for _, tt := range []struct{ typ, vport, match string }{
		{"geneve", "genev_sys_6081", "eth_type(0x0800),ipv4(dst=172.31.0.1,proto=17,frag=no),udp(dst=6081)"},
		{"gre", "gre_sys", "eth_type(0x0800),ipv4(dst=172.31.0.1,proto=47,frag=no)"},
	} {
		tunRetype(t, tt.typ, a, b)
		tunPingIperf(t, a, b, "10.9.0.1", "10.9.0.2", tt.typ)
		tunCheckPortsShow(t, a, tt.vport, tt.match)
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// tunKernelVXLAN puts namespace far, created here, at the other end of
// a's underlay veth "ul" (on a's br-phy), with underlay address local
// (CIDR) and a Linux vxlan device vx0 (VNI 5, MTU 1450, address vifAddr)
// tunnelling to remote, a's address; extra are more of its ip-link
// arguments ("gbp").
func tunKernelVXLAN(t *testing.T, a *tunNode, far, local, remote, vifAddr string, extra ...string) *vswNS {
	t.Helper()
	tunNS(t, far)
	addr, _, _ := strings.Cut(local, "/")
	for _, c := range []string{
		"ip link add ul netns " + a.sw.ns + " type veth peer name ul netns " + far,
		"ip -n " + a.sw.ns + " link set ul up",
		"ip -n " + far + " link set ul up",
		"ip -n " + far + " addr add " + local + " dev ul",
		"ip -n " + far + " link add vx0 type vxlan id 5 remote " + remote + " local " + addr + " dstport 4789 dev ul " + strings.Join(extra, " "),
		"ip -n " + far + " link set vx0 mtu 1450 up",
		"ip -n " + far + " addr add " + vifAddr + " dev vx0",
	} {
		if _, err := vswRun("sh", "-c", c); err != nil {
			t.Fatal(err)
		}
	}
	a.sw.e.mustVsctl("add-port", "br-phy", "ul")
	return &vswNS{t: t, Name: far}
}

// TestTunnelVXLANKernelInterop: the far side is a Linux vxlan device at
// its default offloads (checksum offload on); govs and it ping both ways
// and run iperf3 TCP both ways.
func TestTunnelVXLANKernelInterop(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "k", "172.31.1.1/24", "172.31.1.2", "vxlan", "10.9.1.1/24")
	farNS := tunKernelVXLAN(t, a, "gtun-kfar", "172.31.1.2/24", "172.31.1.1", "10.9.1.2/24")
	a.vif.waitPing("10.9.1.2")
	farNS.waitPing("10.9.1.1")
	out := a.vif.iperf(farNS, "10.9.1.2", "-t", "2")
	t.Logf("iperf3 TCP govs to kernel vxlan: %s", vswIperfSummary(out))
	out = farNS.iperf(a.vif, "10.9.1.1", "-t", "2")
	t.Logf("iperf3 TCP kernel vxlan to govs: %s", vswIperfSummary(out))
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// tunCheckPortsShow checks n's tnl/ports/show for its one tunnel port, on
// vport: listed with ref_cnt=1, and with -v one line per local route of
// ovs/route/show (the addresses govs ends tunnels for), the underlay
// address's with match.
func tunCheckPortsShow(t *testing.T, n *tunNode, vport, match string) {
	t.Helper()
	re := regexp.MustCompile(`^Listening ports:\n` + vport + ` \((\d+)\) ref_cnt=1\n$`)
	var brief, routes, verbose string
	defer func() {
		if t.Failed() {
			t.Logf("tnl/ports/show:\n%s\novs/route/show:\n%s\ntnl/ports/show -v:\n%s", brief, routes, verbose)
		}
	}()
	// The routes follow the kernel's (a link-local address is added
	// once its link is up): all three are read until they agree.
	vswWait(t, vswTimeout, "tnl/ports/show (-v) to show "+vport+" on ovs/route/show's local routes", func() bool {
		brief = n.sw.run("tnl/ports/show")
		routes, verbose = n.sw.run("ovs/route/show"), n.sw.run("tnl/ports/show", "-v")
		m := re.FindStringSubmatch(brief)
		if m == nil {
			return false
		}
		prefix := vport + " (" + m[1] + ") : "
		lines := strings.Split(strings.TrimSuffix(verbose, "\n"), "\n")
		if lines[0] != "Listening ports:" || !slices.Contains(lines, prefix+match) {
			return false
		}
		var want []string
		for _, l := range strings.Split(routes, "\n") {
			if strings.HasSuffix(l, " local") {
				want = append(want, "dst="+tunODPPrefix(netip.MustParsePrefix(strings.Fields(l)[1]))+",")
			}
		}
		if len(lines) != len(want)+1 {
			return false
		}
		for _, w := range want {
			if !slices.ContainsFunc(lines[1:], func(l string) bool { return strings.HasPrefix(l, prefix) && strings.Contains(l, w) }) {
				return false
			}
		}
		return true
	})
}

// tunODPPrefix is p as a datapath flow's address match: the address, and
// for a prefix the mask as an address.
func tunODPPrefix(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	mask := net.CIDRMask(p.Bits(), p.Addr().BitLen())
	if p.Addr().Is4() {
		return p.Addr().String() + "/" + net.IP(mask).String()
	}
	return p.Addr().String() + "/" + netip.AddrFrom16([16]byte(mask)).String()
}

// tunPortsV is n's tnl/ports/show -v, its lines sorted, with the datapath
// port numbers left out and each destination address replaced by
// <device> of the device that holds it in n's namespace; an eth(dst=)
// of that device's MAC (OVS's rules match it, govs' do not) is left out.
// Addresses no device holds (a prefix) stay.
func tunPortsV(t *testing.T, n *tunNode) []string {
	t.Helper()
	out, err := vswRun("ip", "-j", "-n", n.sw.ns, "addr")
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		Name  string `json:"ifname"`
		MAC   string `json:"address"`
		Addrs []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("ip -j addr: %v\n%s", err, out)
	}
	dev, mac := map[string]string{}, map[string]string{}
	for _, l := range links {
		mac[l.Name] = l.MAC
		for _, a := range l.Addrs {
			dev[a.Local] = l.Name
		}
	}
	line := regexp.MustCompile(`^(\S+) \(\d+\) : (?:eth\(dst=([0-9a-f:]+)\),)?(.*ipv[46]\(dst=)([^,/]+)(.*)$`)
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(n.sw.run("tnl/ports/show", "-v"), "\n"), "\n")[1:] {
		m := line.FindStringSubmatch(l)
		if m == nil {
			got = append(got, l)
			continue
		}
		d := dev[m[4]]
		if d == "" {
			d = m[4]
		} else {
			d = "<" + d + ">"
		}
		eth := ""
		if m[2] != "" && m[2] != mac[dev[m[4]]] {
			eth = "eth(dst=" + m[2] + "),"
		}
		got = append(got, m[1]+" : "+eth+m[3]+d+m[5])
	}
	slices.Sort(got)
	return got
}
