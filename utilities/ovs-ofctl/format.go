package main

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Text as OVS 3.1's ovs-ofctl prints it: ofputil_flow_stats_format
// (lib/ofp-flow.c) and the port and features printers (lib/ofp-print.c,
// lib/ofp-port.c), for what govs' codec decodes. Matches and actions are
// ofp.FormatMatch's and ofp.FormatActions', which the switch uses too.

// formatDuration formats seconds as ofp_print_duration: whole seconds,
// then milliseconds or nanoseconds when there is a fraction.
func formatDuration(d time.Duration) string {
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	s := strconv.FormatInt(sec, 10)
	if nsec > 0 {
		if msec := nsec / 1e6; msec*1e6 == nsec {
			s += fmt.Sprintf(".%03d", msec)
		} else {
			s += fmt.Sprintf(".%09d", nsec)
		}
	}
	return s + "s"
}

// flowFlagNames are the flow mod flags as ofp_print_flow_flags shows them.
var flowFlagNames = []struct {
	bit  uint16
	name string
}{{ofp.FlagSendFlowRem, "send_flow_rem"}, {ofp.FlagCheckOverlap, "check_overlap"}, {ofp.FlagResetCounts, "reset_counts"},
	{ofp.FlagNoPktCounts, "no_packet_counts"}, {ofp.FlagNoBytCounts, "no_byte_counts"}}

// formatFlowStats formats one flow as ofputil_flow_stats_format.
func formatFlowStats(fs *ofp.FlowStats, v ofp.Version, showStats bool, pn ofp.PortNames) string {
	var b strings.Builder
	if showStats || fs.Cookie != 0 {
		fmt.Fprintf(&b, "cookie=0x%x, ", fs.Cookie)
	}
	if showStats {
		fmt.Fprintf(&b, "duration=%s, ", formatDuration(fs.Duration))
	}
	if showStats || fs.Table != 0 {
		fmt.Fprintf(&b, "table=%d, ", fs.Table)
	}
	if showStats {
		fmt.Fprintf(&b, "n_packets=%d, n_bytes=%d, ", fs.Packets, fs.Bytes)
	}
	if fs.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle_timeout=%d, ", fs.IdleTimeout)
	}
	if fs.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_timeout=%d, ", fs.HardTimeout)
	}
	for _, fl := range flowFlagNames {
		if fs.Flags&fl.bit != 0 {
			b.WriteString(fl.name + " ")
		}
	}
	if fs.Importance != 0 {
		fmt.Fprintf(&b, "importance=%d, ", fs.Importance)
	}
	if showStats && fs.IdleAge >= 0 {
		fmt.Fprintf(&b, "idle_age=%d, ", int(fs.IdleAge/time.Second))
	}
	if showStats && fs.HardAge >= 0 && fs.HardAge/time.Second != fs.Duration/time.Second {
		fmt.Fprintf(&b, "hard_age=%d, ", int(fs.HardAge/time.Second))
	}
	if m := ofp.FormatMatch(&fs.Match, int(fs.Priority), pn); m != "" {
		b.WriteString(m + " ")
	}
	b.WriteString("actions=" + ofp.FormatActions(fs.Actions, v, pn))
	return b.String()
}

// msgHeader is ofp_to_string's start: the message's name, the version
// unless 1.0, and the xid.
func msgHeader(name string, v ofp.Version, xid uint32) string {
	if v != ofp.V10 {
		name += fmt.Sprintf(" (OF1.%d)", v-1)
	}
	return fmt.Sprintf("%s (xid=0x%x):", name, xid)
}

// Features, capabilities, port config and state names (lib/ofp-port.c,
// lib/netdev.c).
var (
	featureNames = []string{"10MB-HD", "10MB-FD", "100MB-HD", "100MB-FD", "1GB-HD", "1GB-FD", "10GB-FD", "40GB-FD",
		"100GB-FD", "1TB-FD", "OTHER", "COPPER", "FIBER", "AUTO_NEG", "AUTO_PAUSE", "AUTO_PAUSE_ASYM"}
	configNames10 = map[uint32]string{1: "PORT_DOWN", 2: "NO_STP", 4: "NO_RECV", 8: "NO_RECV_STP", 16: "NO_FLOOD", 32: "NO_FWD", 64: "NO_PACKET_IN"}
	configNames11 = map[uint32]string{1: "PORT_DOWN", 4: "NO_RECV", 32: "NO_FWD", 64: "NO_PACKET_IN"}
	stateNames    = map[uint32]string{1: "LINK_DOWN", 2: "BLOCKED", 4: "LIVE"}
	actionNames10 = []struct {
		bit  uint
		name string
	}{{0, "output"}, {11, "enqueue"}, {1, "set_vlan_vid"}, {2, "set_vlan_pcp"}, {3, "strip_vlan"}, {4, "mod_dl_src"},
		{5, "mod_dl_dst"}, {6, "mod_nw_src"}, {7, "mod_nw_dst"}, {8, "mod_nw_tos"}, {9, "mod_tp_src"}, {10, "mod_tp_dst"}}
)

// bitNames formats bits as ofp_print_bit_names with ' ': each bit's name
// (or 0x%x), "0" for none.
func bitNames(bits uint32, name func(uint32) string) string {
	if bits == 0 {
		return "0"
	}
	var parts []string
	for i := 0; i < 32; i++ {
		bit := uint32(1) << i
		if bits&bit == 0 {
			continue
		}
		n := name(bit)
		if n == "" {
			n = fmt.Sprintf("0x%x", bit)
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, " ")
}

// capabilities formats a features reply's capabilities as OVS does:
// mapped to OVS's own bit order (STP and GROUP_STATS share bit 3 on the
// wire, in different versions).
func capabilities(v ofp.Version, c uint32) string {
	type capName struct {
		bit  uint32
		name string
	}
	names := []capName{{1, "FLOW_STATS"}, {2, "TABLE_STATS"}, {4, "PORT_STATS"}}
	if v == ofp.V10 {
		names = append(names, capName{8, "STP"})
	} else {
		names = append(names, capName{8, "GROUP_STATS"})
	}
	names = append(names, capName{0x20, "IP_REASM"}, capName{0x40, "QUEUE_STATS"})
	if v == ofp.V10 {
		names = append(names, capName{0x80, "ARP_MATCH_IP"})
	} else {
		names = append(names, capName{0x100, "PORT_BLOCKED"})
	}
	if v >= ofp.V14 {
		names = append(names, capName{0x200, "BUNDLES"}, capName{0x400, "FLOW_MONITORING"})
	}
	var parts []string
	for _, n := range names {
		if c&n.bit != 0 {
			parts = append(parts, n.name)
			c &^= n.bit
		}
	}
	for i := 0; i < 32; i++ {
		if c&(1<<i) != 0 {
			parts = append(parts, fmt.Sprintf("0x%x", 1<<i))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// featuresBps is netdev_features_to_bps: the highest speed named.
func featuresBps(f uint32) uint64 {
	switch {
	case f&ofp.Feature1TBFD != 0:
		return 1e12
	case f&ofp.Feature100GBFD != 0:
		return 1e11
	case f&ofp.Feature40GBFD != 0:
		return 4e10
	case f&ofp.Feature10GBFD != 0:
		return 1e10
	case f&(ofp.Feature1GBHD|ofp.Feature1GBFD) != 0:
		return 1e9
	case f&(ofp.Feature100MBHD|ofp.Feature100MBFD) != 0:
		return 1e8
	case f&(ofp.Feature10MBHD|ofp.Feature10MBFD) != 0:
		return 1e7
	}
	return 0
}

// formatPort formats a port as ofp_print_phy_port.
func formatPort(b *strings.Builder, v ofp.Version, p *ofp.Port) {
	fmt.Fprintf(b, " %s(%s): addr:%s\n", ofp.PortNames(nil).Port(p.No), p.Name, flow.MAC(p.HWAddr))
	cfg := configNames11
	if v == ofp.V10 {
		cfg = configNames10
	}
	fmt.Fprintf(b, "     config:     %s\n", bitNames(p.Config, func(bit uint32) string { return cfg[bit] }))
	state := p.State
	if v == ofp.V10 {
		state &= 1 // the STP bits are printed only when set, and govs sets none
	}
	fmt.Fprintf(b, "     state:      %s\n", bitNames(state, func(bit uint32) string { return stateNames[bit] }))
	feat := func(bit uint32) string {
		if i := bits.TrailingZeros32(bit); i < len(featureNames) {
			return featureNames[i]
		}
		return ""
	}
	for _, f := range []struct {
		label string
		v     uint32
	}{{"current:    ", p.Curr}, {"advertised: ", p.Advertised}, {"supported:  ", p.Supported}, {"peer:       ", p.Peer}} {
		if f.v != 0 {
			fmt.Fprintf(b, "     %s%s\n", f.label, bitNames(f.v, feat))
		}
	}
	curr, max := uint64(p.CurrSpeed), uint64(p.MaxSpeed)
	if v == ofp.V10 {
		curr, max = featuresBps(p.Curr)/1000, featuresBps(p.Supported)/1000
	}
	fmt.Fprintf(b, "     speed: %d Mbps now, %d Mbps max\n", curr/1000, max/1000)
}
