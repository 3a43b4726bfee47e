package ofproto

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// ofPortString formats an OpenFlow port number as OVS's
// ofputil_port_to_string.
func ofPortString(p uint32) string {
	switch p {
	case ofp.PortInPort:
		return "IN_PORT"
	case 0xfffffff9:
		return "TABLE"
	case ofp.PortNormal:
		return "NORMAL"
	case ofp.PortFlood:
		return "FLOOD"
	case ofp.PortAll:
		return "ALL"
	case ofp.PortController:
		return "CONTROLLER"
	case ofp.PortLocal:
		return "LOCAL"
	case ofp.PortAny:
		return "ANY"
	}
	return strconv.FormatUint(uint64(p), 10)
}

// formatOFMatch formats an OpenFlow match as OVS's match_format does for
// the fields govs matches on (empty for a match-all).
func formatOFMatch(m *ofp.Match) string {
	k, mk := m.Flow.Key, flow.Mask(m.Mask.Key)
	s := formatMatch(&k, &mk, ofPortString(m.Flow.InPort), false, false, ofTunMD(m))
	var extra []string
	if m.Mask.ConjID != 0 {
		// OVS's match_format puts conj_id before the packet fields.
		if s == "" {
			s = fmt.Sprintf("conj_id=%d", m.Flow.ConjID)
		} else {
			s = fmt.Sprintf("conj_id=%d,%s", m.Flow.ConjID, s)
		}
	}
	for i := range m.Mask.Regs {
		if mk := m.Mask.Regs[i]; mk != 0 {
			if mk == ^uint32(0) {
				extra = append(extra, fmt.Sprintf("reg%d=%#x", i, m.Flow.Regs[i]))
			} else {
				extra = append(extra, fmt.Sprintf("reg%d=%#x/%#x", i, m.Flow.Regs[i], mk))
			}
		}
	}
	if mk := m.Mask.Metadata; mk != 0 {
		if mk == ^uint64(0) {
			extra = append(extra, fmt.Sprintf("metadata=%#x", m.Flow.Metadata))
		} else {
			extra = append(extra, fmt.Sprintf("metadata=%#x/%#x", m.Flow.Metadata, mk))
		}
	}
	if len(extra) == 0 {
		return s
	}
	if s == "" {
		return strings.Join(extra, ",")
	}
	return s + "," + strings.Join(extra, ",")
}

func formatRef(r ofp.FieldRef) string { return formatRefNamed(strings.ToUpper(r.Field.Name), r) }

// formatRefNamed formats r's bit range of the field called name.
func formatRefNamed(name string, r ofp.FieldRef) string {
	if r.Ofs == 0 && r.NBits == r.Field.Len*8 {
		return name + "[]"
	}
	if r.NBits == 1 {
		return fmt.Sprintf("%s[%d]", name, r.Ofs)
	}
	return fmt.Sprintf("%s[%d..%d]", name, r.Ofs, r.Ofs+r.NBits-1)
}

// formatAction formats an action as ofproto/trace lists it (OVS's
// ofpact_format, for the actions govs executes).
func formatAction(a *ofp.Action) string {
	switch a.Type {
	case ofp.ActOutput:
		switch a.Port {
		case ofp.PortNormal, ofp.PortFlood, ofp.PortAll, ofp.PortLocal, ofp.PortInPort:
			return ofPortString(a.Port)
		}
		return "output:" + ofPortString(a.Port)
	case ofp.ActOutputReg:
		return "output:" + formatRef(a.Src)
	case ofp.ActController:
		return formatController(a)
	case ofp.ActResubmit:
		port := ""
		if a.Port != ofp.PortInPort {
			port = ofPortString(a.Port)
		}
		if a.Table == 0xff {
			return "resubmit:" + port
		}
		return fmt.Sprintf("resubmit(%s,%d)", port, a.Table)
	case ofp.ActGotoTable:
		return fmt.Sprintf("goto_table:%d", a.Table)
	case ofp.ActSetField:
		return fmt.Sprintf("set_field:0x%s/0x%s->%s", hex.EncodeToString(a.Value), hex.EncodeToString(a.Mask), a.Field.Name)
	case ofp.ActMove:
		return "move:" + formatRef(a.Src) + "->" + formatRef(a.Dst)
	case ofp.ActStackPush:
		return "push:" + formatRef(a.Src)
	case ofp.ActStackPop:
		return "pop:" + formatRef(a.Dst)
	case ofp.ActWriteMetadata:
		return fmt.Sprintf("write_metadata:%#x/%#x", a.Metadata, a.MetadataMask)
	case ofp.ActPushVLAN:
		return fmt.Sprintf("push_vlan:%#x", a.VLAN)
	case ofp.ActPopVLAN:
		return "pop_vlan"
	case ofp.ActSetVLANVID:
		return fmt.Sprintf("mod_vlan_vid:%d", a.VLAN)
	case ofp.ActSetVLANPCP:
		return fmt.Sprintf("mod_vlan_pcp:%d", a.VLAN)
	case ofp.ActNote:
		return "note:" + hex.EncodeToString(a.Data)
	case ofp.ActExit:
		return "exit"
	case ofp.ActDecTTL:
		// OVS's format_DEC_TTL: the ids only when sent as
		// NXAST_DEC_TTL_CNT_IDS.
		if a.CntIDs == nil {
			return "dec_ttl"
		}
		ids := make([]string, len(a.CntIDs))
		for i, id := range a.CntIDs {
			ids[i] = fmt.Sprint(id)
		}
		return "dec_ttl(" + strings.Join(ids, ",") + ")"
	case ofp.ActConjunction:
		return fmt.Sprintf("conjunction(%d,%d/%d)", a.ID, a.Clause+1, a.NClauses)
	case ofp.ActCT:
		return ctName(a)
	case ofp.ActNAT:
		return natName(a.NAT)
	case ofp.ActCTClear:
		return "ct_clear"
	case ofp.ActLearn:
		return formatLearn(a.Learn)
	case ofp.ActFinTimeout:
		return a.Fin.Format()
	case ofp.ActCheckPktLarger:
		return fmt.Sprintf("check_pkt_larger(%d)->%s", a.PktLen, formatRef(a.Dst))
	case ofp.ActMultipath:
		return a.Multipath.Format(nxmRef(a.Multipath.Dst))
	case ofp.ActBundle:
		return formatBundle(a.Bundle)
	case ofp.ActClone:
		parts := make([]string, len(a.Nested))
		for i := range a.Nested {
			parts[i] = formatAction(&a.Nested[i])
		}
		return "clone(" + strings.Join(parts, ",") + ")"
	case ofp.ActMeter:
		return fmt.Sprintf("meter:%d", a.ID)
	case ofp.ActClearActions:
		return "clear_actions"
	case ofp.ActGroup:
		return fmt.Sprintf("group:%d", a.ID)
	case ofp.ActWriteActions:
		parts := make([]string, len(a.Nested))
		for i := range a.Nested {
			parts[i] = formatAction(&a.Nested[i])
		}
		return "write_actions(" + strings.Join(parts, ",") + ")"
	}
	return fmt.Sprintf("action(%d)", a.Type)
}

// FormatFlowBrief formats a flow as ovs-appctl bridge/dump-flows lists it
// (OVS's flow_stats_ds): "duration=Ns, n_packets=N, n_bytes=N,
// priority=N,MATCH,actions=ACTIONS", the table when not 0.
func FormatFlowBrief(f *ofp.FlowStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "duration=%ds, ", int(f.Duration/time.Second))
	if f.Table != 0 {
		fmt.Fprintf(&b, "table_id=%d, ", f.Table)
	}
	fmt.Fprintf(&b, "n_packets=%d, n_bytes=%d, priority=%d,", f.Packets, f.Bytes, f.Priority)
	if m := formatOFMatch(&f.Match); m != "" {
		b.WriteString(m + ",")
	}
	b.WriteString("actions=")
	if len(f.Actions) == 0 {
		b.WriteString("drop")
	}
	for i := range f.Actions {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(formatAction(&f.Actions[i]))
	}
	return b.String()
}

// formatController formats a controller action as OVS's
// format_CONTROLLER: CONTROLLER:max_len when all else is default, else
// the arguments that are not.
func formatController(a *ofp.Action) string {
	if a.Reason == ofp.PacketInAction && a.ControllerID == 0 && len(a.Userdata) == 0 && !a.Pause && a.ID == 0 {
		return fmt.Sprintf("CONTROLLER:%d", a.MaxLen)
	}
	var args []string
	if a.Reason != ofp.PacketInAction {
		args = append(args, "reason="+pinReasonName(a.Reason))
	}
	if a.MaxLen != 0xffff {
		args = append(args, fmt.Sprintf("max_len=%d", a.MaxLen))
	}
	if a.ControllerID != 0 {
		args = append(args, fmt.Sprintf("id=%d", a.ControllerID))
	}
	if len(a.Userdata) > 0 {
		hex := make([]string, len(a.Userdata))
		for i, c := range a.Userdata {
			hex[i] = fmt.Sprintf("%02x", c)
		}
		args = append(args, "userdata="+strings.Join(hex, "."))
	}
	if a.Pause {
		args = append(args, "pause")
	}
	if a.ID != 0 {
		args = append(args, fmt.Sprintf("meter_id=%d", a.ID))
	}
	return "controller(" + strings.Join(args, ",") + ")"
}

// pinReasonName names a packet-in reason as OVS's
// ofputil_packet_in_reason_to_string.
func pinReasonName(r uint8) string {
	switch r {
	case ofp.PacketInNoMatch:
		return "no_match"
	case ofp.PacketInAction:
		return "action"
	case ofp.PacketInInvalidTTL:
		return "invalid_ttl"
	case ofp.PacketInActionSet:
		return "action_set"
	case ofp.PacketInGroup:
		return "group"
	case ofp.PacketInPacketOut:
		return "packet_out"
	}
	return fmt.Sprint(r)
}

// ofTunMD formats the tun_metadata fields of m, resolved through the
// bridge's option map.
func ofTunMD(m *ofp.Match) string {
	var b strings.Builder
	for _, e := range m.TunMD {
		ofp.FormatTunMDEntry(&b, e.Idx, e.Value, e.Mask)
	}
	return b.String()
}
