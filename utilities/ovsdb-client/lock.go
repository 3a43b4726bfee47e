package main

import (
	"fmt"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

func cmdLock(c *client, args []string)   { c.lock("lock", args[0]) }
func cmdSteal(c *client, args []string)  { c.lock("steal", args[0]) }
func cmdUnlock(c *client, args []string) { c.lock("unlock", args[0]) }

// lock sends one lock, steal or unlock request and prints its reply, then
// every notification ("locked", "stolen") as its method and parameters on
// two lines, until the server goes away, as OVS's do_lock. An error reply
// prints nothing: OVS only prints replies.
func (c *client) lock(method, name string) {
	d := c.daemonize(1)
	c.conn.Notify = func(m *jsonrpc.Message) { printNotification(m) }
	raw, err := c.conn.Call(method, []any{name})
	switch err.(type) {
	case nil:
		fmt.Println(compactRaw(raw))
		ready(d)
	case *ovsdbc.RPCError:
	default:
		die("%s: receive failed (%s)", c.remote, recvErrno(err))
	}
	for {
		m, err := c.conn.Recv(time.Time{})
		if err != nil {
			die("%s: receive failed (%s)", c.remote, recvErrno(err))
		}
		if m.Type() == jsonrpc.Notification {
			printNotification(m)
		}
	}
}

func printNotification(m *jsonrpc.Message) {
	fmt.Println(m.Method)
	fmt.Println(compactRaw(m.Params))
}
