package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTunnelVXLANGBPKernel: VXLAN's Group Based Policy between govs
// (tun0 with options:exts=gbp) and a Linux vxlan device with the "gbp"
// flag, which in non-external mode sends a packet's skb->mark as the
// policy ID and marks a received packet with the ID it carries. `ping -m
// 77` from the kernel's side sends ID 77, which a govs rule on
// tun_gbp_id=77 counts; govs sets tun_gbp_id=88 on the VIF's packets,
// and the kernel's echo replies (fwmark_reflect: the request's mark)
// come back with ID 88, which another rule counts: both directions, as
// Debian's ovs-ofctl dump-flows reports. A second VXLAN port without
// exts=gbp on the same UDP port is refused with OVS's error; without
// exts=gbp tun0's vport drops G-bit packets as tunnel pop errors.
func TestTunnelVXLANGBPKernel(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "gbp", "172.31.6.1/24", "172.31.6.2", "vxlan", "10.9.6.1/24")
	e := a.sw.e
	e.mustVsctl("set", "interface", "tun0", "options:exts=gbp")
	farNS := tunKernelVXLAN(t, a, "gtun-gbpfar", "172.31.6.2/24", "172.31.6.1", "10.9.6.2/24", "gbp")
	// Echo replies carry the request's mark, so the ID it came with.
	farNS.mustExec("sysctl", "-qw", "net.ipv4.fwmark_reflect=1")
	vif, tun := e.ofport("vif"), e.ofport("tun0")
	ofctl := func(args ...string) string {
		t.Helper()
		out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ofctl("del-flows", "br-int")
	for _, f := range []string{
		fmt.Sprintf("priority=10,in_port=%d,actions=set_field:88->tun_gbp_id,output:%d", vif, tun),
		fmt.Sprintf("priority=20,in_port=%d,tun_gbp_id=77,actions=output:%d", tun, vif),
		fmt.Sprintf("priority=20,in_port=%d,tun_gbp_id=88,actions=output:%d", tun, vif),
		fmt.Sprintf("priority=10,in_port=%d,actions=output:%d", tun, vif),
	} {
		ofctl("add-flow", "br-int", f)
	}
	// n_packets of the rule on tun_gbp_id=id.
	count := func(id int) int {
		t.Helper()
		out := ofctl("dump-flows", "br-int", fmt.Sprintf("tun_gbp_id=%d", id))
		m := regexp.MustCompile(`n_packets=(\d+),.*priority=20,tun_gbp_id=` + strconv.Itoa(id) + `,`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no rule on tun_gbp_id=%d:\n%s", id, out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}

	// govs to the kernel and back: the replies carry ID 88.
	a.vif.waitPing("10.9.6.2")
	before := count(88)
	if err := a.vif.ping("10.9.6.2", 3); err != nil {
		t.Fatal(err)
	}
	// The rules' counters follow the datapath flows' statistics.
	vswWait(t, vswTimeout, "tun_gbp_id=88 to count 3 echo replies", func() bool { return count(88) >= before+3 })
	// The kernel to govs with ID 77 (ping's SO_MARK).
	before = count(77)
	if _, err := farNS.exec("ping", "-q", "-n", "-m", "77", "-c", "3", "-i", "0.2", "-W", "2", "10.9.6.1"); err != nil {
		t.Fatalf("ping -m 77 from the kernel's side: %v", err)
	}
	vswWait(t, vswTimeout, "tun_gbp_id=77 to count 3 echo requests", func() bool { return count(77) >= before+3 })
	dump := a.sw.run("dpctl/dump-flows")
	for _, want := range []string{"vxlan(gbp(id=77)),", "vxlan(gbp(id=88)),", "vxlan(flags=0x88000058,vni=0x5)"} {
		if !strings.Contains(dump, want) {
			t.Errorf("no %s in the datapath flows:\n%s", want, dump)
		}
	}

	// VXLAN-GBP and plain VXLAN on one UDP port: the second is refused.
	e.vsctl("add-port", "br-int", "tun1", "--", "set", "interface", "tun1", "type=vxlan", "options:remote_ip=172.31.6.9")
	if got, want := e.mustVsctl("get", "interface", "tun1", "error"),
		`"tun1: VXLAN-GBP, and non-VXLAN-GBP tunnels can't be configured on the same dst_port"`; got != want {
		t.Errorf("tun1's error %s, want %s", got, want)
	}
	e.mustVsctl("del-port", "br-int", "tun1")

	// Without exts=gbp, G-bit packets are malformed: dropped, counted.
	e.mustVsctl("remove", "interface", "tun0", "options", "exts")
	pop := tunCoverage(a.sw, "datapath_drop_tunnel_pop_error")
	if _, err := farNS.exec("ping", "-q", "-n", "-m", "77", "-c", "2", "-i", "0.2", "-W", "1", "10.9.6.1"); err == nil {
		t.Error("ping -m 77 passed a tunnel without exts=gbp")
	}
	vswWait(t, vswTimeout, "G-bit packets counted as tunnel pop errors", func() bool {
		return tunCoverage(a.sw, "datapath_drop_tunnel_pop_error") >= pop+2
	})
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
