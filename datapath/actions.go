package datapath

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// ActionKind is the kind of one datapath action.
type ActionKind uint8

const (
	// ActionOutput sends a copy of the packet, as the actions before it
	// left it, to datapath port Port.
	ActionOutput ActionKind = iota + 1
	// ActionPushVLAN pushes an outer tag with TPID and TCI.
	ActionPushVLAN
	// ActionPopVLAN removes the outer tag; on an untagged packet it does
	// nothing.
	ActionPopVLAN
	// ActionCT sends the packet through the connection tracker with CT's
	// arguments; it sets the packet's ct_* metadata and may NAT it.
	ActionCT
	// ActionCTClear clears the packet's ct_* metadata.
	ActionCTClear
	// ActionRecirc sends the packet back through the datapath's lookup
	// with recirc_id RecircID and its ct_* metadata in the key; it ends
	// the packet's actions.
	ActionRecirc
	// ActionUserspace hands a copy of the packet, as the actions before
	// it left it, to the Upcaller's UserspaceHandler with Cookie (OVS's
	// userspace action, as the controller action uses it).
	ActionUserspace
	// ActionTrunc truncates the copy the next ActionOutput sends to at
	// most MaxLen bytes (OVS's trunc action, for mirrors' snaplen).
	ActionTrunc
	// ActionCount adds each packet and its length, as received, to
	// Counter. It is the Upcaller's accounting (mirror statistics), not a
	// change to the packet, and dump-flows does not show it.
	ActionCount
)

// Action is one datapath action, in the sense of OVS's ODP actions
// (lib/odp-util.c): a translation expresses what to do with a packet as a
// short sequence of them, executed in order on each packet of a flow.
type Action struct {
	Kind ActionKind
	// Port is the datapath port of an ActionOutput.
	Port uint32
	// TPID and TCI are the tag of an ActionPushVLAN; TCI holds PCP, DEI
	// and VID as on the wire.
	TPID, TCI uint16
	// RecircID is an ActionRecirc's recirculation ID.
	RecircID uint32
	// Cookie is an ActionUserspace's cookie, the Upcaller's to interpret.
	Cookie uint32
	// MeterID is an ActionMeter's meter.
	MeterID uint32
	// CT is an ActionCT's arguments; the action list owns it, the
	// datapath never changes it.
	CT *conntrack.Action
	// Field and Val are an ActionSet's field and value (big-endian).
	Field SetField
	Val   [16]byte
	// SetMask, if not nil, makes an ActionSet write only the bits of the
	// field it selects (OVS's set_masked); Val holds the value under it.
	SetMask *[16]byte
	// Tnl is an ActionTnlPush's arguments; the action list owns it.
	Tnl *TnlPush
	// MaxLen is an ActionTrunc's length.
	MaxLen uint32
	// Counter is an ActionCount's counter.
	Counter *Counter
	// PktLen is an ActionCheckPktLen's arguments.
	PktLen *PktLenCheck
}

// CT returns the action that tracks the packet with a's arguments.
func CT(a conntrack.Action) Action { return Action{Kind: ActionCT, CT: &a} }

// CTClear returns the ct_clear action.
func CTClear() Action { return Action{Kind: ActionCTClear} }

// Recirc returns the action that recirculates the packet with id.
func Recirc(id uint32) Action { return Action{Kind: ActionRecirc, RecircID: id} }

// CookieSlowPath marks a userspace action's cookie as OVS's slow_path
// (a frame a protocol of the control path handles, LACP's), not a
// controller action's; with CookieSlowPathSTP too, the protocol is a
// spanning tree's (OVS's slow_path(stp)).
const (
	CookieSlowPath    = 1 << 31
	CookieSlowPathSTP = 1 << 30
)

// Userspace returns the action that hands the packet to the Upcaller's
// UserspaceHandler with cookie.
func Userspace(cookie uint32) Action { return Action{Kind: ActionUserspace, Cookie: cookie} }

// Equal reports whether a and b are the same action (a ct action's
// arguments compared by value).
func (a Action) Equal(b Action) bool {
	if a.Kind != b.Kind || a.Port != b.Port || a.TPID != b.TPID || a.TCI != b.TCI || a.RecircID != b.RecircID || a.Cookie != b.Cookie || a.MeterID != b.MeterID ||
		a.Field != b.Field || a.Val != b.Val || (a.SetMask == nil) != (b.SetMask == nil) || a.SetMask != nil && *a.SetMask != *b.SetMask || !tnlEqual(a.Tnl, b.Tnl) || a.MaxLen != b.MaxLen || a.Counter != b.Counter ||
		!pktLenEqual(a.PktLen, b.PktLen) {
		return false
	}
	if a.CT == nil || b.CT == nil {
		return a.CT == b.CT
	}
	x, y := *a.CT, *b.CT
	if (x.NAT == nil) != (y.NAT == nil) || (x.NAT != nil && *x.NAT != *y.NAT) {
		return false
	}
	x.NAT, y.NAT = nil, nil
	return x == y
}

// Equal reports whether two action lists are the same.
func (as Actions) Equal(bs Actions) bool {
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if !as[i].Equal(bs[i]) {
			return false
		}
	}
	return true
}

// Actions is a translation's action list; an empty list drops the packet.
type Actions []Action

// Output returns the action that outputs to datapath port port.
func Output(port uint32) Action { return Action{Kind: ActionOutput, Port: port} }

// PushVLAN returns the action that pushes an outer tag; a zero tpid means
// 802.1Q (0x8100).
func PushVLAN(tpid, tci uint16) Action {
	if tpid == 0 {
		tpid = flow.EthTypeVLAN
	}
	return Action{Kind: ActionPushVLAN, TPID: tpid, TCI: tci}
}

// PopVLAN returns the action that removes the outer tag.
func PopVLAN() Action { return Action{Kind: ActionPopVLAN} }

// String formats the actions as ovs-dpctl dump-flows does, e.g.
// "push_vlan(vid=10,pcp=0),1,pop_vlan,2", or "drop" for none.
func (as Actions) String() string { return as.Format(nil) }

// Format formats the actions as String does, with output ports named by
// name if it is not nil (dump-flows -m).
func (as Actions) Format(name func(uint32) string) string {
	if len(as) == 0 {
		return "drop"
	}
	var b strings.Builder
	for i := 0; i < len(as); i++ {
		a := as[i]
		if a.Kind == ActionCount {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if a.Kind == ActionSet {
			i += formatSets(&b, as[i:]) - 1
		} else if a.Kind == ActionOutput && name != nil {
			b.WriteString(name(a.Port))
		} else if a.Kind == ActionCheckPktLen && a.PktLen != nil {
			b.WriteString(pktLenString(a.PktLen, name))
		} else if a.Kind == ActionTnlPush && a.Tnl != nil {
			b.WriteString(tnlString(a.Tnl, lastAction(as[i+1:]), name))
		} else if a.Kind == ActionTnlPop && name != nil {
			b.WriteString("tnl_pop(" + name(a.Port) + ")")
		} else {
			b.WriteString(a.String())
		}
	}
	if b.Len() == 0 {
		return "drop"
	}
	return b.String()
}

// lastAction reports whether rest, the actions after one, shows none.
func lastAction(rest Actions) bool {
	for _, a := range rest {
		if a.Kind != ActionCount {
			return false
		}
	}
	return true
}

func (a Action) String() string {
	switch a.Kind {
	case ActionOutput:
		return strconv.FormatUint(uint64(a.Port), 10)
	case ActionPushVLAN:
		var b strings.Builder
		b.WriteString("push_vlan(")
		if a.TPID != flow.EthTypeVLAN {
			b.WriteString("tpid=0x")
			b.WriteString(strconv.FormatUint(uint64(a.TPID)|0x10000, 16)[1:])
			b.WriteByte(',')
		}
		b.WriteString("vid=")
		b.WriteString(strconv.Itoa(int(a.TCI & flow.VLANVIDMask)))
		b.WriteString(",pcp=")
		b.WriteString(strconv.Itoa(int(a.TCI >> 13)))
		b.WriteByte(')')
		return b.String()
	case ActionPopVLAN:
		return "pop_vlan"
	case ActionCTClear:
		return "ct_clear"
	case ActionRecirc:
		return "recirc(" + hexAlt(uint64(a.RecircID)) + ")"
	case ActionUserspace:
		if a.Cookie&CookieSlowPath != 0 {
			if a.Cookie&CookieSlowPathSTP != 0 {
				return "userspace(pid=0,slow_path(stp))"
			}
			return "userspace(pid=0,slow_path(lacp))"
		}
		return "userspace(pid=0,controller(cookie=" + strconv.FormatUint(uint64(a.Cookie), 10) + "))"
	case ActionMeteredUserspace:
		return "sample(sample=100.0%,actions(" + meterString(a.MeterID) + "," + Userspace(a.Cookie).String() + "))"
	case ActionCT:
		if a.CT != nil {
			return formatCT(a.CT)
		}
	case ActionSet:
		return a.setString()
	case ActionMeter:
		return meterString(a.MeterID)
	case ActionTnlPush:
		if a.Tnl != nil {
			return tnlString(a.Tnl, false, nil)
		}
	case ActionTnlPop:
		return "tnl_pop(" + strconv.FormatUint(uint64(a.Port), 10) + ")"
	case ActionTrunc:
		return "trunc(" + strconv.FormatUint(uint64(a.MaxLen), 10) + ")"
	case ActionCheckPktLen:
		if a.PktLen != nil {
			return pktLenString(a.PktLen, nil)
		}
	}
	return "unknown(" + strconv.Itoa(int(a.Kind)) + ")"
}

// pushVLAN inserts an outer tag after the Ethernet addresses, in the
// packet's headroom. It reports false, leaving p alone, if p is shorter
// than the addresses or lacks the headroom.
func pushVLAN(p *packet.Packet, tpid, tci uint16) bool {
	if p.Len() < 12 || p.Headroom() < 4 {
		return false
	}
	if len(p.Head()) < 12 {
		p.Linearize()
	}
	p.Push(4)
	d := p.Head()
	copy(d[0:12], d[4:16])
	binary.BigEndian.PutUint16(d[12:], tpid)
	binary.BigEndian.PutUint16(d[14:], tci)
	shiftOffload(&p.Offload, 4)
	return true
}

// popVLAN removes the outer tag if p has one.
func popVLAN(p *packet.Packet) {
	d := p.Head()
	if len(d) < 18 {
		d = p.Data()
	}
	if len(d) < 18 || !flow.IsVLANType(binary.BigEndian.Uint16(d[12:])) {
		return
	}
	copy(d[4:16], d[0:12])
	p.Pull(4)
	shiftOffload(&p.Offload, -4)
}

// shiftOffload moves the offsets of deferred work by delta bytes after a
// header was pushed (delta > 0) or pulled in front of them.
func shiftOffload(o *packet.Offload, delta int) {
	if o.Flags&packet.NeedsCsum != 0 {
		o.CsumStart = uint16(int(o.CsumStart) + delta)
	}
	if o.HdrLen != 0 {
		o.HdrLen = uint16(int(o.HdrLen) + delta)
	}
}

// hexAlt formats v as C's "%#x".
func hexAlt(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// formatCT formats a ct action as OVS's format_odp_conntrack_action, e.g.
// "ct(commit,zone=5,mark=0x1/0xff,nat(src=10.0.0.1-10.0.0.2:1024-2048,random))".
func formatCT(c *conntrack.Action) string {
	var parts []string
	if c.Commit && !c.Force {
		parts = append(parts, "commit")
	}
	if c.Force {
		parts = append(parts, "force_commit")
	}
	if c.Zone != 0 {
		parts = append(parts, "zone="+strconv.Itoa(int(c.Zone)))
	}
	if c.SetMark {
		// OVS's format_odp_ct_mark shows the mask even when it is all ones.
		s := "mark=" + hexAlt(uint64(c.Mark)) + "/" + hexAlt(uint64(c.MarkMask))
		parts = append(parts, s)
	}
	if c.SetLabel {
		s := "label=" + c.Label.String()
		if c.LabelMask != allOnes128 {
			s += "/" + c.LabelMask.String()
		}
		parts = append(parts, s)
	}
	if c.Helper != "" {
		parts = append(parts, "helper="+c.Helper)
	}
	if c.TimeoutPolicy != conntrack.DefaultPolicy {
		// The netdev datapath names a timeout policy by its ID.
		parts = append(parts, "timeout="+strconv.FormatUint(uint64(c.TimeoutPolicy), 10))
	}
	if n := c.NAT; n != nil {
		s := "nat"
		if n.Src || n.Dst {
			s += "("
			if n.Src {
				s += "src"
			} else {
				s += "dst"
			}
			if n.MinAddr != ([16]byte{}) || n.MinPort != 0 {
				s += "=" + natAddr(n.MinAddr, n.V6, n.MinPort != 0)
				if n.MaxAddr != n.MinAddr && n.MaxAddr != ([16]byte{}) {
					s += "-" + natAddr(n.MaxAddr, n.V6, n.MinPort != 0)
				}
				if n.MinPort != 0 {
					s += ":" + strconv.Itoa(int(n.MinPort))
					if n.MaxPort != 0 && n.MaxPort != n.MinPort {
						s += "-" + strconv.Itoa(int(n.MaxPort))
					}
				}
			}
			for _, f := range []struct {
				on   bool
				name string
			}{{n.Persistent, "persistent"}, {n.Hash, "hash"}, {n.Random, "random"}} {
				if f.on {
					s += "," + f.name
				}
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "ct"
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

var allOnes128 = conntrack.Label{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// natAddr formats a NAT address, an IPv6 one in brackets when a port
// follows (ipv6_format_addr_bracket).
func natAddr(a [16]byte, v6, bracket bool) string {
	if !v6 {
		return netip.AddrFrom4([4]byte(a[:4])).String()
	}
	s := netip.AddrFrom16(a).String()
	if bracket {
		return "[" + s + "]"
	}
	return s
}
