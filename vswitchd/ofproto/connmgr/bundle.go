package connmgr

import (
	"sync/atomic"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Bundler is a Source that takes OpenFlow bundles (OVS's
// ofproto/bundles.c keeps them per connection; connmgr does too).
type Bundler interface {
	// CheckBundled checks a message as it is added to a bundle, as far
	// as it does not depend on the tables, and returns what the bundle
	// keeps of it for CommitBundle (m, or a form of it the Bundler
	// prepared), or the error to refuse it with.
	CheckBundled(m ofp.Message) (ofp.Message, *ofp.Error)
	// CommitBundle applies msgs (what CheckBundled returned) in order,
	// all or none, as one change of the tables; on failure it returns
	// the index of the message refused and its error.
	CommitBundle(msgs []ofp.Message) (int, *ofp.Error)
}

// DefaultBundleIdleTimeout is how long a bundle may go without being
// opened, added to or closed before the switch discards it with
// OFPBFC_TIMEOUT, unless other_config:bundle-idle-timeout says otherwise
// (SetBundleIdleTimeout); the setting is global, as OVS's.
const DefaultBundleIdleTimeout = 10 * time.Second

// bundleIdleTimeout is the current idle timeout in nanoseconds.
var bundleIdleTimeout atomic.Int64

func init() { bundleIdleTimeout.Store(int64(DefaultBundleIdleTimeout)) }

// SetBundleIdleTimeout sets how long idle bundles live, on every bridge.
func SetBundleIdleTimeout(d time.Duration) { bundleIdleTimeout.Store(int64(d)) }

// bundleExpiryInterval is how often connections look for idle bundles
// (OVS's BUNDLE_EXPIRY_INTERVAL); a variable for tests.
var bundleExpiryInterval = time.Second

// bundle is one open or closed bundle of a connection.
type bundle struct {
	id     uint32
	flags  uint16
	closed bool
	msgs   []bundled
	// opener is the message that created the bundle: a timeout's
	// OFPT_ERROR refers to it, as OVS's.
	opener []byte
	used   time.Time
}

// bundled is a message of a bundle: what the Bundler kept of it, and what
// an error about it needs.
type bundled struct {
	msg ofp.Message // as CheckBundled returned it
	raw []byte      // the message's bytes, which the error echoes
	// name is its type's, for logs; echoAll: an error echoes it whole.
	name    string
	echoAll bool
}

// bundleControl answers OFPT_BUNDLE_CONTROL as OVS's handle_bundle_control.
func (c *conn) bundleControl(m *ofp.BundleControl, raw []byte) ([][]byte, *ofp.Error) {
	bn, ok := c.m.src.(Bundler)
	if !ok {
		return nil, &ofp.Error{Errno: ofp.BadType, Name: "OFPT_BUNDLE_CONTROL", Detail: "not supported"}
	}
	var err *ofp.Error
	switch m.Type {
	case ofp.BundleOpenRequest:
		err = c.openBundle(m.ID, m.Flags, raw)
	case ofp.BundleCloseRequest:
		err = c.closeBundle(m.ID, m.Flags)
	case ofp.BundleCommitRequest:
		err = c.commitBundle(bn, m.ID, m.Flags)
	case ofp.BundleDiscardRequest:
		if c.takeBundle(m.ID) == nil {
			err = &ofp.Error{Errno: ofp.BundleBadID, Detail: "no such bundle"}
		}
	default:
		err = &ofp.Error{Errno: ofp.BundleBadType, Detail: "not a request"}
	}
	if err != nil {
		if err.Name == "" {
			err.Name = "OFPT_BUNDLE_CONTROL"
		}
		return nil, err
	}
	return [][]byte{ofp.EncodeBundleReply(m.Version, m.Xid, m.ID, m.Type+1)}, nil
}

// bundleAdd answers OFPT_BUNDLE_ADD_MESSAGE as OVS's handle_bundle_add:
// the message is checked now, against the tables at commit; adding to a
// bundle that does not exist opens it.
func (c *conn) bundleAdd(m *ofp.BundleAdd, raw []byte) *ofp.Error {
	bn, ok := c.m.src.(Bundler)
	if !ok {
		return &ofp.Error{Errno: ofp.BadType, Name: "OFPT_BUNDLE_ADD_MESSAGE", Detail: "not supported"}
	}
	if fm, ok := m.Msg.(*ofp.FlowMod); ok {
		fm.Origin = c
	}
	kept, err := bn.CheckBundled(m.Msg)
	if err != nil {
		return err
	}
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b := c.bundles[m.ID]
	switch {
	case b == nil:
		b = c.newBundleLocked(m.ID, m.Flags, raw)
	case b.closed:
		delete(c.bundles, m.ID)
		return &ofp.Error{Errno: ofp.BundleClosed, Name: "OFPT_BUNDLE_ADD_MESSAGE", Detail: "bundle is closed"}
	case b.flags != m.Flags:
		delete(c.bundles, m.ID)
		return &ofp.Error{Errno: ofp.BundleBadFlags, Name: "OFPT_BUNDLE_ADD_MESSAGE", Detail: "flags differ from the bundle's"}
	}
	b.used = time.Now()
	bm := bundled{msg: kept, raw: m.Raw, name: msgName(m.Msg)}
	// As for messages outside bundles, OVS echoes a refused flow mod or
	// packet-out whole.
	switch m.Msg.(type) {
	case *ofp.FlowMod, *ofp.PacketOut:
		bm.echoAll = true
	}
	b.msgs = append(b.msgs, bm)
	if fm, ok := m.Msg.(*ofp.FlowMod); ok && kept != m.Msg {
		// The bundle keeps what the Bundler made of it (a flow add's
		// rule), not the flow mod.
		ofp.ReleaseFlowMod(fm)
	}
	return nil
}

// newBundleLocked creates bundle id and has the connection look for idle
// bundles while it has some. bmu must be held.
func (c *conn) newBundleLocked(id uint32, flags uint16, opener []byte) *bundle {
	if c.bundles == nil {
		c.bundles = map[uint32]*bundle{}
	}
	b := &bundle{id: id, flags: flags, opener: append([]byte(nil), opener...), used: time.Now()}
	c.bundles[id] = b
	if c.bundleTimer == nil {
		c.bundleTimer = time.AfterFunc(bundleExpiryInterval, c.expireBundles)
	}
	return b
}

// openBundle opens bundle id; an existing one is discarded and refused
// (OFPBFC_BAD_ID), as OVS's ofp_bundle_open.
func (c *conn) openBundle(id uint32, flags uint16, raw []byte) *ofp.Error {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.bundles[id] != nil {
		delete(c.bundles, id)
		return &ofp.Error{Errno: ofp.BundleBadID, Detail: "bundle exists"}
	}
	c.newBundleLocked(id, flags, raw)
	return nil
}

// closeBundle closes bundle id, as OVS's ofp_bundle_close: a bundle
// closed twice or with other flags is discarded.
func (c *conn) closeBundle(id uint32, flags uint16) *ofp.Error {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b := c.bundles[id]
	switch {
	case b == nil:
		return &ofp.Error{Errno: ofp.BundleBadID, Detail: "no such bundle"}
	case b.closed:
		delete(c.bundles, id)
		return &ofp.Error{Errno: ofp.BundleClosed, Detail: "bundle is closed"}
	case b.flags != flags:
		delete(c.bundles, id)
		return &ofp.Error{Errno: ofp.BundleBadFlags, Detail: "flags differ from the bundle's"}
	}
	b.closed = true
	b.used = time.Now()
	return nil
}

// takeBundle removes bundle id and returns it, nil if there is none.
func (c *conn) takeBundle(id uint32) *bundle {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	b := c.bundles[id]
	delete(c.bundles, id)
	return b
}

// commitBundle commits bundle id, open or closed, as OVS's
// do_bundle_commit: the bundle goes whatever the outcome; a refused
// message gets its own OFPT_ERROR (with its xid) before the commit is
// refused with OFPBFC_MSG_FAILED.
func (c *conn) commitBundle(bn Bundler, id uint32, flags uint16) *ofp.Error {
	b := c.takeBundle(id)
	if b == nil {
		return &ofp.Error{Errno: ofp.BundleBadID, Detail: "no such bundle"}
	}
	if b.flags != flags {
		return &ofp.Error{Errno: ofp.BundleBadFlags, Detail: "flags differ from the bundle's"}
	}
	msgs := make([]ofp.Message, len(b.msgs))
	for i, a := range b.msgs {
		msgs[i] = a.msg
	}
	i, err := bn.CommitBundle(msgs)
	if err == nil {
		return nil
	}
	if i < 0 || i >= len(b.msgs) {
		return err
	}
	failed := b.msgs[i]
	if err.Name == "" {
		err.Name = failed.name
	}
	err.EchoAll = err.EchoAll || failed.echoAll
	if !c.refuse(ofp.ParseHeader(failed.raw), err, failed.raw) {
		return &ofp.Error{Errno: ofp.BundleMsgFailed, Detail: "connection failed"}
	}
	return &ofp.Error{Errno: ofp.BundleMsgFailed, Detail: err.Error()}
}

// msgName names a bundled message for logs.
func msgName(m ofp.Message) string {
	switch m.(type) {
	case *ofp.FlowMod:
		return "OFPT_FLOW_MOD"
	case *ofp.GroupMod:
		return "OFPT_GROUP_MOD"
	case *ofp.PortMod:
		return "OFPT_PORT_MOD"
	case *ofp.PacketOut:
		return "OFPT_PACKET_OUT"
	}
	return ""
}

// expireBundles discards the bundles idle for the bundle idle timeout, each
// with an OFPBFC_TIMEOUT error referring to the message that opened it,
// as OVS's bundle_remove_expired; it runs every bundleExpiryInterval
// while the connection has bundles.
func (c *conn) expireBundles() {
	idle := time.Duration(bundleIdleTimeout.Load())
	limit := time.Now().Add(-idle)
	var expired [][]byte
	c.bmu.Lock()
	for id, b := range c.bundles {
		if !b.used.After(limit) {
			expired = append(expired, b.opener)
			delete(c.bundles, id)
		}
	}
	if len(c.bundles) > 0 && !c.bundlesStopped {
		c.bundleTimer.Reset(bundleExpiryInterval)
	} else {
		c.bundleTimer = nil
	}
	c.bmu.Unlock()
	for _, raw := range expired {
		h := ofp.ParseHeader(raw)
		c.m.log.Infof("%s: bundle expired after %v idle", c.name, idle)
		if c.send(ofp.EncodeError(h.Version, h.Xid, ofp.BundleTimeout, raw)) != nil {
			return
		}
	}
}

// stopBundles discards the connection's bundles as it closes.
func (c *conn) stopBundles() {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	c.bundlesStopped = true
	c.bundles = nil
	if c.bundleTimer != nil {
		c.bundleTimer.Stop()
		c.bundleTimer = nil
	}
}
