package datapath

import (
	"strconv"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// ActionCheckPktLen runs PktLen.Greater on a packet longer than
// PktLen.Size bytes and PktLen.LessEqual on the others (OVS's
// check_pkt_len). A translation puts what follows the OpenFlow action in
// both branches, so nothing follows it in a list.
const ActionCheckPktLen ActionKind = 40

// PktLenCheck is an ActionCheckPktLen's arguments; the action list owns
// it, the datapath never changes it.
type PktLenCheck struct {
	Size               uint16
	Greater, LessEqual Actions
}

// CheckPktLen returns the action that runs gt on packets longer than size
// bytes and le on the others.
func CheckPktLen(size uint16, gt, le Actions) Action {
	return Action{Kind: ActionCheckPktLen, PktLen: &PktLenCheck{Size: size, Greater: gt, LessEqual: le}}
}

func pktLenEqual(a, b *PktLenCheck) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Size == b.Size && a.Greater.Equal(b.Greater) && a.LessEqual.Equal(b.LessEqual)
}

// pktLenString formats c as OVS's format_odp_check_pkt_len_action, e.g.
// "check_pkt_len(size=1500,gt(2),le(drop))".
func pktLenString(c *PktLenCheck, name func(uint32) string) string {
	return "check_pkt_len(size=" + strconv.Itoa(int(c.Size)) + ",gt(" + c.Greater.Format(name) + "),le(" + c.LessEqual.Format(name) + "))"
}

// pktLenOp is a resolved check_pkt_len.
type pktLenOp struct {
	size   int
	gt, le []op
}

func resolvePktLen(c *PktLenCheck, table *portTable) *pktLenOp {
	return &pktLenOp{size: int(c.Size), gt: resolveOps(nil, c.Greater, table), le: resolveOps(nil, c.LessEqual, table)}
}

// checkPktLen splits pkts by length and runs each branch on its share;
// queued says pkts were output before (a branch changes copies of them).
func (w *worker) checkPktLen(c *pktLenOp, pkts []*packet.Packet, mds []conntrack.Meta, queued bool, depth int, table *portTable, now int64) {
	var gtBuf, leBuf [netdev.BatchSize]*packet.Packet
	var gtMD, leMD [netdev.BatchSize]conntrack.Meta
	gt, le := gtBuf[:0], leBuf[:0]
	var gtm, lem []conntrack.Meta
	if mds != nil {
		gtm, lem = gtMD[:0], leMD[:0]
	}
	for k, p := range pkts {
		if p == nil {
			continue
		}
		if len(gt) == cap(gt) || len(le) == cap(le) {
			// More than a batch (a datagram's fragments made whole):
			// the rest on their own.
			var rest []conntrack.Meta
			if mds != nil {
				rest = mds[k:]
			}
			w.checkPktLen(c, pkts[k:], rest, queued, depth, table, now)
			break
		}
		if p.Len() > c.size {
			gt = append(gt, p)
			if mds != nil {
				gtm = append(gtm, mds[k])
			}
		} else {
			le = append(le, p)
			if mds != nil {
				lem = append(lem, mds[k])
			}
		}
	}
	if len(gt) > 0 {
		w.applyFrom(c.gt, gt, gtm, queued, depth, table, now)
	}
	if len(le) > 0 {
		w.applyFrom(c.le, le, lem, queued, depth, table, now)
	}
}

// executePktLen is Execute's check_pkt_len: the branch p's length picks.
func (dp *Datapath) executePktLen(c *pktLenOp, p *packet.Packet) {
	if p.Len() > c.size {
		dp.executeOps(p, c.gt)
	} else {
		dp.executeOps(p, c.le)
	}
}
