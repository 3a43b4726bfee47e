package rstp

import (
	"fmt"
	"strings"
)

// Status is a bridge's RSTP status (OVS's struct ofproto_rstp_status):
// the root priority vector.
type Status struct {
	BridgeID, RootID, DesignatedID BridgeID
	RootPathCost                   uint32
	DesignatedPortID, BridgePortID uint16
	RootPort                       string // "" when this bridge is the root
}

// Status returns the bridge's status.
func (b *Bridge) Status() Status {
	s := Status{BridgeID: b.id, RootID: b.rootVec.RootID, DesignatedID: b.rootVec.DesignatedBridgeID,
		RootPathCost: b.rootVec.RootPathCost, DesignatedPortID: b.rootVec.DesignatedPortID}
	if b.rootPort != nil {
		s.BridgePortID, s.RootPort = b.rootPort.id, b.rootPort.name
	}
	return s
}

// PortStatus is a port's status and counters (struct
// ofproto_port_rstp_status).
type PortStatus struct {
	ID                     uint16
	Role                   Role
	State                  State
	DesignatedBridgeID     BridgeID
	DesignatedPortID       uint16
	DesignatedPathCost     uint32
	TxCount, RxCount, Errs uint64
	Uptime                 int
}

// PortStatus returns port name's status, false if it has none.
func (b *Bridge) PortStatus(name string) (PortStatus, bool) {
	p := b.port(name)
	if p == nil {
		return PortStatus{}, false
	}
	return PortStatus{ID: p.id, Role: p.role, State: p.state,
		DesignatedBridgeID: p.portVec.DesignatedBridgeID, DesignatedPortID: p.portVec.DesignatedPortID,
		DesignatedPathCost: p.portVec.RootPathCost, TxCount: p.tx, RxCount: p.rx, Errs: p.errors, Uptime: p.uptime}, true
}

// Show writes the bridge as `ovs-appctl rstp/show` prints it
// (rstp_print_details), ports by number.
func (b *Bridge) Show(w *strings.Builder) {
	fmt.Fprintf(w, "---- %s ----\n", b.name)
	w.WriteString("Root ID:\n")
	if b.rootPort == nil {
		idDetails(w, b.id, b.times)
		w.WriteString("  This bridge is the root\n")
	} else {
		idDetails(w, b.rootVec.RootID, b.rootPort.designatedTimes)
		fmt.Fprintf(w, "  root-port       %s\n", b.rootPort.name)
		fmt.Fprintf(w, "  root-path-cost  %d\n", b.rootVec.RootPathCost)
	}
	w.WriteString("\nBridge ID:\n")
	idDetails(w, b.id, b.times)
	w.WriteString("\n")
	fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-9.8s%-8.7s\n", "Interface", "Role", "State", "Cost", "Pri.Nbr")
	w.WriteString("  ---------- ---------- ---------- -------- -------\n")
	for _, p := range b.ports {
		fmt.Fprintf(w, "  %-11.10s%-11.10s%-11.10s%-9d%d.%d\n", p.name, p.role, p.state, p.cfg.PathCost, p.cfg.Priority, p.cfg.Number)
	}
	w.WriteString("\n")
}

func idDetails(w *strings.Builder, id BridgeID, t Times) {
	fmt.Fprintf(w, "  stp-priority    %d\n", uint16(id>>48))
	a := id.addr()
	fmt.Fprintf(w, "  stp-system-id   %02x:%02x:%02x:%02x:%02x:%02x\n", byte(a>>40), byte(a>>32), byte(a>>24), byte(a>>16), byte(a>>8), byte(a))
	fmt.Fprintf(w, "  stp-hello-time  %ds\n", t.HelloTime)
	fmt.Fprintf(w, "  stp-max-age     %ds\n", t.MaxAge)
	fmt.Fprintf(w, "  stp-fwd-delay   %ds\n", t.ForwardDelay)
}
