package tests

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTunnelCtAfterPop: a stateful ACL on the decapsulated side. b's
// br-int sends IP from the tunnel and from its VIF through ct(table=1):
// connections from the tunnel are committed, packets of established ones
// pass both ways, new ones from b's VIF are dropped. a pings b; b cannot
// ping a. The recirculated datapath flows on b keep the tunnel's in_port
// and metadata in their key (tnl_pop, ct, recirc as in OVS).
func TestTunnelCtAfterPop(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "a", "172.31.0.1/24", "172.31.0.2", "geneve", "10.9.0.1/24")
	b := tunSetup(t, "b", "172.31.0.2/24", "172.31.0.1", "geneve", "10.9.0.2/24")
	tunUnderlay(t, a, b)
	for _, f := range []string{
		"table=0,priority=100,ip,actions=ct(zone=1,table=1)",
		"table=0,priority=50,in_port=vif,actions=output:tun0",
		"table=0,priority=50,in_port=tun0,actions=output:vif",
		"table=1,priority=100,ip,ct_state=+trk+new,in_port=tun0,actions=ct(commit,zone=1),output:vif",
		"table=1,priority=100,ip,ct_state=+trk+est,in_port=tun0,actions=output:vif",
		"table=1,priority=100,ip,ct_state=+trk+est,in_port=vif,actions=output:tun0",
		"table=1,priority=50,actions=drop",
	} {
		b.sw.ofctl(t, "add-flow", "br-int", f)
	}
	a.vif.waitPing("10.9.0.2")
	b.vif.noPing("10.9.0.1")
	// The ping's packets from the tunnel after ct: recirc_id not 0, the
	// tunnel and its vport in the key.
	after := regexp.MustCompile(`(?m)^tunnel\(tun_id=0x5,src=172\.31\.0\.1,dst=172\.31\.0\.2,.*\),ct_state\(.*\),` +
		`recirc_id\(0x[1-9a-f][0-9a-f]*\),in_port\(\d+\),.*actions:\d+$`)
	if dump := b.sw.run("dpctl/dump-flows"); !after.MatchString(dump) {
		t.Errorf("b's datapath flows lack a recirculated flow with the tunnel in its key (%s):\n%s", after, dump)
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// TestTunnelGRE6Debian: GRE over an IPv6 underlay between govs and
// Debian's ovs-vswitchd (userspace datapath, in its own namespace; this
// kernel has no ip6gre): ping both ways and a short iperf3 each way.
func TestTunnelGRE6Debian(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "a", "fd31::1/64 nodad", "fd31::2", "gre", "10.9.0.1/24")
	b := tunSetupBin(t, "b", "/usr/sbin/ovs-vswitchd", "fd31::2/64 nodad", "fd31::1", "gre", "10.9.0.2/24")
	// Outer IPv6 and GRE with a key: 62 bytes.
	tunVIFMTU(t, "1430", a, b)
	tunDebianVIF(t, b)
	tunUnderlay(t, a, b)
	a.vif.waitPing("10.9.0.2")
	b.vif.waitPing("10.9.0.1")
	out := a.vif.iperf(b.vif, "10.9.0.2", "-t", "1")
	t.Logf("iperf3 TCP over GRE/IPv6, govs to Debian: %s", vswIperfSummary(out))
	out = b.vif.iperf(a.vif, "10.9.0.1", "-t", "1")
	t.Logf("iperf3 TCP over GRE/IPv6, Debian to govs: %s", vswIperfSummary(out))
	want := "gre((flags=0x2000,proto=0x6558),key=0x5)"
	for _, n := range []*tunNode{a, b} {
		if dump := n.sw.run("dpctl/dump-flows"); !strings.Contains(dump, "header(size=62,type=109,") || !strings.Contains(dump, want) {
			t.Errorf("datapath flows lack an ip6gre tnl_push with key 5:\n%s", dump)
		}
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
