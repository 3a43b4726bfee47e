package bridge

import (
	"github.com/govs/govs/datapath"
)

// PolicingDatapath is implemented by a datapath that polices its ports'
// ingress (Interface ingress_policing_*), as OVS's userspace datapath does.
type PolicingDatapath interface {
	// SetPolicing replaces port no's policing; its buckets start full.
	SetPolicing(no uint32, p datapath.Policing) error
	// PolicingDrops counts the frames port no's policing dropped.
	PolicingDrops(no uint32) uint64
}

// policingOf reads the Interface's ingress_policing_* columns (kbit/s,
// kbit, kpkt/s, kpkt; the schema keeps them at 0 or more), clamped to
// uint32 as bridge.c's MIN(UINT32_MAX, ...) does.
func policingOf(rate, burst, kpktsRate, kpktsBurst int) datapath.Policing {
	u := func(v int) uint32 { return uint32(min(max(v, 0), 1<<32-1)) }
	return datapath.Policing{Rate: u(rate), Burst: u(burst), KpktsRate: u(kpktsRate), KpktsBurst: u(kpktsBurst)}
}

// applyPolicing brings the policing of ifc's datapath port in line with
// its spec. A port without one (patch ports, a client vhost-user port
// without a socket) is logged once, as the setting does nothing there.
// Caller holds mu.
func (s *Switch) applyPolicing(ifc *iface) {
	want := ifc.spec.Policing
	if !want.Enabled() {
		want = datapath.Policing{}
	}
	if want == ifc.policing {
		return
	}
	pd, ok := s.dp.(PolicingDatapath)
	if ifc.dpPort == 0 || !ok {
		if want.Enabled() && !ifc.policingWarned {
			s.log.Warnf("%s: ingress policing is not supported on an interface without a datapath port", ifc.spec.Name)
			ifc.policingWarned = true
		}
		return
	}
	if err := pd.SetPolicing(ifc.dpPort, want); err != nil {
		s.log.Warnf("%s: setting ingress policing failed: %v", ifc.spec.Name, err)
		return
	}
	ifc.policing, ifc.policingWarned = want, false
	if want.Enabled() {
		s.log.Infof("%s: ingress policing %s", ifc.spec.Name, want)
	} else {
		s.log.Infof("%s: ingress policing off", ifc.spec.Name)
	}
}

var _ PolicingDatapath = (*datapath.Datapath)(nil)
