package connmgr

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"

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
	ofp.V14: 0x24f, // ... BUNDLES (refused for now: OFPBRC_BAD_TYPE)
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

// conn is one client of the management socket.
type conn struct {
	m    *Manager
	nc   *net.UnixConn
	name string

	// Owned by the connection's goroutine.
	version    ofp.Version // negotiated; 0 before
	config     ofp.Config
	flowFormat uint32
	pinFormat  uint32
	refused    map[string]bool // message names logged as refused

	role atomic.Uint32 // ofp.Role*, changed by other connections' requests
	// flowModTableID: NXT_FLOW_MOD_TABLE_ID enabled table IDs in
	// OpenFlow 1.0 flow mods' commands.
	flowModTableID bool
	// negotiated is version once settled and nxFormat whether the flow
	// format is NXM, for asynchronous messages sent from other goroutines.
	negotiated atomic.Uint32
	nxFormat   atomic.Bool
	sendMu     sync.Mutex // serializes writes
}

func newConn(m *Manager, nc *net.UnixConn, name string) *conn {
	c := &conn{m: m, nc: nc, name: name, refused: map[string]bool{}, flowFormat: ofp.FlowFormatOpenFlow10}
	c.role.Store(ofp.RoleEqual)
	return c
}

// run serves the connection until it closes: messages are read, decoded
// and answered strictly in order.
func (c *conn) run() {
	defer c.nc.Close()
	if err := c.send(ofp.EncodeHello(ofp.AllVersions, 0)); err != nil {
		return
	}
	// Messages are at most ofp.MaxLen bytes: after compaction a partial
	// one always fits in the rest of the buffer.
	buf := make([]byte, 2*ofp.MaxLen)
	start, end := 0, 0
	for {
		n, err := c.nc.Read(buf[end:])
		end += n
		for {
			msg, _, ferr := ofp.Split(buf[start:end])
			if ferr != nil {
				c.m.log.Warnf("%s: %v, closing connection", c.name, ferr)
				return
			}
			if msg == nil {
				break
			}
			start += len(msg)
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
			return
		}
	}
}

func (c *conn) send(msgs ...[]byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	for _, b := range msgs {
		if _, err := c.nc.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// handle processes one message; false closes the connection.
func (c *conn) handle(b []byte) bool {
	h := ofp.ParseHeader(b)
	m, err := ofp.Decode(b)
	if c.version == 0 {
		return c.handshake(h, m, err)
	}
	var oerr *ofp.Error
	if errors.As(err, &oerr) {
		return c.refuse(h, oerr, b)
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
	if h.Version != c.version {
		return c.refuse(h, &ofp.Error{Errno: ofp.BadVersion, Detail: fmt.Sprintf("received %s on a %s connection", h.Version, c.version)}, b)
	}
	replies, oerr := c.answer(m)
	if oerr != nil {
		return c.refuse(h, oerr, b)
	}
	return c.send(replies...) == nil
}

// handshake expects the client's HELLO and settles the version: the
// highest both sides speak, as OVS's vconn.
func (c *conn) handshake(h ofp.Header, m ofp.Message, err error) bool {
	hello, ok := m.(*ofp.Hello)
	if err != nil || !ok {
		c.m.log.Warnf("%s: received message type %d while expecting hello, closing", c.name, h.Type)
		return false
	}
	common := hello.Versions & ofp.AllVersions
	if common == 0 {
		text := fmt.Sprintf("We support versions 0x%02x to 0x%02x inclusive but you support no later than version 0x%02x.",
			uint8(ofp.MinVersion), uint8(ofp.MaxVersion), uint8(h.Version))
		if hello.Versions != ofp.Versions(uint32(1)<<(h.Version+1)-1)&^1 {
			text = fmt.Sprintf("We support versions 0x%02x to 0x%02x inclusive but you don't support any of them.",
				uint8(ofp.MinVersion), uint8(ofp.MaxVersion))
		}
		c.m.log.Warnf("%s: version negotiation failed: %s", c.name, text)
		v := min(max(h.Version, ofp.MinVersion), ofp.MaxVersion)
		c.send(ofp.EncodeErrorData(v, h.Xid, ofp.HelloIncompatible, []byte(text)))
		return false
	}
	c.version = common.Highest()
	c.negotiated.Store(uint32(c.version))
	c.m.log.Debugf("%s: negotiated %s", c.name, c.version)
	return true
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
		v = c.version
	}
	if e.EchoAll {
		return c.send(ofp.EncodeErrorData(v, h.Xid, e.Errno, b)) == nil
	}
	return c.send(ofp.EncodeError(v, h.Xid, e.Errno, b)) == nil
}

// answer returns the replies to a decoded request, or the error to refuse
// it with.
func (c *conn) answer(m ofp.Message) ([][]byte, *ofp.Error) {
	v := c.version
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
		return [][]byte{ofp.EncodeGetConfigReply(v, m.Xid, c.config)}, nil
	case *ofp.SetConfig:
		if m.Flags&ofp.FragMask != ofp.FragNormal {
			// OVS can drop fragments; govs does not yet.
			return nil, &ofp.Error{Errno: ofp.EPerm, Name: "OFPT_SET_CONFIG", Detail: "fragment handling other than \"normal\" is not supported"}
		}
		c.config = m.Config
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
		if err := c.m.setRole(c, m.Role, m.GenerationID); err != nil {
			return nil, err
		}
		return [][]byte{ofp.EncodeRoleReply(v, m.Xid, c.role.Load(), c.m.generation())}, nil
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
		if err := c.m.src.FlowMod(m); err != nil {
			if err.Name == "" {
				err.Name = "OFPT_FLOW_MOD"
			}
			// OVS echoes a refused flow mod whole.
			err.EchoAll = true
			return nil, err
		}
		return nil, nil
	case *ofp.SetPacketInFormat:
		if m.Format > 2 {
			return nil, &ofp.Error{Errno: ofp.EPerm, Name: "NXT_SET_PACKET_IN_FORMAT", Detail: fmt.Sprintf("format %d", m.Format)}
		}
		c.pinFormat = m.Format
		return nil, nil
	case *ofp.StatsRequest:
		return c.stats(m)
	}
	return nil, &ofp.Error{Errno: ofp.BadType, Detail: fmt.Sprintf("%T not handled", m)}
}

func (c *conn) stats(m *ofp.StatsRequest) ([][]byte, *ofp.Error) {
	v := c.version
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
		if !ofp.TableStatsSupported(v) {
			return nil, &ofp.Error{Errno: ofp.BadStat, Name: "OFPMP_TABLE request", Detail: fmt.Sprintf("not supported in %s", v)}
		}
		tables := make([]ofp.TableStats, NTables)
		for i := range tables {
			tables[i] = ofp.TableStats{ID: uint8(i), MaxEntries: maxEntries, Wildcards10: wildcards10}
		}
		for _, f := range c.m.src.Flows() {
			if int(f.Table) < len(tables) {
				tables[f.Table].Active++
			}
		}
		return ofp.EncodeTableStatsReply(v, m.Xid, tables), nil
	case ofp.StatsFlow:
		var flows []ofp.FlowStats
		for _, f := range c.m.src.Flows() {
			if flowSelected(m, &f) {
				if v == ofp.V11 && !f.Match.IsAll() {
					return nil, &ofp.Error{Errno: ofp.BadStat, Name: "OFPST_FLOW request", Detail: "OpenFlow 1.1 standard matches are not supported"}
				}
				flows = append(flows, f)
			}
		}
		return ofp.EncodeFlowStatsReply(v, m.Xid, m.NX, flows), nil
	case ofp.StatsAggregate:
		var packets, bytes uint64
		var n uint32
		for _, f := range c.m.src.Flows() {
			if flowSelected(m, &f) {
				packets += f.Packets
				bytes += f.Bytes
				n++
			}
		}
		return ofp.EncodeAggregateReply(v, m.Xid, m.NX, packets, bytes, n), nil
	case ofp.StatsTableFeatures:
		tables := make([]ofp.TableFeatures, NTables)
		for i := range tables {
			tables[i] = ofp.TableFeatures{ID: uint8(i), MaxEntries: maxEntries}
		}
		return ofp.EncodeTableFeaturesReply(v, m.Xid, tables), nil
	case ofp.StatsGroup, ofp.StatsGroupDesc, ofp.StatsQueue:
		// No groups and no queues exist: the lists are empty.
		return ofp.EncodeEmptyStatsReply(v, m.Xid, m.Kind), nil
	}
	return nil, &ofp.Error{Errno: ofp.BadStat, Detail: fmt.Sprintf("statistics type %d not handled", m.Kind)}
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
