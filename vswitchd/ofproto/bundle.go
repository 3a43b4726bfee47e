package ofproto

import (
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// CheckBundled checks a message as it is added to a bundle: what does
// not depend on the tables, as OVS's handle_bundle_add decodes and
// initialises it. The rest is checked at commit. It returns what to
// keep in the bundle and hand to CommitBundle: the message, or for a
// flow add the flow it makes (bundledAdd), so that a large bundle holds
// one copy of each flow's match (a kilobyte) rather than two.
func (br *Bridge) CheckBundled(m ofp.Message) (ofp.Message, *ofp.Error) {
	switch m := m.(type) {
	case *ofp.FlowMod:
		if err := checkFlowMod(m); err != nil {
			return nil, err
		}
		if m.Command == ofp.FlowAdd {
			a := &bundledAdd{Header: m.Header, overlap: m.Flags&ofp.FlagCheckOverlap != 0, origin: m.Origin}
			initRule(&a.r, m)
			if len(m.Match.TunMD) > 0 {
				// Placed through the TLV map as it is at commit.
				mc := m.Match
				a.m = &mc
			} else {
				a.r.setMatch(&m.Match)
			}
			return a, nil
		}
	case *ofp.GroupMod:
		if err := checkGroupMod(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// bundledAdd is a checked flow add in a bundle: the flow it adds, whose
// times, counters and seq the commit gives it (insert).
type bundledAdd struct {
	ofp.Header
	r rule // one allocation with the rest
	// m is the flow's match if it has tun_metadata fields, which the
	// commit resolves, else nil: r has its match.
	m       *ofp.Match
	overlap bool // CHECK_OVERLAP
	origin  any  // ofp.FlowMod's Origin
}

// CommitBundle applies a bundle's messages in order as one change, as
// OVS's do_bundle_commit: every flow mod and group mod takes effect or
// none does, and packets see the tables either as they were or with the
// whole bundle in (one snapshot is published). Packet-outs are checked
// with the rest and execute once the change is in, against the new
// tables. On failure it returns the index of the refused message and its
// error, and nothing changed.
//
// Port mods are refused (OFPBFC_MSG_FAILED): OVS refuses them in atomic
// bundles, its port mods not being atomic; govs does in any bundle.
func (br *Bridge) CommitBundle(msgs []ofp.Message) (int, *ofp.Error) {
	type gone struct {
		r      *rule
		reason uint8
		o      origin
	}
	br.flowMu.Lock()
	br.startChanges()
	ft := br.tables.Load().withPrivateGroups()
	now := br.clock()
	gen := gens.Add(1)
	var removed []gone
	var outs []*pendingPacketOut
	for i, m := range msgs {
		var rs []*rule
		var err *ofp.Error
		reason := uint8(ofp.RemovedDelete)
		var o origin
		switch m := m.(type) {
		case *bundledAdd:
			o = origin{m.origin, m.Xid}
			rs, err = br.addLocked(ft, &m.r, m.m, m.overlap, now, gen, o)
		case *ofp.FlowMod:
			o = originOf(m)
			rs, err = br.flowModLocked(ft, m, now, gen)
		case *ofp.GroupMod:
			rs, err = br.groupModLocked(ft, m, now, gen)
			reason = ofp.FlowRemovedGroup
		case *ofp.PacketOut:
			var p *pendingPacketOut
			if p, err = br.preparePacketOut(m); err == nil {
				outs = append(outs, p)
			}
		case *ofp.PortMod:
			err = &ofp.Error{Errno: ofp.BundleMsgFailed, Name: "OFPT_PORT_MOD", Detail: "port mods in bundles are not supported"}
		default:
			err = &ofp.Error{Errno: ofp.BundleMsgUnsup, Detail: "not allowed in a bundle"}
		}
		if err != nil {
			br.takeChanges() // nothing changed
			br.flowMu.Unlock()
			return i, err
		}
		for _, r := range rs {
			removed = append(removed, gone{r, reason, o})
		}
	}
	br.publish(ft)
	br.flowsChanged()
	for _, g := range removed {
		br.sendRemoved(g.r, g.reason, now)
		br.flowGone(g.r, g.reason, g.o)
	}
	changes := br.takeChanges()
	br.flowMu.Unlock()
	br.reportChanges(changes)
	for _, p := range outs {
		// Checked above: only the datapath can fail it now, as a
		// packet-out's execution fails in OVS after its commit.
		if err := p.execute(); err != nil {
			br.backer.log.Warnf("%s: bundled packet-out: %v", br.name, err)
		}
	}
	return -1, nil
}
