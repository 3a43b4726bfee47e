package bridge

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DatapathName is how OVS names the userspace datapath all bridges share.
const DatapathName = "netdev@ovs-netdev"

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
	fmt.Fprintf(&b, "%s: hit:%d missed:%d\n", DatapathName, st.Hit, st.Missed)
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
// configuration: internal ports are taps in the userspace datapath.
func (ifc *iface) netdevType() string {
	switch {
	case ifc.local || ifc.spec.Type == TypeInternal || ifc.spec.Type == TypeTap:
		return "tap"
	case ifc.spec.Type == TypePatch:
		return "patch: peer=" + ifc.spec.Options["peer"]
	}
	return ifc.spec.Type
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

// Memory renders memory/show's counts, in OVS's "key:value" form sorted
// by key; idlCells is the database replica's size.
func (s *Switch) Memory(idlCells int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ports := 0
	for _, ifc := range s.ifaces {
		if ifc.state == StateAttached {
			ports++
		}
	}
	return fmt.Sprintf("bridges:%d idl-cells-Open_vSwitch:%d ports:%d udpif keys:%d\n",
		len(s.bridges), idlCells, ports, s.dp.Stats().Flows)
}
