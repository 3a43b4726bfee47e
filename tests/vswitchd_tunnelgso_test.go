package tests

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// tunCoverage returns the total of coverage/show's event name on s, 0 if
// it is not listed.
func tunCoverage(s *tnlSwitch, name string) int {
	m := regexp.MustCompile(`(?m)^` + name + `\s.*total: (\d+)$`).FindStringSubmatch(s.run("coverage/show"))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestTunnelUDPGSO: with other_config:tunnel-udp-gso=true on the tunnel
// (set live, after traffic flowed without it), the VIFs' TCP super-frames
// cross the underlay whole as UDP GSO frames: Geneve between two govs both
// ways (the receiver takes them whole and decapsulates them, with the
// option or without) and VXLAN to a Linux vxlan device (whose kernel
// segments them on receive).
func TestTunnelUDPGSO(t *testing.T) {
	start := time.Now()
	a := tunSetup(t, "ga", "172.31.4.1/24", "172.31.4.2", "geneve", "10.9.4.1/24")
	b := tunSetup(t, "gb", "172.31.4.2/24", "172.31.4.1", "geneve", "10.9.4.2/24")
	tunUnderlay(t, a, b)
	a.vif.waitPing("10.9.4.2")
	b.vif.waitPing("10.9.4.1")
	if n := tunCoverage(a.sw, "tunnel_udp_gso_sent"); n != 0 {
		t.Fatalf("%d UDP GSO frames sent with the option off", n)
	}
	// On a only: b, without it, takes the frames whole all the same.
	a.sw.e.mustVsctl("set", "interface", "tun0", "other_config:tunnel-udp-gso=true")
	a.vif.waitPing("10.9.4.2")
	out := a.vif.iperf(b.vif, "10.9.4.2", "-t", "1")
	t.Logf("Geneve with tunnel-udp-gso, a to b: %s", vswIperfSummary(out))
	vswWait(t, vswTimeout, "UDP GSO frames counted", func() bool {
		return tunCoverage(a.sw, "tunnel_udp_gso_sent") > 0 && tunCoverage(b.sw, "tunnel_udp_gso_received") > 0
	})
	if n := tunCoverage(b.sw, "tunnel_udp_gso_sent"); n != 0 {
		t.Errorf("b sent %d UDP GSO frames without the option", n)
	}
	b.sw.e.mustVsctl("set", "interface", "tun0", "other_config:tunnel-udp-gso=true")
	out = b.vif.iperf(a.vif, "10.9.4.1", "-t", "1")
	t.Logf("Geneve with tunnel-udp-gso, b to a: %s", vswIperfSummary(out))
	vswWait(t, vswTimeout, "b's UDP GSO frames counted", func() bool {
		return tunCoverage(b.sw, "tunnel_udp_gso_sent") > 0 && tunCoverage(a.sw, "tunnel_udp_gso_received") > 0
	})
	if pop := tunCoverage(b.sw, "datapath_drop_tunnel_pop_error"); pop != 0 {
		t.Errorf("%d tunnel packets dropped as malformed on b", pop)
	}

	// A Linux vxlan device on the far side: its UDP socket segments what
	// it receives whole (udp_rcv_segment).
	k := tunSetup(t, "gk", "172.31.5.1/24", "172.31.5.2", "vxlan", "10.9.5.1/24")
	k.sw.e.mustVsctl("set", "interface", "tun0", "other_config:tunnel-udp-gso=true")
	farNS := tunKernelVXLAN(t, k, "gtun-gkfar", "172.31.5.2/24", "172.31.5.1", "10.9.5.2/24")
	k.vif.waitPing("10.9.5.2")
	farNS.waitPing("10.9.5.1")
	out = k.vif.iperf(farNS, "10.9.5.2", "-t", "1")
	t.Logf("iperf3 TCP govs (tunnel-udp-gso) to kernel vxlan: %s", vswIperfSummary(out))
	vswWait(t, vswTimeout, "UDP GSO frames to the kernel counted", func() bool { return tunCoverage(k.sw, "tunnel_udp_gso_sent") > 0 })
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
