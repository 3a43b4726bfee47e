package bridge

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/schema/vswitchd"
)

// QoS types, with OVS's names (lib/netdev-dpdk.c).
const (
	// QoSEgressPolicer polices what a port sends: other_config:cir
	// (bytes per second) and cbs (bytes), netdev-dpdk's srTCM with no
	// excess bucket.
	QoSEgressPolicer = "egress-policer"
	// QoSTrTCMPolicer meters what a port sends with two-rate
	// three-color meters (RFC 4115), other_config cir/cbs/eir/ebs in
	// bytes; the frame's queue's meter first (set_queue's, else queue
	// 0's), then the port's.
	QoSTrTCMPolicer = "trtcm-policer"
	// QoSLinuxNoop asks the switch to leave the port's queueing alone
	// (lib/netdev-linux.c tc_ops_noop): OVS takes it on any port,
	// without a word, and qos/show says none is configured. OVN's
	// ovn-controller sets it on the egress interface of its tunnels.
	QoSLinuxNoop = "linux-noop"
)

// QoSSpec is the QoS row a Port names, parsed.
type QoSSpec struct {
	// Type is the row's type; "" means no QoS.
	Type string
	// CIR and CBS are an egress-policer's rate (bytes/s) and burst
	// (bytes).
	CIR, CBS uint64
	// TrTCM is a trtcm-policer's port meter, Queues its queues' by id,
	// in order (without a queue 0, the frames of no queue are dropped).
	TrTCM  datapath.TrTCM
	Queues []datapath.TrTCMQueue
}

func (q *QoSSpec) equal(o *QoSSpec) bool {
	return q.Type == o.Type && q.CIR == o.CIR && q.CBS == o.CBS && q.TrTCM == o.TrTCM && slices.Equal(q.Queues, o.Queues)
}

// EgressPolicingDatapath is implemented by a datapath that runs the
// egress-policer QoS type on its ports.
type EgressPolicingDatapath interface {
	SetEgressPolicing(no uint32, cir, cbs uint64) error
	EgressPolicingDrops(no uint32) uint64
	// SetTrTCMPolicing runs a trtcm-policer: the port's meter and its
	// queues' by id.
	SetTrTCMPolicing(no uint32, port datapath.TrTCM, queues []datapath.TrTCMQueue) error
	TrTCMQueueStats(no, queue uint32) (datapath.QueueStats, bool)
}

var _ EgressPolicingDatapath = (*datapath.Datapath)(nil)

// qosSpec parses port's QoS row: the types govs runs, the others reported
// in problems (OVS's userspace datapath refuses them with EOPNOTSUPP and
// the port runs without QoS, as here).
func qosSpec(port string, q *vswitchd.QoS, queues map[string]vswitchd.Queue, problems *[]string) QoSSpec {
	if q == nil || q.Type == "" || q.Type == QoSLinuxNoop {
		return QoSSpec{}
	}
	// smap_get_ullong: absent or unparsable means 0.
	getFrom := func(oc map[string]string) func(string) uint64 {
		return func(k string) uint64 {
			n, _ := strconv.ParseUint(oc[k], 10, 64)
			return n
		}
	}
	get := getFrom(q.OtherConfig)
	trtcm := func(get func(string) uint64) datapath.TrTCM {
		return datapath.TrTCM{CIR: get("cir"), CBS: get("cbs"), EIR: get("eir"), EBS: get("ebs")}
	}
	switch q.Type {
	case QoSTrTCMPolicer:
		spec := QoSSpec{Type: q.Type, TrTCM: trtcm(get)}
		// rte_meter_trtcm_rfc4115_profile_config refuses a meter
		// with no burst at all.
		if spec.TrTCM.CBS == 0 && spec.TrTCM.EBS == 0 {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS %s needs other_config:cbs or ebs (bytes) above 0; the port runs without QoS", port, q.Type))
			return QoSSpec{}
		}
		for _, id := range slices.Sorted(maps.Keys(q.Queues)) {
			row, ok := queues[q.Queues[id]]
			if !ok || id < 0 {
				continue
			}
			m := trtcm(getFrom(row.OtherConfig))
			if m.CBS == 0 && m.EBS == 0 {
				// OVS fails to configure such a queue (netdev_set_queue):
				// its frames go to queue 0.
				*problems = append(*problems, fmt.Sprintf("port %s: QoS %s queue %d needs other_config:cbs or ebs (bytes) above 0; the port runs without the queue", port, q.Type, id))
				continue
			}
			spec.Queues = append(spec.Queues, datapath.TrTCMQueue{ID: uint32(id), TrTCM: m})
		}
		if len(spec.Queues) == 0 || spec.Queues[0].ID != 0 {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS %s has no queue 0: the port drops every frame it sends that set_queue put in no queue it has, as OVS's does", port, q.Type))
		}
		return spec
	case QoSEgressPolicer:
		spec := QoSSpec{Type: q.Type, CIR: get("cir"), CBS: get("cbs")}
		if spec.CIR == 0 || spec.CBS == 0 {
			*problems = append(*problems, fmt.Sprintf("port %s: QoS %s needs other_config:cir (bytes/s) and cbs (bytes), both above 0; the port runs without QoS", port, q.Type))
			return QoSSpec{}
		}
		return spec
	}
	*problems = append(*problems, fmt.Sprintf("port %s: QoS type %s is not supported by the userspace datapath (%s: govs runs %s and %s); the port runs without QoS",
		port, q.Type, "Operation not supported", QoSEgressPolicer, QoSTrTCMPolicer))
	return QoSSpec{}
}

// queueDSCP returns the dscp of q's queues that have one, by queue id;
// OVS's iface_configure_qos hands them to the OpenFlow layer for any QoS
// with a type, whether the port runs it or not.
func queueDSCP(q *vswitchd.QoS, queues map[string]vswitchd.Queue) map[uint32]uint8 {
	if q.Type == "" {
		return nil
	}
	var m map[uint32]uint8
	for id, u := range q.Queues {
		if row, ok := queues[u]; ok && row.DSCP != nil && id >= 0 {
			if m == nil {
				m = map[uint32]uint8{}
			}
			m[uint32(id)] = uint8(*row.DSCP)
		}
	}
	return m
}

// applyQoS brings the QoS of ifc's datapath port in line with its port's.
// Caller holds mu.
func (s *Switch) applyQoS(ifc *iface) {
	want := ifc.port.QoS
	if want.equal(&ifc.qos) {
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
	var err error
	if want.Type == QoSTrTCMPolicer {
		err = ed.SetTrTCMPolicing(ifc.dpPort, want.TrTCM, want.Queues)
	} else {
		err = ed.SetEgressPolicing(ifc.dpPort, want.CIR, want.CBS)
	}
	if err != nil {
		s.log.Warnf("%s: setting QoS failed: %v", ifc.spec.Name, err)
		return
	}
	ifc.qos, ifc.qosAt, ifc.qosWarned = want, time.Now(), false
	switch want.Type {
	case QoSEgressPolicer:
		s.log.Infof("%s: QoS %s cir %d cbs %d", ifc.spec.Name, want.Type, want.CIR, want.CBS)
	case QoSTrTCMPolicer:
		s.log.Infof("%s: QoS %s %s", ifc.spec.Name, want.Type, trtcmDetails(want.TrTCM, ", "))
	default:
		s.log.Infof("%s: QoS off", ifc.spec.Name)
	}
}

// ErrNoSuchInterface is qos/show's error for an unknown interface, in
// OVS's words.
var ErrNoSuchInterface = errors.New("no such interface")

// QoSShow renders `ovs-appctl qos/show IFACE` as bridge.c's
// qos_unixctl_show does: the type and its details (netdev-dpdk's
// egress-policer has no queues to list), or that none runs.
func (s *Switch) QoSShow(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ifc, ok := s.ifaces[name]
	if !ok {
		return "", ErrNoSuchInterface
	}
	q := ifc.qos
	switch q.Type {
	case QoSEgressPolicer:
		return fmt.Sprintf("QoS: %s %s\ncbs: %d\ncir: %d\n", name, q.Type, q.CBS, q.CIR), nil
	case QoSTrTCMPolicer:
		var b strings.Builder
		fmt.Fprintf(&b, "QoS: %s %s\n%s\n", name, q.Type, trtcmDetails(q.TrTCM, "\n"))
		for _, qs := range q.Queues {
			// qos_unixctl_show_queue: queue 0 is "Default".
			if qs.ID == 0 {
				b.WriteString("\nDefault:\n")
			} else {
				fmt.Fprintf(&b, "\nQueue %d:\n", qs.ID)
			}
			fmt.Fprintf(&b, "  %s\n", trtcmDetails(qs.TrTCM, "\n  "))
			var st datapath.QueueStats
			if ed, ok := s.dp.(EgressPolicingDatapath); ok {
				st, _ = ed.TrTCMQueueStats(ifc.dpPort, qs.ID)
			}
			fmt.Fprintf(&b, "  tx_packets: %d\n  tx_bytes: %d\n  tx_errors: %d\n", st.TxPackets, st.TxBytes, st.TxErrors)
		}
		return b.String(), nil
	}
	// A reply, not an error: Debian's ovs-appctl exits 0.
	return fmt.Sprintf("QoS not configured on %s\n", name), nil
}

// trtcmDetails renders a meter's parameters as netdev-dpdk's get_qos and
// get_queue report them, sorted by key.
func trtcmDetails(m datapath.TrTCM, sep string) string {
	return fmt.Sprintf("cbs: %d%scir: %d%sebs: %d%seir: %d", m.CBS, sep, m.CIR, sep, m.EBS, sep, m.EIR)
}
