package vhostuser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// device is what one connection negotiated; guarded by Port.cmu.
type device struct {
	connected bool
	features  uint64 // acked by SET_FEATURES
	protocol  uint64 // acked by SET_PROTOCOL_FEATURES
	owner     bool
	mem       *memTable
}

func (p *Port) offeredFeatures() uint64 {
	f := uint64(backendFeatures)
	if p.cfg.DisableOffload {
		f &^= 1<<featNetCsum | 1<<featNetGuestCsum | 1<<featNetGuestTSO4 | 1<<featNetGuestTSO6 |
			1<<featNetHostTSO4 | 1<<featNetHostTSO6
	}
	return f
}

func (p *Port) dialLoop() {
	defer close(p.done)
	failures := 0
	for !p.closed.Load() {
		c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: p.path, Net: "unix"})
		if err == nil {
			failures = 0
			p.serve(c)
			continue
		}
		if failures == 0 {
			p.logf("connecting to %s: %v (retrying every %v)", p.path, err, p.cfg.ReconnectInterval)
		}
		failures++
		t := time.NewTimer(p.cfg.ReconnectInterval)
		select {
		case <-t.C:
		case <-p.quit:
			t.Stop()
		}
	}
}

func (p *Port) acceptLoop() {
	defer close(p.done)
	for !p.closed.Load() {
		c, err := p.ln.AcceptUnix()
		if err != nil {
			if p.closed.Load() {
				return
			}
			p.logf("accept on %s: %v", p.path, err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-p.quit:
			}
			continue
		}
		p.serve(c)
	}
}

// serve runs one connection until it ends, then resets the device.
func (p *Port) serve(c *net.UnixConn) {
	p.conn.Store(c)
	if p.closed.Load() {
		c.Close()
	}
	p.ctr.connections.Add(1)
	p.cmu.Lock()
	p.dev = device{connected: true}
	p.cmu.Unlock()
	mc := newMsgConn(c)
	for {
		m, err := mc.read()
		if err != nil {
			switch {
			case errors.Is(err, errProtocol), errors.Is(err, io.ErrUnexpectedEOF):
				// Malformed, or closed in the middle of a message.
				p.ctr.protoErrors.Add(1)
				p.logf("connection %s: %v", p.path, err)
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), p.closed.Load():
			default:
				p.logf("connection %s: %v", p.path, err)
			}
			break
		}
		reply, err := p.handle(m)
		if err != nil {
			p.ctr.protoErrors.Add(1)
			p.logf("connection %s: %v", p.path, err)
			break
		}
		if reply != nil {
			if err := mc.reply(m.hdr.request, reply); err != nil {
				break
			}
		}
	}
	p.conn.Store(nil)
	c.Close()
	p.cmu.Lock()
	p.resetDeviceLocked()
	p.dev.connected = false
	p.cmu.Unlock()
}

// resetDeviceLocked stops every ring and forgets the negotiation.
func (p *Port) resetDeviceLocked() {
	for i := range p.rings {
		q := &p.rings[i]
		q.mu.Lock()
		q.resetLocked()
		q.mu.Unlock()
	}
	if p.dev.mem != nil {
		p.dev.mem.unref()
	}
	p.dev = device{connected: p.dev.connected}
	p.guestFeat.Store(0)
	p.nrings.Store(0)
	p.wakeReader()
}

func u64Reply(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// handle carries out one message and returns the reply payload, nil for
// none. It owns m's fds. An error drops the connection.
func (p *Port) handle(m *message) (reply []byte, err error) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	defer m.closeFds()
	d := &p.dev
	req := m.hdr.request
	needAck := m.hdr.flags&flagNeedReply != 0 && d.protocol&(1<<protoReplyAck) != 0
	switch req {
	case reqSetMemTable, reqSetVringKick, reqSetVringCall, reqSetVringErr, reqSetBackendReqFd, reqSetLogFd, reqSetLogBase:
	default:
		if len(m.fds) != 0 {
			return nil, protoErrorf("%v with %d file descriptors", req, len(m.fds))
		}
	}
	var nack bool
	switch req {
	case reqGetFeatures:
		return u64Reply(p.offeredFeatures()), nil
	case reqGetProtocolFeatures:
		return u64Reply(backendProtocolFeatures), nil
	case reqGetQueueNum:
		return u64Reply(uint64(p.cfg.MaxQueuePairs)), nil
	case reqSetFeatures:
		v, err := parseU64(req, m.payload)
		if err != nil {
			return nil, err
		}
		if v&^p.offeredFeatures() != 0 {
			return nil, protoErrorf("SET_FEATURES %#x beyond the offered %#x", v, p.offeredFeatures())
		}
		d.features = v
		for i := range p.rings {
			q := &p.rings[i]
			q.mu.Lock()
			q.setFeatures(v)
			q.mu.Unlock()
		}
		p.guestFeat.Store(v)
	case reqSetProtocolFeatures:
		v, err := parseU64(req, m.payload)
		if err != nil {
			return nil, err
		}
		if v&^backendProtocolFeatures != 0 {
			return nil, protoErrorf("SET_PROTOCOL_FEATURES %#x beyond the offered %#x", v, backendProtocolFeatures)
		}
		d.protocol = v
		needAck = m.hdr.flags&flagNeedReply != 0 && v&(1<<protoReplyAck) != 0
	case reqSetOwner:
		if len(m.payload) != 0 && len(m.payload) != 8 {
			return nil, protoErrorf("SET_OWNER: payload of %d bytes", len(m.payload))
		}
		d.owner = true
	case reqResetOwner, reqResetDevice:
		proto := d.protocol
		p.resetDeviceLocked()
		d.protocol = proto
	case reqSetMemTable:
		err = p.setMemTable(m)
	case reqSetVringNum, reqSetVringBase, reqGetVringBase, reqSetVringEnable:
		st, err := parseVringState(req, m.payload)
		if err != nil {
			return nil, err
		}
		q, err := p.ring(req, st.index)
		if err != nil {
			return nil, err
		}
		q.mu.Lock()
		reply, err = p.vringState(q, req, st)
		q.mu.Unlock()
		if err != nil || reply != nil {
			return reply, err
		}
	case reqSetVringAddr:
		a, err := parseVringAddr(m.payload)
		if err != nil {
			return nil, err
		}
		q, err := p.ring(req, a.index)
		if err != nil {
			return nil, err
		}
		q.mu.Lock()
		q.addr, q.addrSet = a, true
		q.desc = nil
		q.ready.Store(false)
		err = q.tryStartLocked()
		q.mu.Unlock()
		if err != nil {
			return nil, protoErrorf("SET_VRING_ADDR %d: %v", a.index, err)
		}
	case reqSetVringKick, reqSetVringCall, reqSetVringErr:
		err = p.vringFd(m)
	case reqSetBackendReqFd:
		// No back-end initiated requests are used: the fd is closed.
	case reqSetLogBase, reqSetLogFd, reqSetVringEndian, reqNetSetMTU, reqSendRARP,
		reqGetConfig, reqSetConfig, reqGetMaxMemSlots, reqSetStatus, reqGetStatus, reqIOTLBMsg:
		// Features not offered: a front-end that sends these anyway gets
		// a failure if it asked for an answer.
		nack = true
	default:
		p.logf("unknown request %v ignored", req)
		nack = true
	}
	if err != nil {
		return nil, err
	}
	if nack && m.hdr.flags&flagNeedReply != 0 {
		return u64Reply(1), nil
	}
	if needAck {
		return u64Reply(0), nil
	}
	return nil, nil
}

func (p *Port) ring(req request, index uint32) (*vring, error) {
	if index >= uint32(len(p.rings)) {
		return nil, protoErrorf("%v: ring %d of %d", req, index, len(p.rings))
	}
	if int32(index) >= p.nrings.Load() {
		p.nrings.Store(int32(index) + 1)
	}
	return &p.rings[index], nil
}

func (p *Port) vringState(q *vring, req request, st vhostVringState) ([]byte, error) {
	switch req {
	case reqSetVringNum:
		// Split rings are a power of 2 long (virtio 1.1 §2.6); packed
		// ones need not be.
		packed := p.dev.features&(1<<featRingPacked) != 0
		if st.num == 0 || st.num > maxQueueSize || !packed && st.num&(st.num-1) != 0 {
			return nil, protoErrorf("SET_VRING_NUM %d: size %d", st.index, st.num)
		}
		if q.ready.Load() {
			return nil, protoErrorf("SET_VRING_NUM %d while the ring runs", st.index)
		}
		q.num, q.desc = st.num, nil
	case reqSetVringBase:
		if st.num > 0xffff {
			return nil, protoErrorf("SET_VRING_BASE %d: %d", st.index, st.num)
		}
		if q.ready.Load() {
			return nil, protoErrorf("SET_VRING_BASE %d while the ring runs", st.index)
		}
		q.base = uint16(st.num)
		q.desc = nil
	case reqGetVringBase:
		if q.tx && q.ready.Load() {
			q.drainLocked()
		}
		base := q.base
		if q.desc != nil {
			base = q.lastAvail
			if q.packed && q.availWrap {
				base |= packedWrapBit
			}
		}
		q.stopLocked()
		q.closeFds()
		q.base = base
		p.wakeReader()
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, st.index), uint32(base)), nil
	case reqSetVringEnable:
		if st.num > 1 {
			return nil, protoErrorf("SET_VRING_ENABLE %d: %d", st.index, st.num)
		}
		if st.num == 0 && q.tx && q.ready.Load() {
			// virtio-user disables its rings before GET_VRING_BASE.
			q.drainLocked()
		}
		q.enabled = st.num == 1
		if err := q.tryStartLocked(); err != nil {
			q.failLocked(err)
		}
		p.wakeReader()
	}
	return nil, nil
}

// vringFd handles SET_VRING_KICK, SET_VRING_CALL and SET_VRING_ERR.
func (p *Port) vringFd(m *message) error {
	req := m.hdr.request
	v, err := parseU64(req, m.payload)
	if err != nil {
		return err
	}
	if v&^(vringFdIndexMask|vringFdInvalid) != 0 {
		return protoErrorf("%v: %#x", req, v)
	}
	noFd := v&vringFdInvalid != 0
	if noFd && len(m.fds) != 0 || !noFd && len(m.fds) != 1 {
		return protoErrorf("%v with %d file descriptors (nofd %v)", req, len(m.fds), noFd)
	}
	q, err := p.ring(req, uint32(v&vringFdIndexMask))
	if err != nil {
		return err
	}
	fd := -1
	if !noFd {
		fd = m.fds[0]
		m.fds = nil
		// A non-blocking call fd keeps a front-end that passed something
		// other than an eventfd from blocking the packet path. QEMU and
		// DPDK create theirs non-blocking already.
		unix.SetNonblock(fd, true)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch req {
	case reqSetVringKick:
		if q.kick >= 0 {
			if q.tx {
				p.unwatchKick(q.kick)
			}
			unix.Close(q.kick)
		}
		q.kick = fd
		if fd >= 0 && q.tx {
			p.watchKick(fd, q.index)
		}
		q.started = true
		if p.dev.features&(1<<featProtocolFeature) == 0 {
			q.enabled = true
		}
		if q.mem == nil {
			q.mem = p.dev.mem
		}
		if err := q.tryStartLocked(); err != nil {
			q.failLocked(err)
		}
		p.wakeReader()
	case reqSetVringCall:
		if q.call >= 0 {
			unix.Close(q.call)
		}
		q.call = fd
	case reqSetVringErr:
		if q.errFd >= 0 {
			unix.Close(q.errFd)
		}
		q.errFd = fd
	}
	return nil
}

func (p *Port) setMemTable(m *message) error {
	var regions [vhostMemoryMaxRegions]vhostMemoryRegion
	n, err := parseMemTable(m.payload, &regions)
	if err != nil {
		return err
	}
	if len(m.fds) != n {
		return protoErrorf("SET_MEM_TABLE: %d regions, %d file descriptors", n, len(m.fds))
	}
	mt, err := mapMemTable(regions[:n], m.fds)
	if err != nil {
		return fmt.Errorf("SET_MEM_TABLE: %w", err)
	}
	mt.conn = p.conn.Load()
	old := p.dev.mem
	p.dev.mem = mt
	for i := range p.rings {
		q := &p.rings[i]
		q.mu.Lock()
		q.mem = mt
		q.hint = 0
		var err error
		if q.desc != nil {
			// Live change (memory hot-plug): the ring keeps its indexes.
			err = q.remap()
		} else {
			err = q.tryStartLocked()
		}
		if err != nil {
			q.failLocked(err)
		}
		q.mu.Unlock()
	}
	if old != nil {
		old.unref()
	}
	return nil
}

// Status is the Interface status column for the port.
func (p *Port) Status() map[string]string {
	p.cmu.Lock()
	d := p.dev
	numa, numaOK := 0, false
	if d.connected && d.mem != nil {
		// Under cmu: the memory stays mapped while the device holds it.
		numa, numaOK = d.mem.numaNode()
	}
	p.cmu.Unlock()
	mode := "client"
	if p.server {
		mode = "server"
	}
	st := map[string]string{
		"mode":           mode,
		"socket":         p.path,
		"status":         "disconnected",
		"dq-zero-copy":   strconv.FormatBool(p.zeroCopy.Load()),
		"tx-retries-max": strconv.Itoa(int(p.txRetries.Load())),
	}
	if !d.connected {
		return st
	}
	st["status"] = "connected"
	st["features"] = fmt.Sprintf("0x%016x", d.features)
	st["protocol_features"] = fmt.Sprintf("0x%016x", d.protocol)
	nr := int(p.nrings.Load())
	st["num_of_vrings"] = strconv.Itoa(nr)
	if numaOK {
		st["numa"] = strconv.Itoa(numa)
	}
	rxq, txq := 0, 0
	for i := range nr {
		q := &p.rings[i]
		q.mu.Lock()
		if q.num != 0 {
			st[fmt.Sprintf("vring_%d_size", i)] = strconv.Itoa(int(q.num))
		}
		q.mu.Unlock()
		if q.ready.Load() {
			if i&1 == 1 {
				rxq++
			} else {
				txq++
			}
		}
	}
	// From the switch's side, as OVS shows them: rx queues are the
	// guest's transmit queues.
	st["n_rxq"] = strconv.Itoa(rxq)
	st["n_txq"] = strconv.Itoa(txq)
	st["dq-zero-copy-active"] = strconv.FormatBool(p.zeroCopy.Load() && rxq > 0)
	return st
}
