package tests

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// ofctl runs Debian's ovs-ofctl against the switch's bridge br and fails
// the test if it fails.
func (s *tnlSwitch) ofctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := vswRunEnv([]string{"OVS_RUNDIR=" + s.e.dir}, vswOfctl, args...)
	if err != nil {
		t.Fatalf("ovs-ofctl %q: %v", args, err)
	}
	return out
}

// tunFlows gives node n's br-int three flows: packets from vif take
// sendActs and go out of tun0; those from tun0 that match recvMatch take
// recvActs and go to vif; other packets from tun0 are dropped.
func tunFlows(t *testing.T, n *tunNode, sendActs, recvMatch, recvActs string) {
	t.Helper()
	for _, f := range []string{
		"priority=100,in_port=vif,actions=" + sendActs + "output:tun0",
		"priority=100,in_port=tun0," + recvMatch + ",actions=" + recvActs + "output:vif",
		"priority=50,in_port=tun0,actions=drop",
	} {
		n.sw.ofctl(t, "add-flow", "br-int", f)
	}
}

// TestTunnelGeneveOptions: two govs switches joined by Geneve exchange
// OVN's option (class 0x102, type 0x80, 4 bytes) as tun_metadata0, set
// and matched by flows that Debian's ovs-ofctl loads (set_field, and a
// move into it on the other side; a match, and a move out of it): ping
// passes both ways with the right value, and packets with another value
// are dropped. The datapath flows show the options as OVS prints them.
func TestTunnelGeneveOptions(t *testing.T) {
	testGeneveOptions(t, vswBinary(t))
}

// TestTunnelGeneveOptionsDebian is TestTunnelGeneveOptions with Debian's
// ovs-vswitchd (userspace datapath, in its namespace) as the far side:
// the options govs sends and receives are OVS's.
func TestTunnelGeneveOptionsDebian(t *testing.T) {
	testGeneveOptions(t, "/usr/sbin/ovs-vswitchd")
}

// geneveTnlPush is b's tnl_push towards a, as OVS 3.1 prints it.
var geneveTnlPush = regexp.MustCompile(`actions:tnl_push\(tnl_port\(\d+\),header\(size=58,type=5,` +
	`eth\(dst=[0-9a-f:]{17},src=[0-9a-f:]{17},dl_type=0x0800\),` +
	`ipv4\(src=172\.31\.0\.2,dst=172\.31\.0\.1,proto=17,tos=0,ttl=64,frag=0x4000\),` +
	`udp\(src=0,dst=6081,csum=0x0\),geneve\(crit,vni=0x[0-9a-f]+,options\(\{class=0x102,type=0x80,len=4,0xb0002\}\)\)\),` +
	`out_port\(\d+\)\),\d+\n`)

// testGeneveOptions runs the test with ovs-vswitchd far as side b.
func testGeneveOptions(t *testing.T, far string) {
	start := time.Now()
	a := tunSetup(t, "a", "172.31.0.1/24", "172.31.0.2", "geneve", "10.9.0.1/24")
	b := tunSetupBin(t, "b", far, "172.31.0.2/24", "172.31.0.1", "geneve", "10.9.0.2/24")
	tunUnderlay(t, a, b)
	for _, n := range []*tunNode{a, b} {
		n.sw.ofctl(t, "add-tlv-map", "br-int", "{class=0x102,type=0x80,len=4}->tun_metadata0,{class=0xffff,type=1,len=124}->tun_metadata1")
	}
	// a sets 0xa0001 with set_field and wants 0xb0002; b puts 0xb0002
	// there with a move from a register and wants 0xa0001, copying it
	// to reg1 on the way (a move out of it).
	tunFlows(t, a, "set_field:0xa0001->tun_metadata0,", "tun_metadata0=0xb0002", "")
	tunFlows(t, b, "load:0xb0002->NXM_NX_REG0[],move:NXM_NX_REG0[]->NXM_NX_TUN_METADATA0[0..31],",
		"tun_metadata0=0xa0001/0xffffff", "move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG1[0..14],")
	// ovs-ofctl shows a mask that covers the value's bytes as none
	// (as with Debian's ovs-vswitchd, see tlvCommands).
	if dump := b.sw.ofctl(t, "dump-flows", "--no-stats", "br-int"); !strings.Contains(dump, "tun_metadata0=0xa0001,") ||
		!strings.Contains(dump, "move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG1[0..14]") {
		t.Errorf("b's flows:\n%s", dump)
	}
	a.vif.waitPing("10.9.0.2")
	b.vif.waitPing("10.9.0.1")
	// The match's bits and those the move reads, as Debian's shows.
	want := "geneve({class=0x102,type=0x80,len=4,0xa0001/0x7fffffff})"
	if dump := b.sw.run("dpctl/dump-flows"); !strings.Contains(dump, want) {
		t.Errorf("b's datapath flows lack %s:\n%s", want, dump)
	}
	want = "options({class=0x102,type=0x80,len=4,0xb0002})"
	if dump := b.sw.run("dpctl/dump-flows"); !strings.Contains(dump, want) {
		t.Errorf("b's datapath flows lack %s:\n%s", want, dump)
	}
	// The whole tnl_push as OVS prints its header template (as the last
	// action, without a clone), with govs or Debian's as b.
	if dump := b.sw.run("dpctl/dump-flows"); !geneveTnlPush.MatchString(dump) {
		t.Errorf("b's datapath flows lack a tnl_push as OVS prints it (%s):\n%s", geneveTnlPush, dump)
	}

	// a now sends 0xc0001: b drops it.
	a.sw.ofctl(t, "mod-flows", "br-int", "in_port=vif,actions=set_field:0xc0001->tun_metadata0,output:tun0")
	a.vif.noPing("10.9.0.2")
	vswWait(t, vswTimeout, "b's drop flow for 0xc0001", func() bool {
		dump := b.sw.run("dpctl/dump-flows")
		for _, l := range strings.Split(dump, "\n") {
			if strings.Contains(l, "0xc0001") && strings.HasSuffix(l, "actions:drop") {
				return true
			}
		}
		return false
	})

	// 136 bytes of options (OVN's and a 124-byte one): b takes them
	// (OVS takes up to 252; govs dropped more than 64).
	a.sw.ofctl(t, "mod-flows", "br-int", "in_port=vif,actions=set_field:0xa0001->tun_metadata0,set_field:0x"+
		strings.Repeat("5a", 124)+"->tun_metadata1,output:tun0")
	a.vif.waitPing("10.9.0.2")
	if dump := b.sw.run("dpctl/dump-flows"); !strings.Contains(dump, "{class=0xffff,type=0x1,len=124}") {
		t.Errorf("b's datapath flows lack the 124-byte option:\n%s", dump)
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
