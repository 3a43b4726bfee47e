package bridge

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/vhostuser"
)

// The vhost-user interface types, with OVS's names (lib/netdev-dpdk.c),
// run on govs' own back-end (netdev/vhostuser), without DPDK.
const (
	// TypeVhostUser: govs serves <vhost-sock-dir>/<interface name>.
	TypeVhostUser = "dpdkvhostuser"
	// TypeVhostUserClient: govs connects to options:vhost-server-path,
	// which the VM or DPDK application serves, and reconnects.
	TypeVhostUserClient = "dpdkvhostuserclient"
)

// The Interface options of vhost-user ports, as OVS names them.
const (
	OptVhostServerPath = "vhost-server-path"
	// OptDQZeroCopy and OptTxRetriesMax apply live, without reopening.
	OptDQZeroCopy   = "dq-zero-copy"
	OptTxRetriesMax = "tx-retries-max"
	// KeyVhostSockDir is Open_vSwitch other_config:vhost-sock-dir, the
	// server ports' socket directory relative to the rundir.
	KeyVhostSockDir = "vhost-sock-dir"
)

// PortKind is how the switch runs an interface type: what opens it and
// which of the kernel-link machinery (netlink lookups, link watch,
// mtu_request, MAC) applies to it.
type PortKind int

const (
	// KindUnknown: a type govs does not run.
	KindUnknown PortKind = iota
	// KindKernel: a kernel network device (system, internal, tap).
	KindKernel
	// KindPatch: a patch port, no device at all.
	KindPatch
	// KindVhost: a vhost-user port, a unix socket and shared memory.
	KindVhost
)

func (k PortKind) String() string {
	switch k {
	case KindKernel:
		return "kernel"
	case KindPatch:
		return "patch"
	case KindVhost:
		return "vhost-user"
	}
	return "unknown"
}

// VhostPort is what the switch needs of a vhost-user port beyond
// netdev.Port; *vhostuser.Port implements it.
type VhostPort interface {
	netdev.Port
	SetZeroCopy(on bool)
	SetTxRetriesMax(n int) error
	Status() map[string]string
	Counters() vhostuser.Counters
	Running() bool
}

var _ VhostPort = (*vhostuser.Port)(nil)

// OpenRequest is what Devices.Open needs to open one interface.
type OpenRequest struct {
	Name string
	// Type is TypeSystem, TypeInternal, TypeTap, TypeVhostUser or
	// TypeVhostUserClient.
	Type string
	// Config applies to kernel devices.
	Config netdev.Config
	// SocketPath and Vhost apply to vhost-user ports: the socket to serve
	// (TypeVhostUser) or to connect to (TypeVhostUserClient).
	SocketPath string
	Vhost      vhostuser.Config
	// Dummy is how a TypeDummy port is opened.
	Dummy DummyConfig
	// AFXDP is how a TypeAFXDP port is opened.
	AFXDP netdev.AFXDPConfig
}

// vhostSockDir resolves other_config:vhost-sock-dir as OVS's dpdk_init
// does (lib/dpdk.c): relative to the rundir, "" or absent meaning the
// rundir itself; a value with ".." is refused. OVS also logs an error when
// the directory does not exist; govs lets the ports' Interface.error say
// so instead.
func vhostSockDir(rundir string, oc map[string]string, problems *[]string) string {
	sub, ok := oc[KeyVhostSockDir]
	// process_vhost_flags: only a value shorter than NAME_MAX counts.
	if !ok || sub == "" || len(sub) >= 255 {
		return rundir
	}
	if strings.Contains(sub, "..") {
		// OVS's text, its missing space included.
		*problems = append(*problems, fmt.Sprintf("vhost-user sock directory request '%s/%s' has invalid"+
			"characters '..' - using %s instead.", rundir, sub, rundir))
		return rundir
	}
	return rundir + "/" + sub
}

// vhostOptions parses the live options as OVS does: dq-zero-copy with
// smap_get_bool (only "true" is true), tx-retries-max with smap_get_int,
// anything unparsable or outside 0..32 meaning the default, 8
// (netdev_dpdk_vhost_client_set_config). OVS says nothing about the values
// it ignores; govs adds them to problems, with the accepted values.
func vhostOptions(name string, options map[string]string, problems *[]string) (zeroCopy bool, txRetries int) {
	bad := func(key, v, want string) {
		*problems = append(*problems, fmt.Sprintf("interface %s: ignoring invalid options:%s=%q (%s)", name, key, v, want))
	}
	switch v, ok := options[OptDQZeroCopy]; {
	case v == "true":
		zeroCopy = true
	case ok && v != "false":
		bad(OptDQZeroCopy, v, `must be "true" or "false"; using "false"`)
	}
	txRetries = vhostuser.DefaultTxRetries
	if v, ok := options[OptTxRetriesMax]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= vhostuser.MaxTxRetries {
			txRetries = n
		} else {
			bad(OptTxRetriesMax, v, fmt.Sprintf("must be an integer in the range 0..%d; using the default, %d",
				vhostuser.MaxTxRetries, vhostuser.DefaultTxRetries))
		}
	}
	return zeroCopy, txRetries
}

// vhostRequest is how ifc's vhost-user port is opened now. Caller holds mu.
func (s *Switch) vhostRequest(ifc *iface) OpenRequest {
	cfg := vhostuser.DefaultConfig()
	cfg.Logger = s.log
	cfg.ZeroCopy = ifc.spec.ZeroCopy
	cfg.TxRetriesMax = ifc.spec.TxRetries
	cfg.DisableOffload = !s.tso
	return OpenRequest{Name: ifc.spec.Name, Type: ifc.spec.Type, SocketPath: ifc.spec.VhostPath, Vhost: cfg}
}

// vhostPort runs vhost-user ports: server (dpdkvhostuser) or client
// (dpdkvhostuserclient).
type vhostPort struct{ server bool }

func init() {
	registerPort(TypeVhostUser, vhostPort{server: true})
	registerPort(TypeVhostUserClient, vhostPort{})
}

func (vhostPort) kind() PortKind { return KindVhost }

// live: dq-zero-copy and tx-retries-max apply in place (applyVhostOptions).
func (vhostPort) live(key string) bool { return key == OptDQZeroCopy || key == OptTxRetriesMax }

// parse finds the socket: for a server port the file named after it in
// the socket directory, for a client port options:vhost-server-path (""
// when unset); and the live options.
func (v vhostPort) parse(spec *IfaceSpec, env parseEnv, problems *[]string) string {
	if v.server {
		spec.VhostPath = filepath.Clean(env.VhostSockDir + "/" + spec.Name)
	} else {
		spec.VhostPath = spec.Options[OptVhostServerPath]
	}
	spec.ZeroCopy, spec.TxRetries = vhostOptions(spec.Name, spec.Options, problems)
	return ""
}

func (vhostPort) request(s *Switch, ifc *iface) OpenRequest { return s.vhostRequest(ifc) }

// attach opens ifc's vhost-user port. A client port without
// vhost-server-path is attached with no device, as OVS leaves such a port
// unconfigured: it gets an OpenFlow number, shows link_state down and no
// error, and runs once the path is set.
func (v vhostPort) attach(s *Switch, ifc *iface) bool {
	name := ifc.spec.Name
	if v.server && strings.ContainsAny(name, `/\`) {
		// netdev_dpdk_vhost_construct's check and text.
		s.log.Errorf("\"%s\" is not a valid name for a vhost-user port. A valid name must not include '/' or '\\'", name)
		s.fail(ifc, StateFailed, fmt.Sprintf("could not open network device %s (%s)", name, Strerror(syscall.EINVAL)))
		return false
	}
	if ifc.spec.VhostPath == "" {
		if ifc.err == "" && ifc.state != StateAttached {
			s.log.Warnf("%s: %s port has no options:%s, not connecting", name, TypeVhostUserClient, OptVhostServerPath)
		}
		return true
	}
	req := s.vhostRequest(ifc)
	if !s.plug(ifc, req, nil) {
		return false
	}
	if v.server {
		// OVS's texts (netdev_dpdk_vhost_construct,
		// netdev_dpdk_vhost_client_reconfigure).
		s.log.Infof("Socket %s created for vhost-user port %s", req.SocketPath, name)
	} else {
		s.log.Infof("vHost User device '%s' created in 'client' mode, using client socket '%s'", name, req.SocketPath)
	}
	if ifc.txRetries != vhostuser.DefaultTxRetries {
		s.log.Infof("Max Tx retries for vhost device '%s' set to %d", name, ifc.txRetries)
	}
	return true
}

func (vhostPort) apply(s *Switch, ifc *iface, _ bool) {
	if ifc.dev != nil && !s.reopenForOffloads(ifc) {
		s.applyVhostOptions(ifc)
	}
}

func (vhostPort) refresh(_ *Switch, ifc *iface)      { ifc.refreshVhost() }
func (vhostPort) status(ifc *iface, st *IfaceStatus) { ifc.vhostStatus(st) }

// netdevType shows the queues as netdev-dpdk's get_config does.
func (vhostPort) netdevType(ifc *iface) string {
	rxq, txq := "1", "1"
	if vp, ok := ifc.dev.(VhostPort); ok {
		st := vp.Status()
		if n := st["n_rxq"]; n != "" && n != "0" {
			rxq = n
		}
		if n := st["n_txq"]; n != "" && n != "0" {
			txq = n
		}
	}
	return fmt.Sprintf("%s: configured_rx_queues=%s, configured_tx_queues=%s, mtu=%d, requested_rx_queues=%s, requested_tx_queues=%s",
		ifc.spec.Type, rxq, txq, ifc.vhostMTU(), rxq, txq)
}

// applyVhostOptions applies dq-zero-copy and tx-retries-max to an attached
// vhost-user port in place. Caller holds mu.
func (s *Switch) applyVhostOptions(ifc *iface) {
	vp, ok := ifc.dev.(VhostPort)
	if !ok {
		return
	}
	zc, retries := ifc.spec.ZeroCopy, ifc.spec.TxRetries
	if zc != ifc.zeroCopy {
		vp.SetZeroCopy(zc)
		ifc.zeroCopy = zc
		s.log.Infof("%s: dequeue zero copy %s", ifc.spec.Name, onOff(zc))
	}
	if retries != ifc.txRetries {
		if err := vp.SetTxRetriesMax(retries); err != nil {
			s.log.Warnf("%s: setting tx-retries-max to %d failed: %v", ifc.spec.Name, retries, err)
			return
		}
		ifc.txRetries = retries
		s.log.Infof("Max Tx retries for vhost device '%s' set to %d", ifc.spec.Name, retries)
	}
}

// refreshVhost reads a vhost-user port's counters and link state. Caller
// holds mu.
func (ifc *iface) refreshVhost() {
	vp, ok := ifc.dev.(VhostPort)
	if !ok {
		return
	}
	ifc.vhostCtr = vp.Counters()
	ifc.noteRunning(vp.Running())
}

// noteRunning records the link state seen, counting link resets (up to
// down). Caller holds mu.
func (ifc *iface) noteRunning(up bool) {
	if ifc.vhostUp && !up {
		ifc.linkResets++
	}
	ifc.vhostUp = up
}

// vhostStatus fills st for an attached vhost-user interface (and notes
// the link state, so that a short outage between two Refreshes still
// counts as a link reset): the port's
// own status keys (mode, socket, status, features, num_of_vrings,
// vring_N_size, n_rxq, n_txq, dq-zero-copy...), the statistics with OVS's
// ovs_tx_retries and ovs_tx_failure_drops and govs' dq_zero_copy_packets
// and dq_zero_copy_copied, admin_state up and link_state
// up while the front-end runs a queue.
func (ifc *iface) vhostStatus(st *IfaceStatus) {
	vp, ok := ifc.dev.(VhostPort)
	if !ok {
		// A client port without a path: down, no counters.
		st.Link = &LinkStatus{AdminUp: true, HasIfindex: true, LinkResets: ifc.linkResets}
		return
	}
	st.Stats = statsColumn(ifc.stats)
	st.Stats["ovs_tx_retries"] = int(ifc.vhostCtr.TxRetries)
	st.Stats["ovs_tx_failure_drops"] = int(ifc.vhostCtr.TxRingFullDrops)
	// govs' own: frames forwarded from guest memory (dq-zero-copy) and
	// frames copied in that mode for want of a free slot or a frame in
	// one piece.
	st.Stats["dq_zero_copy_packets"] = int(ifc.vhostCtr.ZeroCopyFrames)
	st.Stats["dq_zero_copy_copied"] = int(ifc.vhostCtr.ZeroCopyCopied)
	st.Status = maps.Clone(vp.Status())
	// OVS writes ifindex 0 for devices without one (bridge.c
	// iface_refresh_status), and link_resets.
	ifc.noteRunning(vp.Running())
	st.Link = &LinkStatus{AdminUp: true, LinkUp: ifc.vhostUp, HasIfindex: true, LinkResets: ifc.linkResets, MTU: ifc.vhostMTU()}
}

// vhostMTU is the MTU OVS-DPDK shows for a vhost-user port: mtu_request,
// else 1500, while a guest runs it; 0 (shown as empty) while none does.
// govs needs no MTU of its own on the port (its buffers take 64 KiB).
func (ifc *iface) vhostMTU() int {
	switch {
	case !ifc.vhostUp:
		return 0
	case ifc.spec.MTURequest > 0:
		return ifc.spec.MTURequest
	}
	return 1500
}
