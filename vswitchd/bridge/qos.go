package bridge

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/schema/vswitchd"
)

// QoS types, with OVS's names (lib/netdev-dpdk.c).
const (
	// QoSEgressPolicer polices what a port sends: other_config:cir
	// (bytes per second) and cbs (bytes), netdev-dpdk's srTCM with no
	// excess bucket.
	QoSEgressPolicer = "egress-policer"
)

// QoSSpec is the QoS row a Port names, parsed.
type QoSSpec struct {
	// Type is the row's type; "" means no QoS.
	Type string
	// CIR and CBS are an egress-policer's rate (bytes/s) and burst
	// (bytes).
	CIR, CBS uint64
}

// EgressPolicingDatapath is implemented by a datapath that runs the
// egress-policer QoS type on its ports.
type EgressPolicingDatapath interface {
	SetEgressPolicing(no uint32, cir, cbs uint64) error
	EgressPolicingDrops(no uint32) uint64
}

var _ EgressPolicingDatapath = (*datapath.Datapath)(nil)

// qosSpec parses port's QoS row: the types govs runs, the others reported
// in problems (OVS's userspace datapath refuses them with EOPNOTSUPP and
// the port runs without QoS, as here).
func qosSpec(port string, q *vswitchd.QoS, problems *[]string) QoSSpec {
	if q == nil || q.Type == "" {
		return QoSSpec{}
	}
	switch q.Type {
	case QoSEgressPolicer:
		// smap_get_ullong: absent or unparsable means 0.
		get := func(k string) uint64 {
			n, _ := strconv.ParseUint(q.OtherConfig[k], 10, 64)
			return n
		}
		spec := QoSSpec{Type: q.Type, CIR: get("cir"), CBS: get("cbs")}
		if spec.CIR == 0 || spec.CBS == 0 {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS %s needs other_config:cir (bytes/s) and cbs (bytes), both above 0; the port runs without QoS", port, q.Type))
			return QoSSpec{}
		}
		return spec
	}
	*problems = append(*problems, fmt.Sprintf("port %s: QoS type %s is not supported by the userspace datapath (%s: govs runs %s); the port runs without QoS",
		port, q.Type, "Operation not supported", QoSEgressPolicer))
	return QoSSpec{}
}

// applyQoS brings the QoS of ifc's datapath port in line with its port's.
// Caller holds mu.
func (s *Switch) applyQoS(ifc *iface) {
	want := ifc.port.QoS
	if want == ifc.qos {
		return
	}
	ed, ok := s.dp.(EgressPolicingDatapath)
	if ifc.dpPort == 0 || !ok {
		if want.Type != "" && !ifc.qosWarned {
			s.log.Warnf("%s: QoS %s is not supported on an interface without a datapath port", ifc.spec.Name, want.Type)
			ifc.qosWarned = true
		}
		return
	}
	if err := ed.SetEgressPolicing(ifc.dpPort, want.CIR, want.CBS); err != nil {
		s.log.Warnf("%s: setting QoS failed: %v", ifc.spec.Name, err)
		return
	}
	ifc.qos, ifc.qosWarned = want, false
	if want.Type != "" {
		s.log.Infof("%s: QoS %s cir %d cbs %d", ifc.spec.Name, want.Type, want.CIR, want.CBS)
	} else {
		s.log.Infof("%s: QoS off", ifc.spec.Name)
	}
}

// ErrNoSuchInterface is qos/show's error for an unknown interface, in
// OVS's words.
var ErrNoSuchInterface = errors.New("no such interface")

// QoSShow renders `ovs-appctl qos/show IFACE` as bridge.c's
// qos_unixctl_show does: the type and its details (netdev-dpdk's
// egress-policer has no queues to list), or an error when none runs.
func (s *Switch) QoSShow(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ifc, ok := s.ifaces[name]
	if !ok {
		return "", ErrNoSuchInterface
	}
	if ifc.qos.Type == "" {
		return "", fmt.Errorf("QoS not configured on %s\n", name)
	}
	return fmt.Sprintf("QoS: %s %s\ncbs: %d\ncir: %d\n", name, ifc.qos.Type, ifc.qos.CBS, ifc.qos.CIR), nil
}
