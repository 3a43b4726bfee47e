package vhostuser

import (
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"
)

// message is one front-end request with the file descriptors that came
// with it, which the handler owns and must keep or close.
type message struct {
	hdr     vhostUserHeader
	payload []byte
	fds     []int
}

func (m *message) closeFds() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
	m.fds = nil
}

// msgConn reads and writes vhost-user messages on a stream socket.
type msgConn struct {
	c   *net.UnixConn
	buf [hdrLen + maxPayload]byte
	oob []byte
}

func newMsgConn(c *net.UnixConn) *msgConn {
	return &msgConn{c: c, oob: make([]byte, unix.CmsgSpace(maxFds*4))}
}

// read reads one message. Descriptors arriving with any part of it are
// collected; a message with more than maxFds, or whose control data was
// truncated, is a protocol error. A connection closed mid-message is
// io.ErrUnexpectedEOF; closed between messages, io.EOF.
func (c *msgConn) read() (*message, error) {
	m := &message{}
	if err := c.readFull(c.buf[:hdrLen], m, true); err != nil {
		m.closeFds()
		return nil, err
	}
	h, err := parseHeader(c.buf[:hdrLen])
	if err != nil {
		m.closeFds()
		return nil, err
	}
	m.hdr = h
	if err := c.readFull(c.buf[hdrLen:hdrLen+h.size], m, false); err != nil {
		m.closeFds()
		return nil, err
	}
	m.payload = c.buf[hdrLen : hdrLen+h.size]
	return m, nil
}

func (c *msgConn) readFull(b []byte, m *message, first bool) error {
	got := 0
	for got < len(b) {
		n, oobn, flags, _, err := c.c.ReadMsgUnix(b[got:], c.oob)
		if oobn > 0 {
			if perr := c.takeFds(c.oob[:oobn], m); perr != nil {
				return perr
			}
		}
		if flags&unix.MSG_CTRUNC != 0 {
			return protoErrorf("control data truncated")
		}
		got += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				if got == 0 && first {
					return io.EOF
				}
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if n == 0 {
			if got == 0 && first {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		first = false
	}
	return nil
}

func (c *msgConn) takeFds(oob []byte, m *message) error {
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return protoErrorf("control message: %v", err)
	}
	var perr error
	for _, cm := range cmsgs {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if len(m.fds) == maxFds {
				unix.Close(fd)
				perr = protoErrorf("more than %d file descriptors", maxFds)
				continue
			}
			m.fds = append(m.fds, fd)
		}
	}
	return perr
}

// reply sends the reply to req with payload.
func (c *msgConn) reply(req request, payload []byte) error {
	b := make([]byte, hdrLen+len(payload))
	putHeader(b, req, flagVersion|flagReply, len(payload))
	copy(b[hdrLen:], payload)
	if _, err := c.c.Write(b); err != nil {
		return fmt.Errorf("reply to %v: %w", req, err)
	}
	return nil
}
