package bridge

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/netdev"
)

// TypeAFXDP is OVS's type=afxdp: an existing kernel device read and written
// through AF_XDP sockets (netdev.OpenAFXDP).
const TypeAFXDP = "afxdp"

// Options of an afxdp interface (OVS's Documentation/intro/install/afxdp.rst).
const (
	OptXDPMode       = "xdp-mode"
	OptUseNeedWakeup = "use-need-wakeup"
	// StatusXDPMode is the mode in use, best-effort resolved.
	StatusXDPMode = "xdp-mode-in-use"
)

// afxdpPort runs afxdp interfaces. It is a system interface (link state,
// MTU, MAC, counters; attach and request are kernelPort's) with another way
// in and out.
type afxdpPort struct {
	kernelPort
}

func init() {
	registerPort(TypeAFXDP, afxdpPort{kernelPort{typ: TypeAFXDP, netdev: TypeAFXDP}})
}

// parse reads options as netdev_afxdp_set_config does: n_rxq as a system
// interface's (kernelPort.parse, the same limit and error), xdp-mode
// case-insensitively with best-effort the default and anything else
// refused with OVS's text (it logs it and fails the set_config),
// use-need-wakeup with smap_get_bool (true unless "false"; other values
// are logged here). Other options are logged as not configurable.
func (afxdpPort) parse(spec *IfaceSpec, _ parseEnv, problems *[]string) string {
	spec.AFXDP = netdev.AFXDPConfig{NeedWakeup: true}
	rest := map[string]string{}
	if v, ok := spec.Options[OptNRxq]; ok {
		rest[OptNRxq] = v
	}
	sys := *spec
	sys.Options = rest
	if e := (kernelPort{typ: TypeSystem}).parse(&sys, parseEnv{}, problems); e != "" {
		return e
	}
	spec.RxQueues = sys.RxQueues
	spec.AFXDP.RxQueues = sys.RxQueues
	if v, ok := spec.Options[OptXDPMode]; ok {
		m, ok := netdev.ParseXDPMode(v)
		if !ok {
			return fmt.Sprintf("%s: Incorrect xdp-mode (%s).", spec.Name, v)
		}
		spec.AFXDP.Mode = m
	}
	switch v, ok := spec.Options[OptUseNeedWakeup]; {
	case !ok, v == "true":
	case v == "false":
		spec.AFXDP.NeedWakeup = false
	default:
		*problems = append(*problems, fmt.Sprintf("interface %s: ignoring invalid options:%s=%q (must be true or false; using true)",
			spec.Name, OptUseNeedWakeup, v))
	}
	var others []string
	for _, k := range slices.Sorted(maps.Keys(spec.Options)) {
		if k != OptNRxq && k != OptXDPMode && k != OptUseNeedWakeup {
			others = append(others, k)
		}
	}
	if len(others) > 0 {
		*problems = append(*problems, fmt.Sprintf("interface %s: ignoring options %s, which afxdp interfaces do not take",
			spec.Name, strings.Join(others, ", ")))
	}
	return ""
}

// live: every option takes a new socket and program (OVS reconfigures the
// device too).
func (afxdpPort) live(string) bool { return false }

// apply: an AF_XDP port has no socket buffers or offloads to follow the
// global settings.
func (afxdpPort) apply(s *Switch, ifc *iface, mtu bool) {
	if mtu {
		s.applyMTU(ifc)
	}
}

// XDPModer is implemented by AF_XDP ports.
type XDPModer interface{ Mode() netdev.XDPMode }

func (a afxdpPort) status(ifc *iface, st *IfaceStatus) {
	a.kernelPort.status(ifc, st)
	if m, ok := ifc.dev.(XDPModer); ok && st.Status != nil {
		st.Status[StatusXDPMode] = m.Mode().String()
		st.Status["n_rxq"] = strconv.Itoa(max(ifc.spec.AFXDP.RxQueues, 1))
	}
}
