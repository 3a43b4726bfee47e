// Package dbclient is ovs-vswitchd's side of the Open_vSwitch database: a
// libovsdb client that monitors the tables the switch reads, hands out
// consistent snapshots of them, writes the switch's state back in batched
// transactions, and holds the "ovs_vswitchd" lock on a session of its own.
package dbclient

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/bridge"
)

// Logger is the vlog module logger the client writes to.
type Logger interface {
	Errorf(format string, args ...any)
	Warnf(format string, args ...any)
	Infof(format string, args ...any)
	Debugf(format string, args ...any)
}

// Reconnection backoff, as OVS's reconnect.c: from a short first wait up
// to a few seconds, forever.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 4 * time.Second
)

// Conn is a monitoring connection to the Open_vSwitch database. It
// reconnects by itself and, after the server restarts, rebuilds its
// replica from scratch.
type Conn struct {
	cli     client.Client
	log     Logger
	changed chan struct{}
}

// NormalizeRemote turns an OVS database remote into the form libovsdb
// parses: relative unix: paths become absolute.
func NormalizeRemote(remote string) (string, error) {
	switch {
	case strings.HasPrefix(remote, "unix:"):
		p := strings.TrimPrefix(remote, "unix:")
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		return "unix:" + abs, nil
	case strings.HasPrefix(remote, "tcp:"), strings.HasPrefix(remote, "ssl:"):
		return remote, nil
	}
	return "", fmt.Errorf("%s: unsupported database remote (use unix:PATH, tcp:IP:PORT or ssl:IP:PORT)", remote)
}

func newBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = minBackoff
	b.MaxInterval = maxBackoff
	b.MaxElapsedTime = 0 // never give up: libovsdb panics if the backoff stops
	return b
}

// Dial connects to remote and starts monitoring, retrying until it
// succeeds or ctx ends.
func Dial(ctx context.Context, remote string, log Logger) (*Conn, error) {
	dbModel, err := vswitchd.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	c := &Conn{log: log, changed: make(chan struct{}, 1)}
	lg := logr.New(&logSink{log: log})
	b := newBackoff()
	for {
		err := c.connect(ctx, dbModel, remote, &lg)
		if err == nil {
			return c, nil
		}
		wait := b.NextBackOff()
		log.Debugf("%s: connection attempt failed (%v), waiting %v", remote, err, wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (c *Conn) connect(ctx context.Context, dbModel model.ClientDBModel, remote string, lg *logr.Logger) error {
	opts := []client.Option{client.WithEndpoint(remote),
		client.WithReconnect(5*time.Second, newBackoff()),
		client.WithLogger(lg)}
	if strings.HasPrefix(remote, "ssl:") {
		sc := sslContext.Load()
		if sc == nil {
			return errNoSSL
		}
		opts = append(opts, client.WithTLSConfig(sc.DynamicClientConfig()))
	}
	cli, err := client.NewOVSDBClient(dbModel, opts...)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cli.Connect(cctx); err != nil {
		return err
	}
	cli.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { c.poke() },
		UpdateFunc: func(string, model.Model, model.Model) { c.poke() },
		DeleteFunc: func(string, model.Model) { c.poke() },
	})
	_, err = cli.Monitor(cctx, cli.NewMonitor(
		client.WithTable(&vswitchd.OpenvSwitch{}),
		client.WithTable(&vswitchd.Bridge{}),
		client.WithTable(&vswitchd.Port{}),
		client.WithTable(&vswitchd.Interface{}),
		client.WithTable(&vswitchd.Datapath{}),
		client.WithTable(&vswitchd.CTZone{}),
		client.WithTable(&vswitchd.CTTimeoutPolicy{}),
		client.WithTable(&vswitchd.QoS{}),
		client.WithTable(&vswitchd.Queue{}),
		client.WithTable(&vswitchd.Controller{}),
		client.WithTable(&vswitchd.Mirror{}),
		client.WithTable(&vswitchd.FlowTable{}),
		client.WithTable(&vswitchd.SSL{}),
	))
	if err != nil {
		cli.Close()
		return err
	}
	c.cli = cli
	c.poke()
	return nil
}

func (c *Conn) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Changed receives a value after the replica changed (coalesced).
func (c *Conn) Changed() <-chan struct{} { return c.changed }

// Connected reports whether the session is up and the replica current.
func (c *Conn) Connected() bool { return c.cli.Connected() }

// Rows reads a consistent copy of the monitored tables. While the session
// is down it returns the last replica, which still describes what should
// run.
func (c *Conn) Rows(ctx context.Context) (bridge.Rows, error) {
	var r bridge.Rows
	for _, list := range []any{&r.OpenVSwitch, &r.Bridges, &r.Ports, &r.Interfaces, &r.QoS, &r.Queues, &r.Controllers, &r.Mirrors, &r.FlowTables, &r.Datapaths, &r.CTZones, &r.CTPolicies} {
		if err := c.cli.List(ctx, list); err != nil {
			return bridge.Rows{}, err
		}
	}
	return r, nil
}

// SSL returns the SSL row Open_vSwitch's ssl column points to, if any.
func (c *Conn) SSL(ctx context.Context, ovs vswitchd.OpenvSwitch) (vswitchd.SSL, bool) {
	if ovs.SSL == nil {
		return vswitchd.SSL{}, false
	}
	row := vswitchd.SSL{UUID: *ovs.SSL}
	if err := c.cli.Get(ctx, &row); err != nil {
		return vswitchd.SSL{}, false
	}
	return row, true
}

// IDLCells counts the replica's cells (rows times columns) over every
// table it holds, for memory/show.
func (c *Conn) IDLCells() int {
	n := 0
	cc := c.cli.Cache()
	if cc == nil {
		return 0
	}
	schema := c.cli.Schema()
	for _, t := range cc.Tables() {
		if rc := cc.Table(t); rc != nil {
			n += rc.Len() * len(schema.Tables[t].Columns)
		}
	}
	return n
}

// Close ends the session for good.
func (c *Conn) Close() { c.cli.Close() }

// logSink passes libovsdb's logr output to vlog: its errors at INFO (the
// client recovers from them by reconnecting, which the lock session
// already reports in OVS's words), the rest at DBG.
type logSink struct {
	log    Logger
	name   string
	values []any
}

func (s *logSink) Init(logr.RuntimeInfo)  {}
func (s *logSink) Enabled(level int) bool { return true }

func (s *logSink) Info(level int, msg string, kv ...any) {
	s.log.Debugf("%s%s", msg, formatKV(append(s.values, kv...)))
}

func (s *logSink) Error(err error, msg string, kv ...any) {
	s.log.Infof("%s: %v%s", msg, err, formatKV(append(s.values, kv...)))
}

func (s *logSink) WithValues(kv ...any) logr.LogSink {
	return &logSink{log: s.log, name: s.name, values: append(append([]any{}, s.values...), kv...)}
}

func (s *logSink) WithName(name string) logr.LogSink {
	return &logSink{log: s.log, name: name, values: s.values}
}

func formatKV(kv []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}
