package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// traceNested returns ofproto/trace's "Datapath actions" of pkt with
// datapath port numbers mapped to port names at every nesting level (a
// port is a number between "(" or "," and "," or ")").
func (s *ofSwitch) traceNested(pkt string) string {
	s.t.Helper()
	res, names := s.traceLine(pkt)
	port := regexp.MustCompile(`(^|[(,])(\d+)($|[,)])`)
	// Twice: a match consumes the delimiter the next port starts with.
	for range 2 {
		res = port.ReplaceAllStringFunc(res, func(tok string) string {
			sub := port.FindStringSubmatch(tok)
			if n, ok := names[sub[2]]; ok {
				return sub[1] + n + sub[3]
			}
			return tok
		})
	}
	return s.normalizeOfctl(res)
}

// compareFlows loads flows into both switches with add-flows and compares
// dump-flows in OpenFlow 1.0, 1.3 and 1.5, then the commands more.
func compareFlows(t *testing.T, deb, govs *ofSwitch, flows string, more ...[]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(flows), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := [][]string{{"add-flows", "BR", file}, {"dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"}}
	for i, args := range append(cmds, more...) {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
}

// TestOpenFlowCheckPktLarger: check_pkt_larger (OVN's router MTU check)
// loads, dumps and is refused as on Debian's ovs-vswitchd, traces to the
// same check_pkt_len datapath action, and steers real traffic by length:
// pings larger than the limit take one port, smaller ones another.
func TestOpenFlowCheckPktLarger(t *testing.T) {
	deb, govs := startSwitchPair(t, "gckd", "10.188.0", "gcko", "10.189.0")
	compareFlows(t, deb, govs, `table=0,priority=100,in_port=1,ip,actions=check_pkt_larger(600)->NXM_NX_REG0[3],resubmit(,1)
table=0,priority=90,in_port=2,ip,actions=load:0x5->NXM_NX_REG1[],check_pkt_larger(64)->NXM_NX_XXREG1[100],goto_table:2
table=0,priority=80,in_port=3,ip,actions=output:1,check_pkt_larger(1000)->NXM_NX_REG0[0]
table=0,priority=70,in_port=3,arp,actions=resubmit(,3),output:1
table=0,priority=0,actions=NORMAL
table=1,priority=10,reg0=0x8/0x8,actions=output:3
table=1,priority=5,actions=output:2
table=2,priority=10,xxreg1=0x10000000000000000000000000/0x10000000000000000000000000,actions=output:3
table=2,priority=5,reg1=5,actions=mod_dl_src:00:00:00:00:00:09,output:1
table=3,actions=check_pkt_larger(100)->NXM_NX_REG2[1],output:2
`,
		[]string{"add-flow", "BR", "ip,actions=check_pkt_larger(100)->NXM_NX_REG0[0..1]"},
		[]string{"add-flow", "BR", "ip,actions=check_pkt_larger(100)->NXM_NX_REG0[32]"},
		[]string{"add-flow", "BR", "ip,actions=check_pkt_larger(70000)->NXM_NX_REG0[1]"})
	for _, pkt := range []string{"in_port=1,icmp,nw_src=10.0.0.1", "in_port=2,udp,nw_src=10.0.0.2",
		"in_port=3,tcp", "in_port=3,arp"} {
		if want, got := deb.traceNested(pkt), govs.traceNested(pkt); got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}

	// Traffic: a's ICMP requests larger than 600 bytes go to the internal
	// port and are lost, smaller ones reach b; then the other way round.
	steer := func(gt, le string) {
		t.Helper()
		govs.replaceFlows("table=0,priority=100,in_port=1,icmp,actions=check_pkt_larger(600)->NXM_NX_REG0[3],resubmit(,1)",
			"table=0,priority=0,actions=NORMAL",
			"table=1,priority=10,reg0=0x8/0x8,actions=output:"+gt, "table=1,priority=5,actions=output:"+le)
	}
	pingSize := func(size string) error {
		_, err := govs.a.exec("ping", "-q", "-n", "-c", "3", "-i", "0.05", "-s", size, "-w", vswPingDeadline, "10.189.0.2")
		return err
	}
	noPingSize := func(size string) bool {
		_, err := govs.a.exec("ping", "-q", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-s", size, "10.189.0.2")
		return err != nil
	}
	steer("3", "2")
	govs.a.waitPing("10.189.0.2")
	if !noPingSize("1000") {
		t.Error("a 1000-byte ping reached b; check_pkt_larger(600) sends it to the internal port")
	}
	steer("2", "3")
	if err := pingSize("1000"); err != nil {
		t.Errorf("a 1000-byte ping with larger packets steered to b: %v", err)
	}
	govs.a.noPing("10.189.0.2")
}

// sctpHairpin is run in a namespace: it sends an SCTP packet (ports 5000
// to 7000, a right CRC32c, a chunk type the kernel drops silently) to
// argv[1] and prints the TOS byte and whether the CRC32c is right of the
// packet that comes back to port 9999.
const sctpHairpin = `import socket, struct, sys
def crc(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xffffffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, 132)
s.settimeout(1)
head = struct.pack('!HHI', 5000, 7000, 0x01020304)
chunk = bytes([0x3f, 0, 0, 20]) + bytes(range(16))
pkt = head + struct.pack('<I', crc(head + bytes(4) + chunk)) + chunk
for _ in range(5):
    s.sendto(pkt, (sys.argv[1], 0))
    try:
        while True:
            d, _ = s.recvfrom(2048)
            sc = d[(d[0] & 15) * 4:]
            if len(sc) >= 12 and struct.unpack('!HH', sc[:4]) == (5000, 9999):
                ok = struct.unpack('<I', sc[8:12])[0] == crc(sc[:8] + bytes(4) + sc[12:])
                print('tos=%#x crc=%s' % (d[1], 'ok' if ok else 'bad'))
                sys.exit(0)
    except socket.timeout:
        pass
print('nothing came back')
sys.exit(1)
`

// TestOpenFlowSetFields: setting the TOS byte's DSCP and ECN bits, SCTP
// ports and pkt_mark loads, dumps and traces as on Debian's ovs-vswitchd;
// on the wire the TOS bits are set and the SCTP CRC32c is right.
func TestOpenFlowSetFields(t *testing.T) {
	deb, govs := startSwitchPair(t, "gsfd", "10.190.0", "gsfo", "10.191.0")
	compareFlows(t, deb, govs, `priority=100,in_port=1,tcp,actions=mod_nw_tos:32,output:2
priority=100,in_port=1,udp,actions=set_field:5->ip_dscp,output:2
priority=100,in_port=1,icmp,actions=mod_nw_ecn:1,output:2
priority=100,in_port=1,tcp6,actions=mod_nw_tos:32,output:2
priority=100,in_port=1,udp6,actions=mod_nw_ecn:2,output:2
priority=100,in_port=1,sctp,actions=mod_tp_src:99,output:2
priority=100,in_port=1,sctp6,actions=set_field:7->sctp_dst,output:2
priority=100,in_port=2,actions=set_field:5->pkt_mark,resubmit(,1)
priority=100,in_port=3,ip,actions=load:0x2->NXM_NX_IP_ECN[],set_field:0x10/0x30->pkt_mark,output:1
table=1,priority=10,pkt_mark=5,actions=output:3
table=1,priority=5,actions=drop
`,
		[]string{"add-flow", "BR", "actions=mod_nw_tos:32"},
		[]string{"add-flow", "BR", "tcp,actions=set_field:7->sctp_src"},
		[]string{"add-flow", "BR", "ip,actions=mod_nw_tos:33"},
		// Masked set_field and partial loads (OpenFlow 1.0 shows a
		// masked set_field of a field it has an action for as that
		// action, its mask dropped, as OVS's).
		[]string{"-O", "OpenFlow15", "add-flow", "BR", "priority=91,in_port=1,udp,actions=set_field:0x100/0xff00->udp_dst,output:2"},
		[]string{"-O", "OpenFlow15", "add-flow", "BR", "priority=92,in_port=1,arp,actions=set_field:1.2.0.0/255.255.0.0->arp_tpa," +
			"set_field:00:00:00:00:00:05/00:00:00:00:00:ff->eth_src,output:2"},
		[]string{"-O", "OpenFlow15", "add-flow", "BR", "priority=93,in_port=2,tcp6,actions=set_field:0x50/0xf0->tcp_src,set_field:::1/::ffff->ipv6_src,output:1"},
		[]string{"-O", "OpenFlow13", "add-flow", "BR", "priority=94,in_port=2,ip,actions=set_field:0x10->ip_dscp,set_field:1.2.3.4->ip_src,output:1"},
		[]string{"add-flow", "BR", "priority=95,in_port=1,tcp,actions=load:0x1->NXM_OF_TCP_DST[2..3],load:0x1->NXM_OF_IP_TOS[2..3],output:2"},
		// OpenFlow 1.1's set actions (mod_nw_ecn included), and the
		// 1.0 and 1.1 forms of 1.3's set_field of ip_dscp and ip_ecn.
		[]string{"-O", "OpenFlow11", "add-flow", "BR", "priority=96,in_port=1,tcp,actions=mod_dl_src:00:00:00:00:00:05,mod_nw_src:1.2.3.4,mod_nw_tos:32,mod_nw_ecn:1,mod_tp_dst:99,output:2"},
		[]string{"-O", "OpenFlow11", "add-flow", "BR", "priority=97,in_port=1,sctp,actions=mod_tp_src:7,mod_nw_dst:1.2.3.5,mod_dl_dst:00:00:00:00:00:06,output:2"},
		[]string{"-O", "OpenFlow13", "add-flow", "BR", "priority=98,in_port=1,udp,actions=set_field:8->ip_dscp,set_field:1->ip_ecn,set_field:99->udp_dst,output:2"},
		[]string{"-O", "OpenFlow11", "add-flow", "BR", "priority=99,in_port=1,tcp,actions=mod_nw_ecn:4"},
		[]string{"dump-flows", "--no-stats", "--rsort", "BR"},
		[]string{"-O", "OpenFlow11", "dump-flows", "--no-stats", "--rsort", "BR"},
		[]string{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		[]string{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"})
	for _, pkt := range []string{"in_port=1,tcp,nw_tos=0", "in_port=1,tcp,nw_tos=0x20", "in_port=1,udp,nw_tos=0xff",
		"in_port=1,icmp", "in_port=1,tcp6", "in_port=1,udp6,nw_ecn=2", "in_port=1,sctp",
		"in_port=1,sctp6", "in_port=2,tcp", "in_port=3,tcp,nw_tos=0x21", "in_port=3,udp"} {
		if want, got := deb.traceNested(pkt), govs.traceNested(pkt); got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}

	// On the wire: a's SCTP packet to b comes back to a with its
	// addresses swapped, port 9999, DSCP 8 and ECN 1.
	govs.replaceFlows("priority=100,in_port=1,sctp,actions=mod_tp_dst:9999,mod_nw_tos:32,mod_nw_ecn:1,"+
		"mod_nw_src:10.191.0.2,mod_nw_dst:10.191.0.1,move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],IN_PORT",
		"priority=0,actions=NORMAL")
	govs.a.waitPing("10.191.0.2")
	out, err := govs.a.exec("python3", "-c", sctpHairpin, "10.191.0.2")
	if err != nil || strings.TrimSpace(out) != "tos=0x21 crc=ok" {
		t.Errorf("SCTP hairpin: %v: %q, want tos=0x21 crc=ok", err, out)
	}
}
