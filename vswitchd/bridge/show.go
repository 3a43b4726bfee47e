package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/govs/govs/datapath"
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
