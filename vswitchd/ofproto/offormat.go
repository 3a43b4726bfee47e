package ofproto

import (
	"fmt"
	"strings"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// formatOFMatch formats an OpenFlow match as OVS's match_format does for
// the fields govs matches on (empty for a match-all).
func formatOFMatch(m *ofp.Match) string { return formatOFMatchNames(m, nil) }

// formatOFMatchNames is formatOFMatch with in_port named from pn.
func formatOFMatchNames(m *ofp.Match, pn ofp.PortNames) string {
	k, mk := m.Flow.Key, flow.Mask(m.Mask.Key)
	// match_format: pkt_mark, recirc_id (the key's, shown when not 0),
	// dp_hash, then the rest.
	mark := u32Masked("pkt_mark", m.Flow.PktMark, m.Mask.PktMark)
	if m.Mask.RecircID != 0 && m.Flow.RecircID == 0 {
		mark += "recirc_id=0,"
	}
	// Then conj_id, and the registers and metadata at their places
	// (before the tunnel, after it).
	dpHash := u32Masked("dp_hash", m.Flow.DpHash, m.Mask.DpHash)
	if m.Mask.ConjID != 0 {
		dpHash += fmt.Sprintf("conj_id=%d,", m.Flow.ConjID)
	}
	var regs, meta string
	for i := range m.Mask.Regs {
		regs += u32Masked(fmt.Sprintf("reg%d", i), m.Flow.Regs[i], m.Mask.Regs[i])
	}
	if mk := m.Mask.Metadata; mk == ^uint64(0) {
		meta = "metadata=" + hex0(m.Flow.Metadata) + ","
	} else if mk != 0 {
		meta = "metadata=" + hex0(m.Flow.Metadata) + "/" + hex0(mk) + ","
	}
	return strings.TrimSuffix(formatMatchOF(&k, &mk, pn.Port(m.Flow.InPort), false, false, ofTunMD(m),
		mark, dpHash, regs, meta), ",")
}

// formatAction formats an action as ofproto/trace and the logs show it:
// OVS's ofpact_format, as ovs-ofctl prints it.
func formatAction(a *ofp.Action) string { return ofp.FormatAction(a, 0, nil) }

// FormatFlowBrief formats a flow as ovs-appctl bridge/dump-flows lists it
// (OVS's flow_stats_ds): "table_id=N, " when not table 0, then
// "duration=Ns, n_packets=N, n_bytes=N, ", the match as cls_rule_format
// writes it (priority first unless it is the default 32768, no trailing
// comma, so that a catch-all at the default priority leaves nothing),
// then ",actions=ACTIONS".
func FormatFlowBrief(f *ofp.FlowStats) string {
	var b strings.Builder
	if f.Table != 0 {
		fmt.Fprintf(&b, "table_id=%d, ", f.Table)
	}
	fmt.Fprintf(&b, "duration=%ds, n_packets=%d, n_bytes=%d, ", int(f.Duration/time.Second), f.Packets, f.Bytes)
	m := formatOFMatch(&f.Match)
	if f.Priority != 32768 { // OFP_DEFAULT_PRIORITY
		fmt.Fprintf(&b, "priority=%d", f.Priority)
		if m != "" {
			b.WriteByte(',')
		}
	}
	b.WriteString(m)
	b.WriteString(",actions=")
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

// ofTunMD formats the tun_metadata fields of m, resolved through the
// bridge's option map.
func ofTunMD(m *ofp.Match) string {
	var b strings.Builder
	for _, e := range m.TunMD {
		ofp.FormatTunMDEntry(&b, e.Idx, e.Value, e.Mask)
	}
	return b.String()
}
