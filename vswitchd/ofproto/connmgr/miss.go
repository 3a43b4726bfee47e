package connmgr

import "github.com/govs/govs/vswitchd/ofproto/ofp"

// MissSink is a Source told whether a table miss sends packet-ins.
type MissSink interface {
	// SetPacketInOnMiss turns OVS's miss rule on or off: a packet that
	// matches no flow in table 0 or a goto_table's table goes to the
	// controllers as OFPR_NO_MATCH instead of being dropped.
	SetPacketInOnMiss(on bool)
}

// updateMiss tells the source whether some connection wants packet-ins
// on a table miss: one that speaks OpenFlow 1.0 to 1.2 or has not
// negotiated yet, as OVS's connmgr_wants_packet_in_on_miss (OpenFlow 1.3
// made a miss drop unless a table-miss flow says otherwise).
func (m *Manager) updateMiss() {
	ms, ok := m.src.(MissSink)
	if !ok {
		return
	}
	m.missMu.Lock()
	defer m.missMu.Unlock()
	want := false
	for _, c := range m.connList() {
		if c.negotiated() < ofp.V13 {
			want = true
			break
		}
	}
	if m.missKnown && m.missWanted == want {
		return
	}
	m.missKnown, m.missWanted = true, want
	ms.SetPacketInOnMiss(want)
}

// wantsImplicitMiss reports whether a connection of version v gets the
// packet-ins of the miss rule (OVS's ofconn_wants_packet_in_on_miss with
// the default table-miss configuration).
func wantsImplicitMiss(v ofp.Version) bool { return v < ofp.V13 }
