package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// ErrNoSuchBridge is the error unixctl commands print for an unknown
// bridge, in OVS's words.
var ErrNoSuchBridge = errors.New("no such bridge")

// DpifShow renders ovs-appctl dpif/show as ofproto-dpif.c does.
func (s *Switch) DpifShow() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bridges) == 0 {
		return ""
	}
	var b strings.Builder
	st := s.dp.Stats()
	fmt.Fprintf(&b, "%s: hit:%d missed:%d\n", datapath.CurrentName(), st.Hit, st.Missed)
	for _, name := range s.bridgeNames() {
		fmt.Fprintf(&b, "  %s:\n", name)
		var ports []*iface
		for _, ifc := range s.ifaces {
			if ifc.bridge == name && ifc.state == StateAttached {
				ports = append(ports, ifc)
			}
		}
		slices.SortFunc(ports, func(a, b *iface) int { return strings.Compare(a.spec.Name, b.spec.Name) })
		for _, ifc := range ports {
			dp := "none"
			if ifc.dpPort != 0 {
				dp = fmt.Sprint(ifc.dpPort)
			}
			fmt.Fprintf(&b, "    %s %d/%s: (%s)\n", ifc.spec.Name, ifc.ofport, dp, ifc.netdevType())
		}
	}
	return b.String()
}

// netdevType is the port's type as OVS's netdev layer names it, with its
// configuration (internal ports are taps in the userspace datapath).
func (ifc *iface) netdevType() string { return ifc.driver().netdevType(ifc) }

// DpctlShow renders `ovs-appctl dpctl/show [-s] [dp...]` as lib/dpctl.c
// does: the datapath's lookup counters and its ports in port number order
// (patch ports are not datapath ports), with -s (--statistics) each
// port's counters. OVS also lists its datapath's own port 0, a tap named
// ovs-netdev; govs' datapath has no such port. A datapath name other than
// netdev@ovs-netdev is reported as OVS reports it, after the others are
// shown.
func (s *Switch) DpctlShow(args []string) (string, error) {
	stats := false
	var dps []string
	for _, a := range args {
		switch {
		case a == "-s" || a == "--statistics":
			stats = true
		case a == "-m" || a == "--more" || a == "--names" || a == "--no-names":
		case strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("Unrecognized option %s", a)
		default:
			dps = append(dps, a)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exists := len(s.bridges) > 0
	if len(dps) == 0 {
		if !exists {
			return "", nil
		}
		dps = []string{datapath.CurrentName()}
	}
	var b strings.Builder
	failed := false
	for _, name := range dps {
		if name != datapath.CurrentName() || !exists {
			fmt.Fprintf(&b, "ovs-vswitchd: opening datapath %s failed (No such file or directory)\n", name)
			failed = true
			continue
		}
		s.showDatapath(&b, stats)
	}
	if failed {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}

// showDatapath writes dpctl/show's text for the datapath. Caller holds mu.
func (s *Switch) showDatapath(b *strings.Builder, stats bool) {
	st := s.dp.Stats()
	fmt.Fprintf(b, "%s:\n  lookups: hit:%d missed:%d lost:%d\n  flows: %d\n", datapath.CurrentName(), st.Hit, st.Missed, st.Lost, st.Flows)
	var ports []*iface
	for _, ifc := range s.ifaces {
		if ifc.state == StateAttached && ifc.dpPort != 0 {
			ports = append(ports, ifc)
		}
	}
	slices.SortFunc(ports, func(a, b *iface) int { return cmp.Compare(a.dpPort, b.dpPort) })
	for _, ifc := range ports {
		fmt.Fprintf(b, "  port %d: %s", ifc.dpPort, ifc.spec.Name)
		if t := ifc.netdevType(); t != TypeSystem {
			fmt.Fprintf(b, " (%s)", t)
		}
		b.WriteByte('\n')
		if !stats || ifc.dev == nil {
			continue
		}
		s.count("netdev_get_stats")
		ns := ifc.dev.Stats()
		// Software ports have no hardware overruns, framing or carrier
		// errors, aborts or collisions: those stay 0, as for OVS's taps.
		fmt.Fprintf(b, "    RX packets:%d errors:%d dropped:%d overruns:0 frame:0\n", ns.RxPackets, ns.RxErrors, ns.RxDropped)
		fmt.Fprintf(b, "    TX packets:%d errors:%d dropped:%d aborted:0 carrier:0\n", ns.TxPackets, ns.TxErrors, ns.TxDropped)
		fmt.Fprintf(b, "    collisions:0\n    RX bytes:%d%s  TX bytes:%d%s\n", ns.RxBytes, humanSize(ns.RxBytes), ns.TxBytes, humanSize(ns.TxBytes))
	}
}

// humanSize is lib/dpctl.c's print_human_size: " (1.2 KiB)" and so on for
// 1024 bytes and more.
func humanSize(v uint64) string {
	units := []string{"TiB", "GiB", "MiB", "KiB"}
	for i, u := range units {
		if scale := uint64(1) << (10 * (len(units) - i)); v >= scale {
			return fmt.Sprintf(" (%.1f %s)", float64(v)/float64(scale), u)
		}
	}
	return ""
}

// DumpDps renders `ovs-appctl dpctl/dump-dps`: the one datapath, once a
// bridge exists.
func (s *Switch) DumpDps() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bridges) == 0 {
		return ""
	}
	return datapath.CurrentName() + "\n"
}

// DpifDumpDps is `ovs-appctl dpif/dump-dps`: each bridge as OVS names
// its ofproto, "type@bridge", sorted.
func (s *Switch) DpifDumpDps() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, rb := range s.bridges {
		names = append(names, rb.dpType+"@"+rb.name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return b.String()
}

// dpFeatures are dpif/show-dp-features' lines, in OVS's order
// (DPIF_SUPPORT_FIELDS then ODP_SUPPORT_FIELDS), each with the key of
// Datapath.capabilities that says it (datapath.Capabilities); numeric
// says the line is a count, shown as a number.
var dpFeatures = []struct {
	title, key string
	numeric    bool
}{
	{"Masked set action", "masked_set_action", false}, {"Tunnel push pop", "tnl_push_pop", false},
	{"Ufid", "ufid", false}, {"Truncate action", "trunc", false}, {"Clone action", "clone", false},
	{"Sample nesting", "sample_nesting", true}, {"Conntrack eventmask", "ct_eventmask", false},
	{"Conntrack clear", "ct_clear", false}, {"Max dp_hash algorithm", "max_hash_alg", true},
	{"Check pkt length action", "check_pkt_len", false}, {"Conntrack timeout policy", "ct_timeout", false},
	{"Explicit Drop action", "explicit_drop_action", false}, {"Optimized Balance TCP mode", "lb_output_action", false},
	{"Conntrack all-zero IP SNAT", "ct_zero_snat", false}, {"MPLS Label add", "add_mpls", false},
	{"Max VLAN headers", "max_vlan_headers", true}, {"Max MPLS depth", "max_mpls_depth", true},
	{"Recirc", "recirc", false}, {"CT state", "ct_state", false}, {"CT zone", "ct_zone", false},
	{"CT mark", "ct_mark", false}, {"CT label", "ct_label", false}, {"CT state NAT", "ct_state_nat", false},
	{"CT orig tuple", "ct_orig_tuple", false}, {"CT orig tuple for IPv6", "ct_orig_tuple6", false},
	{"IPv6 ND Extension", "nd_ext", false},
}

// DpifShowDpFeatures is `ovs-appctl dpif/show-dp-features bridge`: what
// the datapath supports, as OVS's dpif_show_support prints it, from the
// same capabilities govs writes to the Datapath table (a count that is a
// yes/no there, sample nesting, shows as 0 when no).
func (s *Switch) DpifShowDpFeatures(args []string) (string, error) {
	if _, err := s.ofBridge(args[0]); err != nil {
		return "", err
	}
	caps := datapath.Capabilities()
	var b strings.Builder
	for _, f := range dpFeatures {
		v := caps[f.key]
		switch {
		case f.numeric && v == "true":
			v = "1"
		case f.numeric && v == "false":
			v = "0"
		case f.numeric:
		case v == "true":
			v = "Yes"
		default:
			v = "No"
		}
		fmt.Fprintf(&b, "%s: %s\n", f.title, v)
	}
	return b.String(), nil
}

func (s *Switch) ofBridge(name string) (OFBridge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rb, ok := s.bridges[name]
	if !ok {
		return nil, ErrNoSuchBridge
	}
	return rb.of, nil
}

// FDBShow renders fdb/show for the named bridge.
func (s *Switch) FDBShow(bridge string) (string, error) {
	of, err := s.ofBridge(bridge)
	if err != nil {
		return "", err
	}
	return of.FDBShow(), nil
}

// FDBStatsShow renders fdb/stats-show for the named bridge.
func (s *Switch) FDBStatsShow(bridge string) (string, error) {
	of, err := s.ofBridge(bridge)
	if err != nil {
		return "", err
	}
	return of.FDBStatsShow(), nil
}

// FDBAdd is `ovs-appctl fdb/add bridge port vlan mac`: a static MAC
// table entry, with OVS's errors. The VLAN is read as C's atoi does.
func (s *Switch) FDBAdd(args []string) (string, error) {
	of, err := s.ofBridge(args[0])
	if err != nil {
		return "", err
	}
	mac, err := parseFDBMAC(args[3])
	if err != nil {
		return "", err
	}
	return of.FDBAdd(args[1], uint16(atoi(args[2])), mac)
}

// FDBDel is `ovs-appctl fdb/del bridge vlan mac`.
func (s *Switch) FDBDel(args []string) (string, error) {
	of, err := s.ofBridge(args[0])
	if err != nil {
		return "", err
	}
	mac, err := parseFDBMAC(args[2])
	if err != nil {
		return "", err
	}
	return "", of.FDBDel(uint16(atoi(args[1])), mac)
}

// FDBStatsClear is `ovs-appctl fdb/stats-clear [bridge]`.
func (s *Switch) FDBStatsClear(args []string) (string, error) {
	if len(args) == 1 {
		of, err := s.ofBridge(args[0])
		if err != nil {
			return "", err
		}
		of.FDBStatsClear()
	} else {
		s.mu.Lock()
		for _, rb := range s.bridges {
			rb.of.FDBStatsClear()
		}
		s.mu.Unlock()
	}
	return "statistics successfully cleared\n", nil
}

// parseFDBMAC reads a MAC address as OVS's eth_addr_from_string: six
// hex bytes separated by colons.
func parseFDBMAC(s string) (flow.MAC, error) {
	var m flow.MAC
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return m, errors.New("bad MAC address")
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil || p == "" || len(p) > 2 {
			return m, errors.New("bad MAC address")
		}
		m[i] = byte(v)
	}
	return m, nil
}

// atoi is C's atoi: the leading decimal digits (after an optional sign),
// 0 if none.
func atoi(s string) int {
	neg, digits := cDecimal(s)
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// cDecimal splits s as C's decimal conversions read it: leading white
// space skipped, an optional sign, and the run of decimal digits after it.
func cDecimal(s string) (neg bool, digits string) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return neg, s[:i]
}

// errNoSnooping is what mdb/* answer for a bridge without multicast
// snooping, which govs does not implement (mcast_snooping_enable is
// reported as unsupported).
var errNoSnooping = errors.New("multicast snooping is disabled")

// MdbShow is `ovs-appctl mdb/show bridge`: govs' bridges have no
// multicast snooping, so OVS's answer for such a bridge.
func (s *Switch) MdbShow(args []string) (string, error) {
	if _, err := s.ofBridge(args[0]); err != nil {
		return "", err
	}
	return "", errNoSnooping
}

// MdbFlush is `ovs-appctl mdb/flush [bridge]`, as OVS answers it for
// bridges without multicast snooping: an error for a named one, and
// nothing to flush for all of them.
func (s *Switch) MdbFlush(args []string) (string, error) {
	if len(args) == 1 {
		if _, err := s.ofBridge(args[0]); err != nil {
			return "", err
		}
		return "", errNoSnooping
	}
	return "table successfully flushed\n", nil
}

// FDBFlush flushes the named bridge's MAC table, or every bridge's if
// bridge is "".
func (s *Switch) FDBFlush(bridge string) error {
	if bridge != "" {
		of, err := s.ofBridge(bridge)
		if err != nil {
			return err
		}
		of.FDBFlush()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rb := range s.bridges {
		rb.of.FDBFlush()
	}
	return nil
}

// MemoryUsage adds the switch's counts for memory/show to usage, as OVS's
// ofproto_get_memory_usage and udpif_get_memory_usage do.
func (s *Switch) MemoryUsage(usage map[string]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ports := 0
	for _, ifc := range s.ifaces {
		if ifc.state == StateAttached {
			ports++
		}
	}
	usage["bridges"] += uint64(len(s.bridges))
	usage["ports"] += uint64(ports)
	usage["udpif keys"] += s.dp.Stats().Flows
}
