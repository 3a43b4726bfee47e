package bridge

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/netdev"
)

// The other_config keys that set how the ports' kernel side is opened. Both
// apply live: socket buffers are resized in place (a system port moving
// between its ring and a socket buffer takes a new socket without losing a
// frame, netdev.SockBufSwitcher), a change of offloads reopens the ports
// (keeping their datapath and OpenFlow numbers).
const (
	// KeySockBufSize sets the receive and send buffers of every AF_PACKET
	// socket, in Open_vSwitch other_config, overridden per interface by
	// Interface other_config. OVS never merged it (REFERENCE.md §5).
	KeySockBufSize = "userspace-sock-buf-size"
	// KeyTSOEnable is Open_vSwitch other_config:userspace-tso-enable. OVS
	// defaults it to false and needs a restart; govs defaults it to true.
	KeyTSOEnable = "userspace-tso-enable"
	// KeyTunnelUDPGSO is Interface other_config:tunnel-udp-gso of a VXLAN
	// or Geneve tunnel (govs only, false by default): a TSO super-frame
	// leaves as one UDP GSO frame, which the underlay's receiver must
	// take whole (a govs, a kernel stack) or segment (a NIC, the
	// kernel's egress); datapath/tnlgso.go.
	KeyTunnelUDPGSO = "tunnel-udp-gso"
)

// The range of KeySockBufSize, in bytes: from the usual net.core.rmem_default
// to INT_MAX/2, the largest the kernel can double without overflow.
const (
	MinSockBufSize = 212992
	MaxSockBufSize = 1073741823
)

// Option is one other_config setting as the database holds it.
type Option[T comparable] struct {
	// Value is the setting; the zero value of an absent key means the
	// default (see the field that holds the Option).
	Value T
	// Bad is set when the key holds something unusable: Build reports it
	// in Problems and the switch keeps the setting it runs.
	Bad bool
}

// ParseSockBufSize parses a KeySockBufSize value.
func ParseSockBufSize(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < MinSockBufSize || n > MaxSockBufSize {
		return 0, fmt.Errorf("must be an integer in the range %d..%d", MinSockBufSize, MaxSockBufSize)
	}
	return n, nil
}

// ParseTSOEnable parses a KeyTSOEnable value.
func ParseTSOEnable(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf(`must be "true" or "false"`)
}

// parseOption reads key from oc with parse; an absent key gives def. where
// names the row in the Problems text.
func parseOption[T comparable](oc map[string]string, key, where string, def T, parse func(string) (T, error), problems *[]string) Option[T] {
	v, ok := oc[key]
	if !ok {
		return Option[T]{Value: def}
	}
	x, err := parse(v)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: ignoring invalid other_config:%s=%q (%v), keeping the previous setting", where, key, v, err))
		return Option[T]{Value: def, Bad: true}
	}
	return Option[T]{Value: x}
}

// effSockBuf is the socket buffer size ifc should run with: its own
// request, else the global one, else underlaySockBuf for a tunnel's
// underlay port; 0 for the kernel default. Caller holds mu.
func (s *Switch) effSockBuf(ifc *iface) int {
	if ifc.sockBufReq > 0 {
		return ifc.sockBufReq
	}
	if s.sockBuf == 0 && ifc.underlay {
		return underlaySockBuf
	}
	return s.sockBuf
}

// portConfig is how ifc's device is opened now. Caller holds mu.
func (s *Switch) portConfig(ifc *iface) netdev.Config {
	return netdev.Config{SockBufSize: s.effSockBuf(ifc), DisableOffload: !s.tso, RxQueues: ifc.spec.RxQueues}
}

// opened records the settings ifc's new device was opened with (req) and
// what it negotiated. Caller holds mu.
func (s *Switch) opened(ifc *iface, req OpenRequest) {
	ifc.tso = s.tso
	ifc.sockBuf = s.effSockBuf(ifc)
	ifc.rxQueues = req.Config.RxQueues
	ifc.offloads = ifc.dev.Offloads()
	ifc.zeroCopy, ifc.txRetries = req.Vhost.ZeroCopy, req.Vhost.TxRetriesMax
	s.readSockBufs(ifc)
	// A new datapath port polices nothing yet.
	ifc.policing, ifc.policed = datapath.Policing{}, 0
	ifc.qos, ifc.qosPoliced = QoSSpec{}, 0
	s.applyPolicing(ifc)
	s.applyQoS(ifc)
}

// reopenForOffloads reopens an attached ifc whose device runs with other
// offloads than userspace-tso-enable now asks; false if it has no device
// or needs no reopening. Caller holds mu.
func (s *Switch) reopenForOffloads(ifc *iface) bool {
	if ifc.dev == nil || ifc.tso == s.tso {
		return false
	}
	s.reopen(ifc)
	return true
}

// applySockBuf brings an attached kernel ifc's device in line with the
// socket buffer settings. Caller holds mu.
func (s *Switch) applySockBuf(ifc *iface) {
	n := s.effSockBuf(ifc)
	if n == ifc.sockBuf {
		return
	}
	sz, ok := ifc.dev.(netdev.SockBufSizer)
	if !ok {
		// A tap device has no socket buffer: nothing to set.
		ifc.sockBuf = n
		return
	}
	if (n == 0) != (ifc.sockBuf == 0) {
		// A system port receives through an mmap'd ring while the key is
		// unset and through its socket buffer while it is set (see
		// netdev.OpenSystem): switching between them takes a new socket,
		// which the port takes over in place without losing a frame.
		if sw, ok := ifc.dev.(netdev.SockBufSwitcher); ok {
			err := sw.SwitchSockBuf(n)
			if err == nil {
				ifc.sockBuf = n
				s.log.Infof("%s: moved to a new socket for socket buffers of %d bytes", ifc.spec.Name, n)
				s.readSockBufs(ifc)
				return
			}
			if errors.Is(err, netdev.ErrMultiQueue) {
				s.log.Infof("%s: reopening its %d receive queues for the new socket buffers", ifc.spec.Name, ifc.rxQueues)
			} else {
				s.log.Warnf("%s: %s; reopening", ifc.spec.Name, Strerror(err))
			}
		}
		s.reopen(ifc)
		return
	}
	ifc.sockBuf = n
	rcv, snd := n, n
	if n == 0 {
		// Back to what a fresh socket has: the kernel doubles what is
		// set, so half of net.core.[rw]mem_default.
		r, w, err := s.devs.SockBufDefaults()
		if err != nil {
			s.log.Warnf("%s: reading the default socket buffer sizes failed: %v", ifc.spec.Name, err)
			return
		}
		rcv, snd = r/2, w/2
	}
	if err := sz.SetSockBufs(rcv, snd); err != nil {
		s.log.Warnf("%s: setting socket buffers to %d/%d bytes failed: %s", ifc.spec.Name, rcv, snd, Strerror(err))
	} else {
		s.log.Infof("%s: socket buffers set to %d/%d bytes", ifc.spec.Name, rcv, snd)
	}
	s.readSockBufs(ifc)
}

// reopen opens ifc's device again with the current settings under the
// same datapath port number, so neither that nor its OpenFlow number
// changes. Caller holds mu.
func (s *Switch) reopen(ifc *iface) {
	name := ifc.spec.Name
	cfg := s.portConfig(ifc)
	req := ifc.driver().request(s, ifc)
	if err := s.dp.DelPort(ifc.dpPort); err != nil {
		s.log.Warnf("%s: deleting datapath port %d: %v", name, ifc.dpPort, err)
	}
	s.count("dpif_port_del")
	var dev netdev.Port
	var err error
	if r, ok := ifc.dev.(netdev.Reopener); ok {
		dev, err = r.Reopen(cfg)
	} else {
		ifc.dev.Close()
		dev, err = s.devs.Open(req)
	}
	if err == nil {
		if err = s.dp.AddPort(ifc.dpPort, dev); err != nil {
			dev.Close()
		}
	}
	if err != nil {
		ifc.dev.Close()
		delete(s.dpPorts, ifc.dpPort)
		ifc.dev, ifc.dpPort = nil, 0
		ifc.state = StateMissing // keeps the OpenFlow number; retried by the next Apply
		s.fail(ifc, StateMissing, fmt.Sprintf("could not reopen network device %s (%s)", name, Strerror(err)))
		return
	}
	s.count("dpif_port_add")
	ifc.dev = dev
	s.opened(ifc, req)
	s.log.Infof("%s: reopened with offloads %s", name, onOff(s.tso))
}

// readSockBufs rereads the sizes the kernel reports. Caller holds mu.
func (s *Switch) readSockBufs(ifc *iface) {
	ifc.rcvBuf, ifc.sndBuf = 0, 0
	if sz, ok := ifc.dev.(netdev.SockBufSizer); ok {
		if r, w, err := sz.SockBufs(); err == nil {
			ifc.rcvBuf, ifc.sndBuf = r, w
		}
	}
}

// Interface status keys govs writes for a running port. The offload keys
// are those OVS's netdev-dpdk shows (lib/netdev-dpdk.c get_status, OVS
// 3.3+), plus tx_udp_seg_offload for USO; the socket buffer keys are
// govs' own: getsockopt's SO_RCVBUF/SO_SNDBUF, twice the size set.
const (
	StatusTCPCsum = "tx_tcp_csum_offload"
	StatusUDPCsum = "tx_udp_csum_offload"
	StatusTCPSeg  = "tx_tcp_seg_offload"
	StatusUDPSeg  = "tx_udp_seg_offload"
	StatusRxBuf   = "rx_sock_buf"
	StatusTxBuf   = "tx_sock_buf"
	// StatusSockBuf is "none" on ports without socket buffers (tap
	// devices: their queue is the device's txqueuelen), where govs
	// ignores KeySockBufSize.
	StatusSockBuf = "sock_buf"
)

// statusColumn renders Interface.status for an attached port with a device.
func (ifc *iface) statusColumn() map[string]string {
	o := ifc.offloads
	m := map[string]string{
		StatusTCPCsum: strconv.FormatBool(o.Csum),
		StatusUDPCsum: strconv.FormatBool(o.Csum),
		StatusTCPSeg:  strconv.FormatBool(o.TSO4 || o.TSO6),
		StatusUDPSeg:  strconv.FormatBool(o.USO),
	}
	if _, ok := ifc.dev.(netdev.SockBufSizer); !ok {
		m[StatusSockBuf] = "none"
	} else if ifc.rcvBuf > 0 {
		m[StatusRxBuf] = strconv.Itoa(ifc.rcvBuf)
		m[StatusTxBuf] = strconv.Itoa(ifc.sndBuf)
	}
	return m
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Datapath flow settings from Open_vSwitch other_config, with OVS's
// defaults (vswitchd/vswitch.xml: flow-limit 200000, max-idle 10000 ms).
const (
	KeyFlowLimit     = "flow-limit"
	KeyMaxIdle       = "max-idle"
	DefaultFlowLimit = 200000
	DefaultMaxIdle   = 10 * time.Second
)

// ParseFlowLimit parses other_config:flow-limit, a positive number of flows.
func ParseFlowLimit(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("must be a positive integer")
	}
	return n, nil
}

// ParseMaxIdle parses other_config:max-idle, in milliseconds; OVS raises
// values under 100 ms to 100 ms.
func ParseMaxIdle(v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("must be a positive number of milliseconds")
	}
	return max(time.Duration(n)*time.Millisecond, 100*time.Millisecond), nil
}

// KeyBundleIdleTimeout is Open_vSwitch other_config:bundle-idle-timeout.
const KeyBundleIdleTimeout = "bundle-idle-timeout"

// ParseBundleIdleTimeout parses other_config:bundle-idle-timeout, at
// least one second (as OpenFlow requires and vswitch.xml says).
func ParseBundleIdleTimeout(v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("must be an integer number of seconds, at least 1")
	}
	return time.Duration(n) * time.Second, nil
}

// CTSettings is implemented by a backer that gives conntrack zones the
// timeout policies of the Datapath table.
type CTSettings interface {
	SetCTZonePolicies(zones map[uint16]conntrack.TimeoutPolicy) []error
}

// FlowSettings is implemented by a datapath whose flow table limits follow
// other_config.
type FlowSettings interface {
	SetFlowLimit(n int)
	SetMaxIdle(d time.Duration)
}
