package ofp

import (
	"encoding/binary"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
)

// TestMatch10DumpDecodes: exact OpenFlow 1.0 matches as Debian's
// ovs-testcontroller installs them (dl_vlan=0xffff: untagged) come back in
// NXST_FLOW and OFPST_FLOW replies that Debian's ovs-ofctl decodes as it
// decodes OVS's: arp_op exact, and no vlan_pcp without a VID.
func TestMatch10DumpDecodes(t *testing.T) {
	for _, c := range []struct {
		name     string
		ethType  uint16
		proto    uint8
		want10   string
		want13   string
		wildcard uint32
	}{
		{"arp", 0x0806, 1, "arp,in_port=1,vlan_tci=0x0000,", "arp,in_port=1,vlan_tci=0x0000/0x1fff,", 0},
		{"icmp", 0x0800, 1, "icmp,in_port=1,vlan_tci=0x0000,", "icmp,in_port=1,vlan_tci=0x0000/0x1fff,", 0},
		{"tcp-pcp-wild", 0x0800, 6, "tcp,in_port=1,vlan_tci=0x0000,", "tcp,in_port=1,vlan_tci=0x0000/0x1fff,", fw10DLVLANPCP},
	} {
		b := make([]byte, 40)
		binary.BigEndian.PutUint32(b, c.wildcard)
		binary.BigEndian.PutUint16(b[4:], 1)
		binary.BigEndian.PutUint16(b[18:], 0xffff)
		binary.BigEndian.PutUint16(b[22:], c.ethType)
		b[25] = c.proto
		m := decodeMatch10(b)
		for _, v := range []Version{V10, V13} {
			msgs := EncodeFlowStatsReply(v, 1, v == V10, []FlowStats{{Match: m, Actions: []Action{{Type: ActOutput, Port: 2}}}})
			out := ofpPrint(t, one(t, msgs))
			want := c.want10
			if v != V10 {
				want = c.want13
			}
			if !strings.Contains(out, "priority=0,"+want) {
				t.Errorf("%s %s:\n%s\nwant a flow %q", c.name, v, out, want)
			}
		}
	}
}

// ofpPrint decodes an OpenFlow message with Debian's ovs-ofctl ofp-print.
func ofpPrint(t *testing.T, b []byte) string {
	t.Helper()
	const ofctl = "/usr/bin/ovs-ofctl"
	if _, err := exec.LookPath(ofctl); err != nil {
		t.Fatalf("needs Debian's ovs-ofctl (package openvswitch-common): %v", err)
	}
	out, err := exec.Command(ofctl, "ofp-print", hex.EncodeToString(b)).CombinedOutput()
	if err != nil {
		t.Fatalf("ofp-print: %v\n%s", err, out)
	}
	return string(out)
}
