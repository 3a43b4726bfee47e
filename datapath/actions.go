package datapath

import (
	"encoding/binary"
	"strconv"
	"strings"

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
	// Field and Val are an ActionSet's field and value (big-endian).
	Field SetField
	Val   [16]byte
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
	for i, a := range as {
		if i > 0 {
			b.WriteByte(',')
		}
		if a.Kind == ActionOutput && name != nil {
			b.WriteString(name(a.Port))
		} else {
			b.WriteString(a.String())
		}
	}
	return b.String()
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
	case ActionSet:
		return a.setString()
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
