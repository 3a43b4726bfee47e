package bridge

import "fmt"

// kernelPort runs a kernel network device: system attaches to an existing
// interface through AF_PACKET, internal and tap create a tap device (OVS's
// userspace datapath runs internal ports as taps too).
type kernelPort struct {
	noLive
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

// parse: kernel devices take no options; OVS warns (netdev_set_config).
func (kernelPort) parse(spec *IfaceSpec, _ parseEnv, problems *[]string) string {
	if len(spec.Options) > 0 {
		*problems = append(*problems, fmt.Sprintf("%s: arguments provided to device that is not configurable", spec.Name))
	}
	return ""
}

func (k kernelPort) netdevType(*iface) string { return k.netdev }
func (k kernelPort) request(s *Switch, ifc *iface) OpenRequest {
	return OpenRequest{Name: ifc.spec.Name, Type: k.typ, Config: s.portConfig(ifc)}
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
	if ifc.dev != nil && !s.reopenForOffloads(ifc) {
		s.applySockBuf(ifc)
	}
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
