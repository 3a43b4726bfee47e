package bridge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The dummy types, which exist with --enable-dummy (EnableDummy): ports
// with no device, fed by netdev-dummy/receive (lib/netdev-dummy.c).
const (
	TypeDummy         = "dummy"
	TypeDummyInternal = "dummy-internal"
	TypeDummyPMD      = "dummy-pmd"
	// DatapathDummy is the datapath_type whose bridges' internal ports
	// are dummy-internal (lib/dpif-netdev.c's dummy dpif).
	DatapathDummy = "dummy"
)

// DummyLevel is --enable-dummy's argument (lib/dummy.c).
type DummyLevel int

const (
	// DummyOff: no --enable-dummy.
	DummyOff DummyLevel = iota
	// DummyNone: --enable-dummy; the dummy types and datapath exist.
	DummyNone
	// DummySystem: --enable-dummy=system; system interfaces and the
	// system datapath are dummy too.
	DummySystem
	// DummyOverride: --enable-dummy=override; every interface type but
	// patch, and every datapath type, is dummy.
	DummyOverride
)

// ParseDummyLevel parses --enable-dummy's argument, with OVS's error.
func ParseDummyLevel(arg string) (DummyLevel, error) {
	switch arg {
	case "":
		return DummyNone, nil
	case "system":
		return DummySystem, nil
	case "override":
		return DummyOverride, nil
	}
	return DummyOff, fmt.Errorf("%s: unknown dummy level", arg)
}

var (
	dummyOnce  sync.Once
	dummyLevel DummyLevel // written once, by EnableDummy, before any switch runs
)

// EnableDummy registers the dummy types and, as level says, puts dummy
// drivers in place of other types', as OVS's dummy_enable does. It is
// called once, at start-up, before the database is read.
func EnableDummy(level DummyLevel) {
	dummyOnce.Do(func() {
		dummyLevel = level
		switch level {
		case DummyOverride:
			for typ := range portDrivers {
				if typ == TypePatch {
					continue
				}
				netdev := typ
				if typ == TypeInternal {
					netdev = TypeDummyInternal
				}
				portDrivers[typ] = dummyPort{netdev: netdev}
			}
		case DummySystem:
			portDrivers[TypeSystem] = dummyPort{netdev: TypeSystem}
		}
		registerPort(TypeDummy, dummyPort{netdev: TypeDummy})
		registerPort(TypeDummyInternal, dummyPort{netdev: TypeDummyInternal})
		registerPort(TypeDummyPMD, dummyPort{netdev: TypeDummyPMD})
		DatapathTypes = append(DatapathTypes, DatapathDummy)
		slices.Sort(DatapathTypes)
	})
}

// dummyDatapath reports whether bridges of datapath_type dp run on a
// dummy datapath, whose internal ports are dummy-internal.
func dummyDatapath(dp string) bool {
	switch dummyLevel {
	case DummyOff:
		return false
	case DummyOverride:
		return true
	case DummySystem:
		if dp == "" || dp == "system" {
			return true
		}
	}
	return dp == DatapathDummy
}

// internalType is the type a bridge of datapath_type dp runs its
// internal ports (its local port included) as.
func internalType(dp string) string {
	if dummyDatapath(dp) {
		return TypeDummyInternal
	}
	return TypeInternal
}

// DummyConfig is how a dummy port is opened.
type DummyConfig struct {
	// Netdev is the type it shows (dpif/show): dummy, dummy-internal,
	// or the type an override replaced.
	Netdev string
	// RxPcap and TxPcap are its pcap files, "" for none; the same path
	// for options:pcap.
	RxPcap, TxPcap string
}

// dummyPort runs a dummy interface. To the switch it is a device like a
// kernel one (KindKernel): Devices answers Link, SetMTU and SetMAC for it
// from the dummy itself.
type dummyPort struct{ netdev string }

func (dummyPort) kind() PortKind { return KindKernel }

// dummyOptions are the options netdev_dummy_set_config reads that govs
// runs; stream and pstream (frames over a socket) it does not.
var dummyOptions = map[string]bool{"pcap": true, "rxq_pcap": true, "tx_pcap": true, "ifindex": true}

// parse reads the pcap options; pstream/stream, n_rxq and the like are
// reported as not supported.
func (dummyPort) parse(spec *IfaceSpec, _ parseEnv, problems *[]string) string {
	keys := make([]string, 0, len(spec.Options))
	for k := range spec.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !dummyOptions[k] {
			*problems = append(*problems, fmt.Sprintf("%s: options:%s is not supported on dummy interfaces, ignored", spec.Name, k))
		}
	}
	if p := spec.Options["pcap"]; p != "" {
		spec.DummyRxPcap, spec.DummyTxPcap = p, p
	} else {
		spec.DummyRxPcap, spec.DummyTxPcap = spec.Options["rxq_pcap"], spec.Options["tx_pcap"]
	}
	return ""
}

// live: the pcap files are reopened in place.
func (dummyPort) live(key string) bool { return key == "pcap" || key == "rxq_pcap" || key == "tx_pcap" }

func (d dummyPort) request(_ *Switch, ifc *iface) OpenRequest {
	return OpenRequest{Name: ifc.spec.Name, Type: TypeDummy,
		Dummy: DummyConfig{Netdev: d.netdev, RxPcap: ifc.spec.DummyRxPcap, TxPcap: ifc.spec.DummyTxPcap}}
}

func (d dummyPort) attach(s *Switch, ifc *iface) bool {
	if !s.plug(ifc, d.request(s, ifc), nil) {
		return false
	}
	s.applyMTU(ifc)
	return true
}

// apply reopens the pcap files when they changed.
func (d dummyPort) apply(s *Switch, ifc *iface, mtu bool) {
	if mtu {
		s.applyMTU(ifc)
	}
	if pc, ok := ifc.dev.(interface{ SetPcap(rx, tx string) error }); ok {
		if err := pc.SetPcap(ifc.spec.DummyRxPcap, ifc.spec.DummyTxPcap); err != nil {
			s.log.Warnf("%s: opening pcap file failed: %v", ifc.spec.Name, err)
		}
	}
}

func (dummyPort) refresh(s *Switch, ifc *iface) { kernelPort{}.refresh(s, ifc) }
func (d dummyPort) netdevType(*iface) string    { return d.netdev }

// status: the counters netdev-dummy keeps, no status keys, and the link
// state the dummy reports (ifindex 0, as OVS writes for no ifindex).
func (dummyPort) status(ifc *iface, st *IfaceStatus) {
	st.Stats = map[string]int{
		"rx_packets": int(ifc.stats.RxPackets), "rx_bytes": int(ifc.stats.RxBytes),
		"tx_packets": int(ifc.stats.TxPackets), "tx_bytes": int(ifc.stats.TxBytes),
	}
	if l := ifc.link; l != nil {
		st.Link = &LinkStatus{AdminUp: l.AdminUp, LinkUp: l.OperUp, MTU: l.MTU, MAC: l.MAC.String(),
			HasIfindex: true, LinkResets: ifc.linkResets}
	}
}

// dummyPortHint is the datapath port number OVS's dummy datapath gives a
// dummy port (lib/dpif-netdev.c choose_port), so that tests read the
// numbers they expect: the number in its name, from 100 for names that
// begin "br" (br0 is 100, p1 is 1); 0 for none.
func dummyPortHint(ifc *iface) uint32 {
	if _, ok := ifc.driver().(dummyPort); !ok {
		return 0
	}
	return dummyPortNo(ifc.spec.Name)
}

func dummyPortNo(name string) uint32 {
	i := strings.IndexFunc(name, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 0 {
		return 0
	}
	j := i
	for j < len(name) && j-i < 9 && name[j] >= '0' && name[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(name[i:j])
	if strings.HasPrefix(name, "br") {
		n += 100
	}
	return uint32(n)
}

// allDummy reports whether d's bridges all run on OVS's dummy datapath,
// whose name the one datapath then goes by (dummy@ovs-dummy).
func allDummy(d *Desired) bool {
	for _, br := range d.Bridges {
		if !dummyDatapath(br.DatapathType) {
			return false
		}
	}
	return len(d.Bridges) > 0
}
