package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/govs/govs/internal/daemon"
)

// replyConn is a connection whose peer has already sent reply.
type replyConn struct {
	io.Reader
	sent bytes.Buffer
}

func (c *replyConn) Write(p []byte) (int, error) { return c.sent.Write(p) }

func newAppctl() *appctl {
	return &appctl{log: daemon.NewLogger(io.Discard), target: "t"}
}

func TestTransact(t *testing.T) {
	for _, c := range []struct {
		reply, result, cmdErr string
		fail                  bool
	}{
		{reply: `{"id":0,"result":"ok\n","error":null}`, result: "ok\n"},
		{reply: `{"id":0,"result":null,"error":"bad\n"}`, cmdErr: "bad\n"},
		{reply: `{"id":1,"result":"x","error":null} {"id":0,"result":"y","error":null}`, result: "y"},
		{reply: `{"id":0,"method":"echo","params":[]}{"id":0,"result":"z"}`, result: "z"},
		{reply: `{"id":0,"result":5,"error":null}`, fail: true},
		{reply: `{"id":0,"result":null,"error":[1]}`, fail: true},
		{reply: `{"id":0,"result":"x"`, fail: true},
		{reply: ``, fail: true},
		{reply: `]`, fail: true},
	} {
		conn := &replyConn{Reader: bytes.NewReader([]byte(c.reply))}
		res, cmdErr, err := newAppctl().transact(conn, "unix:x", "version", nil)
		if (err != nil) != c.fail {
			t.Errorf("%q: err %v", c.reply, err)
			continue
		}
		if err != nil {
			continue
		}
		if (res != nil && *res != c.result) || (cmdErr != nil && *cmdErr != c.cmdErr) || (res == nil) == (cmdErr == nil) {
			t.Errorf("%q: result %v error %v", c.reply, res, cmdErr)
		}
	}
	conn := &replyConn{Reader: bytes.NewReader([]byte(`{"id":0,"result":""}`))}
	newAppctl().transact(conn, "unix:x", "vlog/set", []string{"a", "b\"c"})
	if got := conn.sent.String(); got != `{"method":"vlog/set","params":["a","b\"c"],"id":0}` {
		t.Errorf("request %s", got)
	}
}

// FuzzTransact: whatever a daemon answers, the client returns exactly one
// of a result, a command error or a transaction error, and never panics.
func FuzzTransact(f *testing.F) {
	f.Add([]byte(`{"id":0,"result":"ok\n","error":null}`))
	f.Add([]byte(`{"id":0,"result":null,"error":"bad"}`))
	f.Add([]byte(`{"id":2,"result":"x"}{"id":0,"result":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := &replyConn{Reader: bytes.NewReader(data)}
		res, cmdErr, err := newAppctl().transact(conn, "unix:x", "version", nil)
		n := 0
		for _, set := range []bool{res != nil, cmdErr != nil, err != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%q: result %v error %v err %v", data, res, cmdErr, err)
		}
	})
}
