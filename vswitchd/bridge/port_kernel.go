package bridge

import (
	"fmt"
	"strconv"

	"github.com/govs/govs/netdev"
)

// OptNRxq is a kernel interface's options:n_rxq, its receive queues, each
// read by a datapath worker of its own: for a system interface one
// AF_PACKET socket each in a PACKET_FANOUT_HASH group, for tap and internal
// interfaces one file each of a multi-queue tap (IFF_MULTI_QUEUE). It
// applies live, by reopening the port.
const OptNRxq = "n_rxq"

// kernelPort runs a kernel network device: system attaches to an existing
// interface through AF_PACKET, internal and tap create a tap device (OVS's
// userspace datapath runs internal ports as taps too).
type kernelPort struct {
	typ string
	// netdev is the type as OVS's netdev layer names it.
	netdev string
}

func init() {
	registerPort(TypeSystem, kernelPort{typ: TypeSystem, netdev: TypeSystem})
	registerPort(TypeInternal, kernelPort{typ: TypeInternal, netdev: TypeTap})
	registerPort(TypeTap, kernelPort{typ: TypeTap, netdev: TypeTap})
}

func (kernelPort) kind() PortKind { return KindKernel }

// parse: a kernel interface takes n_rxq; other options are not
// configurable and OVS warns (netdev_set_config). OVS's tap and internal
// ports take no n_rxq (they warn for it too and run one queue); govs
// gives them queues as it does system ports. n_rxq is read as OVS's AF_XDP ports read it
// (netdev_afxdp_set_config): MAX(smap_get_int(n_rxq, 1), 1), more than
// MaxRxQueues refused with its error; the values OVS takes as 1 silently
// are also logged here.
func (k kernelPort) parse(spec *IfaceSpec, _ parseEnv, problems *[]string) string {
	spec.RxQueues = 1
	others := len(spec.Options)
	if v, ok := spec.Options[OptNRxq]; ok {
		others--
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1:
			*problems = append(*problems, fmt.Sprintf("interface %s: ignoring invalid options:%s=%q (must be an integer in the range 1..%d; using 1)",
				spec.Name, OptNRxq, v, netdev.MaxRxQueues))
		case n > netdev.MaxRxQueues:
			return fmt.Sprintf("%s: Too big '%s' (%d > %d).", spec.Name, OptNRxq, n, netdev.MaxRxQueues)
		default:
			spec.RxQueues = n
		}
	}
	if others > 0 {
		*problems = append(*problems, fmt.Sprintf("%s: arguments provided to device that is not configurable", spec.Name))
	}
	return ""
}

// live: n_rxq applies by reopening the interface (apply).
func (k kernelPort) live(key string) bool { return key == OptNRxq }

func (k kernelPort) netdevType(*iface) string { return k.netdev }
func (k kernelPort) request(s *Switch, ifc *iface) OpenRequest {
	return OpenRequest{Name: ifc.spec.Name, Type: k.typ, Config: s.portConfig(ifc), AFXDP: ifc.spec.AFXDP}
}

// addressSource marks the drivers whose interfaces' MACs a bridge may take
// as its own (bridge.c's choice among its system interfaces).
type addressSource interface{ addressSource() bool }

func (k kernelPort) addressSource() bool { return k.typ == TypeSystem }

func (k kernelPort) attach(s *Switch, ifc *iface) bool {
	if !s.plug(ifc, k.request(s, ifc), kernelMissing) {
		return false
	}
	s.applyMTU(ifc)
	return true
}

func (kernelPort) apply(s *Switch, ifc *iface, mtu bool) {
	if mtu {
		s.applyMTU(ifc)
	}
	if ifc.dev == nil || s.reopenForOffloads(ifc) {
		return
	}
	if max(ifc.rxQueues, 1) != max(ifc.spec.RxQueues, 1) {
		s.log.Infof("%s: reopening with %d receive queues", ifc.spec.Name, max(ifc.spec.RxQueues, 1))
		s.reopen(ifc)
		return
	}
	s.applySockBuf(ifc)
}

func (kernelPort) refresh(s *Switch, ifc *iface) {
	l, err := s.devs.Link(ifc.spec.Name)
	if err != nil {
		return
	}
	if ifc.link != nil && ifc.link.OperUp && !l.OperUp {
		ifc.linkResets++
	}
	ifc.link = &l
}

func (kernelPort) status(ifc *iface, st *IfaceStatus) {
	st.Stats = statsColumn(ifc.stats)
	if ifc.dev != nil {
		st.Status = ifc.statusColumn()
	}
	if l := ifc.link; l != nil {
		st.Link = &LinkStatus{
			AdminUp: l.AdminUp, LinkUp: l.OperUp, Speed: int(l.Speed) * 1000000, Duplex: l.Duplex,
			MTU: l.MTU, MAC: l.MAC.String(), Ifindex: l.Index, HasIfindex: true,
			LinkResets: ifc.linkResets,
		}
	}
}
