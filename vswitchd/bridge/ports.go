package bridge

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
)

// A portDriver runs one interface type, as an OVS netdev_class does. The
// reconciler finds it by the type's name (driverOf) and never looks at the
// type itself: a new type is one new file whose init registers its driver.
// Every method but parse is called with Switch.mu held.
type portDriver interface {
	// kind says which of the kernel-link machinery (netlink lookups, link
	// watch, mtu_request, MAC) applies to the type.
	kind() PortKind
	// parse reads spec.Options into spec's typed fields, once, when the
	// snapshot is built. It returns the Interface.error text OVS writes
	// for options the type cannot run with, "" if none; problems gets
	// the invalid values it ignores (logged, with the accepted range).
	parse(spec *IfaceSpec, env parseEnv, problems *[]string) string
	// live reports whether option key is applied in place by apply
	// rather than by re-creating the interface.
	live(key string) bool
	// attach opens ifc's device and adds it to the datapath. It returns
	// false when that failed; ifc then records why (Switch.fail).
	attach(s *Switch, ifc *iface) bool
	// request is how ifc's device is opened now, for reopen.
	request(s *Switch, ifc *iface) OpenRequest
	// apply brings an attached ifc in line with its (changed) spec and the
	// global settings; mtu is set when mtu_request changed.
	apply(s *Switch, ifc *iface, mtu bool)
	// refresh reads what the periodic write-back shows (link state,
	// counters) of an attached ifc with a device.
	refresh(s *Switch, ifc *iface)
	// status fills st, whose OFPort and Error are set, for an attached ifc.
	status(ifc *iface, st *IfaceStatus)
	// netdevType is the type as dpif/show and dpctl/show print it.
	netdevType(ifc *iface) string
}

// parseEnv is what parse may need beyond the Interface row.
type parseEnv struct {
	// VhostSockDir is where dpdkvhostuser ports serve their sockets.
	VhostSockDir string
}

// portDrivers holds the registered drivers by type name; written only by
// the drivers' init functions.
var portDrivers = map[string]portDriver{}

// registerPort makes d run interfaces of type typ and advertises typ in
// IfaceTypes.
func registerPort(typ string, d portDriver) {
	if _, dup := portDrivers[typ]; dup {
		panic("bridge: port type " + typ + " registered twice")
	}
	portDrivers[typ] = d
	IfaceTypes = append(IfaceTypes, typ)
	slices.Sort(IfaceTypes)
}

// driverOf returns the driver of the (normalised) interface type typ; a
// type govs does not run gets one that refuses it as OVS does.
func driverOf(typ string) portDriver {
	if d, ok := portDrivers[typ]; ok {
		return d
	}
	return unknownPort{}
}

// driver is ifc's driver: a bridge's local port is always an internal
// device (dummy-internal on a dummy datapath), whatever type its row names.
func (ifc *iface) driver() portDriver {
	if ifc.local && ifc.spec.Type != TypeDummyInternal {
		return driverOf(TypeInternal)
	}
	return driverOf(ifc.spec.Type)
}

// KindOf returns the kind of the (normalised) interface type typ.
func KindOf(typ string) PortKind { return driverOf(typ).kind() }

// unknownPort refuses a type no driver runs, with OVS's error: netdev_open
// finds no class for it.
type unknownPort struct{ noLive }

func (unknownPort) kind() PortKind                               { return KindUnknown }
func (unknownPort) parse(*IfaceSpec, parseEnv, *[]string) string { return "" }
func (unknownPort) request(*Switch, *iface) OpenRequest          { return OpenRequest{} }
func (unknownPort) apply(*Switch, *iface, bool)                  {}
func (unknownPort) refresh(*Switch, *iface)                      {}
func (unknownPort) status(*iface, *IfaceStatus)                  {}
func (unknownPort) netdevType(ifc *iface) string                 { return ifc.spec.Type }
func (unknownPort) attach(s *Switch, ifc *iface) bool {
	s.fail(ifc, StateFailed, fmt.Sprintf("could not open network device %s (%s)", ifc.spec.Name, Strerror(syscall.EAFNOSUPPORT)))
	return false
}

// noLive is embedded by drivers that apply no option in place.
type noLive struct{}

func (noLive) live(string) bool { return false }

// plug opens req and adds the device to the datapath as ifc's. On failure
// ifc records why: StateMissing when missing(err) says the device may yet
// appear, else StateFailed. Caller holds mu.
func (s *Switch) plug(ifc *iface, req OpenRequest, missing func(error) bool) bool {
	name := ifc.spec.Name
	dev, err := s.devs.Open(req)
	if err != nil {
		state := StateFailed
		if missing != nil && missing(err) {
			state = StateMissing
		}
		s.fail(ifc, state, fmt.Sprintf("could not open network device %s (%s)", name, Strerror(err)))
		return false
	}
	no := s.allocDPPort()
	if h := dummyPortHint(ifc); h != 0 && !s.dpPorts[h] {
		no = h
	}
	if err := s.dp.AddPort(no, dev); err != nil {
		dev.Close()
		s.fail(ifc, StateFailed, fmt.Sprintf("could not add network device %s to ofproto (%s)", name, Strerror(err)))
		return false
	}
	s.count("dpif_port_add")
	s.dpPorts[no] = true
	ifc.dev, ifc.dpPort = dev, no
	s.opened(ifc, req)
	return true
}

// kernelMissing: a system interface that does not exist (yet), or a tap
// of that name still being torn down, e.g. by a switch that just exited.
func kernelMissing(err error) bool {
	return errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EBUSY)
}
