package connmgr

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Switch description (OFPST_DESC), as Debian's ovs-vswitchd 3.1 reports
// it: govs answers for the version it implements (ovs-vswitchd --version).
var desc = ofp.Desc{Manufacturer: "Nicira, Inc.", Hardware: "Open vSwitch", Software: "3.1.0", Serial: "None", Datapath: "None"}

// NTables is how many flow tables a bridge reports, as OVS (table 255 is
// reserved for "all tables").
const NTables = 254

// Capabilities are OVS's netdev bridge's (ofp_capabilities) per version.
var capabilities = map[ofp.Version]uint32{
	ofp.V10: 0xc7,  // FLOW_STATS TABLE_STATS PORT_STATS QUEUE_STATS ARP_MATCH_IP
	ofp.V11: 0xcf,  // ... GROUP_STATS
	ofp.V12: 0x4f,  // FLOW_STATS TABLE_STATS PORT_STATS GROUP_STATS QUEUE_STATS
	ofp.V13: 0x4f,  //
	ofp.V14: 0x24f, // ... BUNDLES
	ofp.V15: 0x24f,
}

// actions10 is OpenFlow 1.0's supported actions bitmap, as OVS's.
const actions10 = 0xfff

// maxEntries is a table's max_entries in OpenFlow 1.0 table statistics,
// as OVS's; wildcards10 is OFPFW10_ALL.
const (
	maxEntries  = 1000000
	wildcards10 = 0x3fffff
)

// conn is one OpenFlow connection: a client of the management socket or
// a controller connection of a service.
type conn struct {
	m    *Manager
	nc   net.Conn
	name string
	svc  *service // nil for the management socket
	// pins limits packet-ins (Controller rate limits); nil: no limit.
	pins *pinsched
	seq  uint64 // order of creation in m
	// versions are the versions the connection may negotiate
	// (Bridge.protocols when it started).
	versions ofp.Versions
	// replied: the last message handled was answered, so the peer may
	// send its next one at once (run polls for it a moment).
	replied atomic.Bool

	// Owned by the connection's goroutine.
	flowFormat uint32
	refused    map[string]bool // message names logged as refused

	// mu guards the fields below, which asynchronous senders read.
	mu           sync.Mutex
	version      ofp.Version // negotiated; 0 before
	config       ofp.Config
	pinFormat    uint32
	async        *ofp.AsyncConfig // nil: the version's default
	controllerID uint16
	err          error // why the connection closed

	wmu  sync.Mutex    // serialises writes to nc
	raw  *rawIO        // reads and writes nc; nil: nc.Read, nc.Write
	role atomic.Uint32 // ofp.Role*, changed by other connections' requests
	// lastRx is when a message last arrived (unix nanoseconds); idle is
	// set while an inactivity probe is unanswered.
	lastRx atomic.Int64
	idle   atomic.Bool
	// flowModTableID: NXT_FLOW_MOD_TABLE_ID enabled table IDs in
	// OpenFlow 1.0 flow mods' commands.
	flowModTableID bool
	// nxFormat is whether the flow format is NXM, for asynchronous
	// messages encoded in other goroutines.
	nxFormat atomic.Bool

	// bmu guards the connection's bundles (bundle.go), which the
	// expiry timer visits from its own goroutine.
	bmu            sync.Mutex
	bundles        map[uint32]*bundle
	bundleTimer    *time.Timer // nil while there are no bundles
	bundlesStopped bool        // the connection closed

	// monMu guards monitors, the connection's flow monitors (monitor.go),
	// which flow changes visit from other goroutines.
	monMu    sync.Mutex
	monitors monitorSet
}

// defaultMissSendLen is OFP_DEFAULT_MISS_SEND_LEN, a primary controller's
// initial miss_send_len; service connections start at 0 (no async
// messages until they ask), as OVS's ofconn_flush.
const defaultMissSendLen = 128

func newConn(m *Manager, nc net.Conn, name string, svc *service) *conn {
	c := &conn{m: m, nc: nc, name: name, svc: svc, refused: map[string]bool{}, flowFormat: ofp.FlowFormatOpenFlow10,
		seq: m.seq.Add(1), versions: m.allowedVersions(), raw: newRawIO(nc)}
	if c.primary() {
		c.config.MissSendLen = defaultMissSendLen
	}
	if svc != nil && svc.cfg.RateLimit > 0 {
		c.pins = newPinsched(svc.cfg.RateLimit, svc.cfg.BurstLimit, func(b []byte) error { return c.send(b) })
	}
	c.role.Store(ofp.RoleEqual)
	c.lastRx.Store(time.Now().UnixNano())
	return c
}

// primary reports whether c is a primary controller's connection (the
// kind fail_mode and slave restrictions apply to).
func (c *conn) primary() bool { return c.svc != nil && c.svc.cfg.Primary }

// negotiated returns the connection's version, 0 before the handshake.
func (c *conn) negotiated() ofp.Version {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// closeWith records why the connection ends, the first reason winning.
func (c *conn) closeWith(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

func (c *conn) closeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return io.EOF
	}
	return c.err
}

// rconnState is the connection's state as OVS's rconn names it.
func (c *conn) rconnState() string {
	if c.idle.Load() {
		return stateIdle
	}
	return stateActive
}

// probe sends an echo request after interval without a message from the
// peer and closes the connection if another interval passes without one,
// as OVS's rconn, until stop is closed.
func (c *conn) probe(interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(min(interval/4, time.Second))
	defer tick.Stop()
	var sentAt time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			idleFor := now.Sub(time.Unix(0, c.lastRx.Load()))
			if !c.idle.Load() {
				v := c.negotiated()
				if idleFor < interval || v == 0 {
					continue
				}
				c.m.rlog.Debugf("%s: idle %d seconds, sending inactivity probe", c.name, int(idleFor/time.Second))
				c.idle.Store(true)
				sentAt = now
				c.m.changed()
				if c.send(ofp.EncodeEchoRequest(v, 0)) != nil {
					return
				}
				continue
			}
			if now.Sub(sentAt) >= interval {
				c.m.rlog.Errorf("%s: no response to inactivity probe after %d seconds, disconnecting", c.name, int(interval/time.Second))
				c.closeWith(syscall.ETIMEDOUT)
				c.nc.Close()
				return
			}
		}
	}
}

// run serves the connection until it closes: messages are read, decoded
// and answered strictly in order.
func (c *conn) run() {
	defer c.nc.Close()
	defer c.stopBundles()
	defer c.dropMonitors()
	if err := c.send(ofp.EncodeHello(c.versions, 0)); err != nil {
		c.closeWith(err)
		return
	}
	// Messages are at most ofp.MaxLen bytes: after compaction a partial
	// one always fits in the rest of the buffer.
	buf := make([]byte, 2*ofp.MaxLen)
	start, end := 0, 0
	var rd io.Reader = c.nc
	if c.raw != nil {
		rd = c.raw
	}
	for {
		var n int
		var err error
		if c.raw != nil && c.replied.Swap(false) {
			n, err = c.raw.readSpin(buf[end:])
		} else {
			n, err = rd.Read(buf[end:])
		}
		end += n
		for {
			msg, _, ferr := ofp.Split(buf[start:end])
			if ferr != nil {
				c.m.log.Warnf("%s: %v, closing connection", c.name, ferr)
				c.closeWith(syscall.EPROTO)
				return
			}
			if msg == nil {
				break
			}
			start += len(msg)
			if c.svc != nil {
				c.svc.copyToSnoopers(msg)
			}
			c.lastRx.Store(time.Now().UnixNano())
			if c.idle.Swap(false) {
				c.m.changed()
			}
			if !c.handle(msg) {
				return
			}
		}
		if len(buf)-end < ofp.MaxLen {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.m.log.Debugf("%s: %v", c.name, err)
			}
			c.closeWith(err)
			return
		}
	}
}

func (c *conn) send(msgs ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, b := range msgs {
		if c.svc != nil {
			c.svc.copyToSnoopers(b)
		}
		var err error
		if c.raw != nil {
			err = c.raw.write(b)
		} else {
			_, err = c.nc.Write(b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// handle processes one message; false closes the connection.
func (c *conn) handle(b []byte) bool {
	h := ofp.ParseHeader(b)
	if ofp.IsBundleAdd(h, b) {
		// Kept until the commit, while b's buffer takes the next
		// messages: the bundled message (a packet-out's data, the
		// bytes an error echoes) must not refer to it.
		b = slices.Clone(b)
	}
	m, err := ofp.Decode(b)
	if c.negotiated() == 0 {
		return c.handshake(h, m, err)
	}
	if c.primary() && c.role.Load() == ofp.RoleSlave && ofp.IsWriteRequest(h, b) {
		// OVS's reject_slave_controller, before anything else.
		return c.refuse(h, &ofp.Error{Errno: ofp.IsSlave, Detail: "slave connection"}, b)
	}
	var oerr *ofp.Error
	if errors.As(err, &oerr) {
		return c.refuse(h, c.tunMetadataError(oerr), b)
	}
	if err != nil {
		c.m.log.Warnf("%s: %v", c.name, err)
		return false
	}
	switch m := m.(type) {
	case *ofp.Hello, *ofp.EchoReply:
		return true
	case *ofp.ErrorMsg:
		c.m.log.Infof("%s: received OFPT_ERROR type %d code %d", c.name, m.Type, m.Code)
		return true
	case *ofp.EchoRequest:
		// Echoes are answered in any version (OVS's vconn does too).
		return c.send(ofp.EncodeEchoReply(h.Version, h.Xid, m.Data)) == nil
	}
	if v := c.negotiated(); h.Version != v {
		return c.refuse(h, &ofp.Error{Errno: ofp.BadVersion, Detail: fmt.Sprintf("received %s on a %s connection", h.Version, v)}, b)
	}
	replies, oerr := c.answerRaw(m, b)
	if oerr != nil {
		return c.refuse(h, oerr, b)
	}
	if len(replies) > 0 {
		c.replied.Store(true)
	}
	return c.send(replies...) == nil
}

// handshake expects the peer's HELLO and settles the version.
func (c *conn) handshake(h ofp.Header, m ofp.Message, err error) bool {
	v := negotiate(c.m.log, c.name, c.versions, h, m, err, func(b []byte) { c.send(b) })
	if v == 0 {
		c.closeWith(syscall.EPROTO)
		return false
	}
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
	c.m.log.Debugf("%s: negotiated %s", c.name, v)
	c.m.updateMiss()
	c.m.changed()
	return true
}

// negotiate settles the version of connection name, which allows
// versions, from the peer's first message (h, decoded as m and err): the
// highest both sides allow, as OVS's vconn. It returns 0, having logged
// why and sent the peer OFPHFC_INCOMPATIBLE where OVS does, if that
// message is no HELLO or the two share no version.
func negotiate(log Logger, name string, versions ofp.Versions, h ofp.Header, m ofp.Message, err error, send func([]byte)) ofp.Version {
	hello, ok := m.(*ofp.Hello)
	if err != nil || !ok {
		log.Warnf("%s: received message type %d while expecting hello, closing", name, h.Type)
		return 0
	}
	common := hello.Versions & versions
	if common == 0 {
		log.Warnf("%s: version negotiation failed (we support %s, peer supports %s)", name,
			formatVersions(versions), formatVersions(hello.Versions))
		text := fmt.Sprintf("We support %s, you support %s, no common versions.", versionNames(versions), versionNames(hello.Versions))
		send(ofp.EncodeErrorData(versions.Highest(), h.Xid, ofp.HelloIncompatible, []byte(text)))
		return 0
	}
	return common.Highest()
}

// formatVersions renders a version set as OVS's
// ovs_format_version_bitmap: "version 0x01", "versions 0x01, 0x04".
func formatVersions(vs ofp.Versions) string {
	var nums []string
	for v := ofp.Version(0); v < 32; v++ {
		if vs.Has(v) {
			nums = append(nums, fmt.Sprintf("0x%02x", uint8(v)))
		}
	}
	if len(nums) == 1 {
		return "version " + nums[0]
	}
	return "versions " + strings.Join(nums, ", ")
}

// versionNames renders a version set as OVS's
// ovs_format_version_bitmap_names: "OpenFlow10, OpenFlow13".
func versionNames(vs ofp.Versions) string {
	var names []string
	for v := ofp.Version(0); v < 32; v++ {
		if vs.Has(v) {
			names = append(names, v.String())
		}
	}
	return strings.Join(names, ", ")
}

// refuse answers a message with OFPT_ERROR, logging the first refusal of
// each kind on the connection.
func (c *conn) refuse(h ofp.Header, e *ofp.Error, b []byte) bool {
	key := e.Name + "/" + e.Errno.String()
	if !c.refused[key] {
		c.refused[key] = true
		c.m.log.Infof("%s: refused %v", c.name, e)
	}
	v := h.Version
	if v < ofp.MinVersion || v > ofp.MaxVersion {
		v = c.negotiated()
	}
	if e.EchoAll {
		return c.send(ofp.EncodeErrorData(v, h.Xid, e.Errno, b)) == nil
	}
	return c.send(ofp.EncodeError(v, h.Xid, e.Errno, b)) == nil
}

// tunMetadataError gives a refused tun_metadata field OVS's error when
// the bridge's option map does not map it (NXFMFC_INVALID_TLV_FIELD);
// a mapped one keeps the decoder's (flows do not take them yet).
func (c *conn) tunMetadataError(e *ofp.Error) *ofp.Error {
	idx, ok := e.TunMetadata()
	if !ok {
		return e
	}
	if tm, isMapper := c.m.src.(TLVMapper); isMapper && tm.TLVTable().Loc(idx) != nil {
		return e
	}
	r := *e
	r.Errno = ofp.InvalidTLVField
	return &r
}

// answerRaw is answer for the requests that need their bytes too.
func (c *conn) answerRaw(m ofp.Message, b []byte) ([][]byte, *ofp.Error) {
	switch m := m.(type) {
	case *ofp.BundleControl:
		return c.bundleControl(m, b)
	case *ofp.BundleAdd:
		return nil, c.bundleAdd(m, b)
	}
	return c.answer(m)
}

// answer returns the replies to a decoded request, or the error to refuse
// it with.
func (c *conn) answer(m ofp.Message) ([][]byte, *ofp.Error) {
	v := c.negotiated()
	switch m := m.(type) {
	case *ofp.FeaturesRequest:
		f := &ofp.Features{DatapathID: c.m.src.DatapathID(), NTables: NTables, Capabilities: capabilities[v]}
		if v == ofp.V10 {
			f.Actions = actions10
		}
		if v <= ofp.V12 {
			f.Ports = c.m.src.Ports()
		}
		return [][]byte{ofp.EncodeFeaturesReply(v, m.Xid, f)}, nil
	case *ofp.GetConfigRequest:
		c.mu.Lock()
		cfg := c.config
		c.mu.Unlock()
		// The fragment handling mode is the switch's, the rest the
		// connection's.
		cfg.Flags &^= ofp.FragMask
		if fh, ok := c.m.src.(FragHandler); ok {
			cfg.Flags |= uint16(fh.FragHandling())
		}
		return [][]byte{ofp.EncodeGetConfigReply(v, m.Xid, cfg)}, nil
	case *ofp.SetConfig:
		// OVS's handle_set_config: any connection but a slave
		// controller's sets the switch's fragment handling mode.
		if fh, ok := c.m.src.(FragHandler); ok && !(c.primary() && c.role.Load() == ofp.RoleSlave) {
			if next := uint8(m.Flags & ofp.FragMask); fh.FragHandling() != next {
				fh.SetFragHandling(next)
			}
		}
		c.mu.Lock()
		c.config = m.Config
		c.mu.Unlock()
		return nil, nil
	case *ofp.BarrierRequest:
		// Every earlier request has been answered; flow changes must be
		// in effect too.
		c.m.src.Barrier()
		return [][]byte{ofp.EncodeBarrierReply(v, m.Xid)}, nil
	case *ofp.RoleRequest:
		if m.Role > ofp.RoleSlave {
			return nil, &ofp.Error{Errno: ofp.RoleBadRole, Name: "OFPT_ROLE_REQUEST", Detail: fmt.Sprintf("role %d", m.Role)}
		}
		if m.NX {
			// NXT_ROLE_REQUEST carries no generation ID.
			c.m.setRoleNX(c, m.Role)
			return [][]byte{ofp.EncodeNXRoleReply(v, m.Xid, c.role.Load())}, nil
		}
		if err := c.m.setRole(c, m.Role, m.GenerationID); err != nil {
			return nil, err
		}
		return [][]byte{ofp.EncodeRoleReply(v, m.Xid, c.role.Load(), c.m.generation())}, nil
	case *ofp.SetAsync:
		c.mu.Lock()
		cur := c.asyncConfigLocked()
		cfg := m.Apply(cur)
		c.async = &cfg
		c.mu.Unlock()
		return nil, nil
	case *ofp.GetAsyncRequest:
		c.mu.Lock()
		cfg := c.asyncConfigLocked()
		c.mu.Unlock()
		return [][]byte{ofp.EncodeGetAsyncReply(v, m.Xid, cfg)}, nil
	case *ofp.SetControllerID:
		c.mu.Lock()
		c.controllerID = m.ID
		c.mu.Unlock()
		return nil, nil
	case *ofp.SetFlowFormat:
		if m.Format != ofp.FlowFormatOpenFlow10 && m.Format != ofp.FlowFormatNXM {
			return nil, &ofp.Error{Errno: ofp.EPerm, Name: "NXT_SET_FLOW_FORMAT", Detail: fmt.Sprintf("format %d", m.Format)}
		}
		c.flowFormat = m.Format
		c.nxFormat.Store(m.Format == ofp.FlowFormatNXM)
		return nil, nil
	case *ofp.FlowModTableID:
		c.flowModTableID = m.Enable
		return nil, nil
	case *ofp.FlowMod:
		if v == ofp.V10 && !c.flowModTableID {
			// Without NXT_FLOW_MOD_TABLE_ID the command's high byte is
			// not a table: every table (OVS's 0xff), table 0 for an add.
			m.Table = ofp.TableAll
		}
		if c.role.Load() == ofp.RoleSlave {
			return nil, &ofp.Error{Errno: ofp.IsSlave, Name: "OFPT_FLOW_MOD"}
		}
		m.Origin = c
		if err := c.m.src.FlowMod(m); err != nil {
			if err.Name == "" {
				err.Name = "OFPT_FLOW_MOD"
			}
			// OVS echoes a refused flow mod whole.
			err.EchoAll = true
			return nil, err
		}
		// Nothing refers to it now (Source.FlowMod): the next flow
		// mod's decoding reuses it rather than allocate a kilobyte.
		ofp.ReleaseFlowMod(m)
		return nil, nil
	case *ofp.TLVTableMod:
		tm, ok := c.m.src.(TLVMapper)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadSubtype, Name: "NXT_TLV_TABLE_MOD", Detail: "no option map"}
		}
		return nil, tm.TLVTableMod(m)
	case *ofp.TLVTableRequest:
		tm, ok := c.m.src.(TLVMapper)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadSubtype, Name: "NXT_TLV_TABLE_REQUEST", Detail: "no option map"}
		}
		return [][]byte{ofp.EncodeTLVTableReply(v, m.Xid, tm.TLVTable())}, nil
	case *ofp.CTFlushZone:
		f, ok := c.m.src.(CTFlusher)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadSubtype, Name: "NXT_CT_FLUSH_ZONE", Detail: "no connection tracker"}
		}
		f.FlushConntrackZone(m.Zone)
		return nil, nil
	case *ofp.CTFlush:
		f, ok := c.m.src.(CTFlusher)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadSubtype, Name: "NXT_CT_FLUSH", Detail: "no connection tracker"}
		}
		f.FlushConntrack(m)
		return nil, nil
	case *ofp.SetPacketInFormat:
		if m.Format > 2 {
			return nil, &ofp.Error{Errno: ofp.EPerm, Name: "NXT_SET_PACKET_IN_FORMAT", Detail: fmt.Sprintf("format %d", m.Format)}
		}
		c.mu.Lock()
		c.pinFormat = m.Format
		c.mu.Unlock()
		return nil, nil
	case *ofp.StatsRequest:
		return c.stats(m)
	case *ofp.QueueGetConfigRequest:
		qs, err := c.queueList(v, m.Port, ofp.QueueAll)
		if err != nil {
			err.Name = "OFPT_QUEUE_GET_CONFIG_REQUEST"
			return nil, err
		}
		return [][]byte{ofp.EncodeQueueGetConfigReply(v, m.Xid, m.Port, qs)}, nil
	case *ofp.FlowMonitorRequest:
		return c.flowMonitorRequest(m)
	case *ofp.FlowMonitorCancel:
		return nil, c.flowMonitorCancel(m.ID)
	case *ofp.MeterMod:
		return c.meterMod(m)
	case *ofp.GroupMod:
		return nil, c.groupMod(m)
	case *ofp.PacketOut:
		po, ok := c.m.src.(PacketOuter)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadType, Name: "OFPT_PACKET_OUT", Detail: "not supported"}
		}
		if err := po.PacketOut(m); err != nil {
			// As for flow mods, OVS echoes a refused packet-out whole.
			err.EchoAll = true
			return nil, err
		}
		return nil, nil
	case *ofp.Resume:
		po, ok := c.m.src.(PacketOuter)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadSubtype, Name: "NXT_RESUME", Detail: "not supported"}
		}
		return nil, po.Resume(m)
	case *ofp.TableMod:
		tc, ok := c.m.src.(TableConfigurer)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadType, Name: "OFPT_TABLE_MOD", Detail: "not supported"}
		}
		return nil, tc.TableMod(m)
	case *ofp.PortMod:
		pm, ok := c.m.src.(PortModifier)
		if !ok {
			return nil, &ofp.Error{Errno: ofp.BadType, Name: "OFPT_PORT_MOD", Detail: "not supported"}
		}
		if err := pm.ModifyPort(m); err != nil {
			return nil, err
		}
		// Every connection that wants it hears of the change.
		c.m.SyncPorts()
		return nil, nil
	}
	return nil, &ofp.Error{Errno: ofp.BadType, Detail: fmt.Sprintf("%T not handled", m)}
}

func (c *conn) stats(m *ofp.StatsRequest) ([][]byte, *ofp.Error) {
	v := c.negotiated()
	switch m.Kind {
	case ofp.StatsDesc:
		return ofp.EncodeDescReply(v, m.Xid, &desc), nil
	case ofp.StatsPortDesc:
		ports := c.m.src.Ports()
		if m.Port != ofp.PortAny {
			ports = slices.DeleteFunc(ports, func(p ofp.Port) bool { return p.No != m.Port })
		}
		return ofp.EncodePortDescReply(v, m.Xid, ports), nil
	case ofp.StatsPort:
		stats := c.m.src.PortStats()
		if m.Port != ofp.PortAny {
			stats = slices.DeleteFunc(stats, func(s ofp.PortStats) bool { return s.No != m.Port })
		}
		return ofp.EncodePortStatsReply(v, m.Xid, stats), nil
	case ofp.StatsTable:
		tables := make([]ofp.TableStats, NTables)
		for i := range tables {
			tables[i] = ofp.TableStats{ID: uint8(i), MaxEntries: maxEntries, Wildcards10: wildcards10}
			if tc, ok := c.m.src.(TableCounter); ok {
				tables[i].Lookup, tables[i].Matched = tc.TableCounts(uint8(i))
			}
			if tc, ok := c.m.src.(TableConfigurer); ok {
				tables[i].Miss = tc.TableMiss(uint8(i))
			}
		}
		c.eachFlow(func(f *ofp.FlowStats) {
			if int(f.Table) < len(tables) {
				tables[f.Table].Active++
			}
		})
		return ofp.EncodeTableStatsReply(v, m.Xid, tables), nil
	case ofp.StatsFlow:
		if err := c.resolveTunMD(&m.Match); err != nil {
			return nil, err
		}
		r := ofp.NewFlowStatsReply(v, m.Xid, m.NX)
		c.eachFlow(func(f *ofp.FlowStats) {
			if flowSelected(m, f) {
				r.Add(f)
			}
		})
		return r.Done(), nil
	case ofp.StatsAggregate:
		if err := c.resolveTunMD(&m.Match); err != nil {
			return nil, err
		}
		var packets, bytes uint64
		var n uint32
		c.eachFlow(func(f *ofp.FlowStats) {
			if flowSelected(m, f) {
				packets += f.Packets
				bytes += f.Bytes
				n++
			}
		})
		return ofp.EncodeAggregateReply(v, m.Xid, m.NX, packets, bytes, n), nil
	case ofp.StatsTableFeatures:
		tables := make([]ofp.TableFeatures, NTables)
		for i := range tables {
			tables[i] = ofp.TableFeatures{ID: uint8(i), MaxEntries: maxEntries}
			for j := i + 1; j < NTables; j++ {
				tables[i].Next = append(tables[i].Next, uint8(j))
			}
		}
		return ofp.EncodeTableFeaturesReply(v, m.Xid, tables), nil
	case ofp.StatsMeter, ofp.StatsMeterConfig, ofp.StatsMeterFeatures:
		return c.meterStats(m)
	case ofp.StatsGroup, ofp.StatsGroupDesc, ofp.StatsGroupFeatures:
		return c.groupStats(m), nil
	case ofp.StatsQueue:
		return c.queueStats(m)
	case ofp.StatsTableDesc:
		var tables []ofp.TableDesc
		if tc, ok := c.m.src.(TableConfigurer); ok {
			tables = tc.TableDescs()
		}
		return ofp.EncodeTableDescReply(v, m.Xid, tables), nil
	case ofp.StatsQueueDesc:
		qs, err := c.queueList(v, m.Port, m.Queue)
		if err != nil {
			return nil, err
		}
		return ofp.EncodeQueueDescReply(v, m.Xid, qs), nil
	}
	return nil, &ofp.Error{Errno: ofp.BadStat, Detail: fmt.Sprintf("statistics type %d not handled", m.Kind)}
}

// QueueSource is a Source whose ports may have QoS queues.
type QueueSource interface {
	// Queues reports port no's queues with their counters (every
	// port's for ofp.PortAny), false if the bridge has no such port.
	Queues(no uint32) ([]ofp.QueueStats, bool)
}

// queueStats answers a QUEUE statistics request as OVS's
// handle_queue_stats_request: OFPQOFC_BAD_PORT for a port the bridge
// does not have, OFPQOFC_BAD_QUEUE for a queue no port asked for has
// (OpenFlow 1.0 says all ports with OFPP_ALL).
func (c *conn) queueStats(m *ofp.StatsRequest) ([][]byte, *ofp.Error) {
	port := m.Port
	if m.Version == ofp.V10 && port == ofp.PortAll {
		port = ofp.PortAny
	}
	// A statistics request may name any port (OpenFlow 1.4's rules).
	qs, err := c.queueList(ofp.V14, port, m.Queue)
	if err != nil {
		return nil, err
	}
	return ofp.EncodeQueueStatsReply(m.Version, m.Xid, qs), nil
}

// queueList lists the queues of port (every port's for ofp.PortAny) and
// id queue (ofp.QueueAll: every one) for OFPT_QUEUE_GET_CONFIG_REQUEST
// and OFPMP_QUEUE_DESC, as OVS's handle_queue_get_config_request: before
// OpenFlow 1.4 a port must be a physical port's number (or ANY, from
// 1.1), else OFPQOFC_BAD_PORT, as is a port the bridge lacks; a queue no
// port asked for has is OFPQOFC_BAD_QUEUE.
func (c *conn) queueList(v ofp.Version, port, queue uint32) ([]ofp.QueueStats, *ofp.Error) {
	badPort := &ofp.Error{Errno: ofp.QueueBadPort, Detail: fmt.Sprintf("no port %d", port)}
	if v < ofp.V14 && port >= ofp.PortMax && (v == ofp.V10 || port != ofp.PortAny) {
		return nil, badPort
	}
	var qs []ofp.QueueStats
	ok := port == ofp.PortAny
	if src, has := c.m.src.(QueueSource); has {
		qs, ok = src.Queues(port)
	}
	if !ok {
		return nil, badPort
	}
	if queue != ofp.QueueAll {
		qs = slices.DeleteFunc(qs, func(q ofp.QueueStats) bool { return q.Queue != queue })
		if len(qs) == 0 {
			return nil, &ofp.Error{Errno: ofp.QueueBadQueue, Detail: fmt.Sprintf("no queue %d", queue)}
		}
	}
	return qs, nil
}

// resolveTunMD places a statistics request's tun_metadata matches
// through the bridge's option map, as its flows' are.
func (c *conn) resolveTunMD(m *ofp.Match) *ofp.Error {
	if len(m.TunMD) == 0 {
		return nil
	}
	tm, ok := c.m.src.(TLVMapper)
	if !ok {
		return &ofp.Error{Errno: ofp.InvalidTLVField, Detail: "no Geneve option map"}
	}
	return m.ResolveTunMD(tm.TLVTable())
}

// flowSelected applies a flow statistics request's filters as OVS's
// collect_rules_loose: the table, the cookie under its mask, an output
// port or group the flow must output to, and a match the flow's must be
// at least as specific as.
func flowSelected(m *ofp.StatsRequest, f *ofp.FlowStats) bool {
	if m.Table != ofp.TableAll && m.Table != f.Table {
		return false
	}
	if (f.Cookie^m.Cookie)&m.CookieMask != 0 {
		return false
	}
	if m.OutPort != ofp.PortAny && !slices.Contains(ofp.Outputs(f.Actions), m.OutPort) {
		return false
	}
	if m.OutGroup != ofp.GroupAny && !slices.Contains(ofp.Groups(f.Actions), m.OutGroup) {
		return false
	}
	return m.Match.Includes(&f.Match)
}

// FlowWalker is a Source that can visit its flows one at a time, as Flows
// returns them, without a slice of all (a FlowStats is 2 KB); fn must not
// keep f.
type FlowWalker interface {
	EachFlow(fn func(f *ofp.FlowStats))
}

// eachFlow calls fn with each flow of the source, as FlowWalker.
func (c *conn) eachFlow(fn func(f *ofp.FlowStats)) {
	if w, ok := c.m.src.(FlowWalker); ok {
		w.EachFlow(fn)
		return
	}
	flows := c.m.src.Flows()
	for i := range flows {
		fn(&flows[i])
	}
}
