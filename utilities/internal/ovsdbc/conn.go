// Package ovsdbc is the utilities' OVSDB client: a JSON-RPC connection
// that speaks through the server's own codec (ovsdb/jsonrpc), and a
// replica of a database kept current by a monitor, as OVS's IDL keeps one.
package ovsdbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
)

// Conn is a client connection. It is not safe for concurrent use, but
// Send may be called while another goroutine is in Call or Recv.
type Conn struct {
	nc  net.Conn
	dec *jsonrpc.Decoder

	wmu    sync.Mutex // guards nextID and writes to nc
	nextID int
	// Notify receives the notifications that arrive while Call waits.
	Notify func(m *jsonrpc.Message)
}

// Dial connects to an OVSDB remote: "unix:PATH" or "tcp:HOST:PORT".
func Dial(target string) (*Conn, error) {
	var network, addr string
	switch {
	case strings.HasPrefix(target, "unix:"):
		network, addr = "unix", target[len("unix:"):]
	case strings.HasPrefix(target, "tcp:"):
		network, addr = "tcp", target[len("tcp:"):]
		if strings.Count(addr, ":") == 0 {
			addr += ":6640"
		}
	case strings.HasPrefix(target, "ssl:"):
		return nil, fmt.Errorf("%s: SSL connections are not supported yet", target)
	default:
		return nil, fmt.Errorf("%s: unknown stream type", target)
	}
	nc, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, dec: jsonrpc.NewDecoder(nc, 0)}, nil
}

// Errno renders a connection error as OVS's ovs_retval_to_string does:
// strerror's text for a system error.
func Errno(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		s := en.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// RPCError is an error reply.
type RPCError struct{ Raw json.RawMessage }

func (e *RPCError) Error() string { return string(e.Raw) }

// Call sends a request and waits for its reply, answering echo requests
// and handing notifications to Notify meanwhile.
func (c *Conn) Call(method string, params any) (json.RawMessage, error) {
	id, err := c.Send(method, params)
	if err != nil {
		return nil, err
	}
	want, _ := json.Marshal(id)
	for {
		m, err := c.Recv(time.Time{})
		if err != nil {
			return nil, err
		}
		switch m.Type() {
		case jsonrpc.Reply, jsonrpc.Error:
			if string(m.ID) != string(want) {
				continue
			}
			if m.Error != nil {
				return nil, &RPCError{m.Error}
			}
			return m.Result, nil
		case jsonrpc.Notification:
			if c.Notify != nil {
				c.Notify(m)
			}
		}
	}
}

// Send sends a request without waiting for its reply, and returns its id.
func (c *Conn) Send(method string, params any) (int, error) {
	c.wmu.Lock()
	c.nextID++
	id := c.nextID
	c.wmu.Unlock()
	return id, c.send(jsonrpc.NewRequest(method, params, id))
}

func (c *Conn) send(m *jsonrpc.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.nc.Write(m.Append(nil))
	return err
}

// Recv returns the next message that is not an echo request, answering
// those; a zero deadline waits forever.
func (c *Conn) Recv(deadline time.Time) (*jsonrpc.Message, error) {
	c.nc.SetReadDeadline(deadline)
	for {
		m, err := c.dec.Decode()
		if err != nil {
			return nil, err
		}
		if m.Type() == jsonrpc.Request && m.Method == "echo" {
			if err := c.send(jsonrpc.NewReply(m.ID, json.RawMessage(orEmpty(m.Params)))); err != nil {
				return nil, err
			}
			continue
		}
		return m, nil
	}
}

func orEmpty(p json.RawMessage) json.RawMessage {
	if p == nil {
		return json.RawMessage("[]")
	}
	return p
}
