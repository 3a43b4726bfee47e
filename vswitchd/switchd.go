package main

import (
	"context"
	"os"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/coverage"
	"github.com/govs/govs/vswitchd/dbclient"
	"github.com/govs/govs/vswitchd/linkwatch"
)

// statsInterval is how often interface status and statistics are written
// back, as OVS's stats-update-interval default.
const statsInterval = coverage.TickSeconds * time.Second

// dbTimeout bounds one read or write-back of the database, so that a
// session that dies mid-transaction cannot stall the main loop.
const dbTimeout = 5 * time.Second

// switchd is the daemon's main loop: it turns database changes, link
// events and timer ticks into reconfigurations and write-backs. Everything
// that changes the switch runs on the loop's goroutine.
type switchd struct {
	remote string
	rundir string // where dpdkvhostuser sockets (vhost-sock-dir is relative to it) and <bridge>.mgmt go
	log    *daemon.Logger
	brLog  *daemon.ModuleLogger
	sw     *bridge.Switch
	cov    *coverage.Counters
	// plane is the datapath, for the drop counters coverage/show copies.
	plane *dataplane
	lock  *dbclient.Lock
	ssl   *ovsssl.Context // the process's SSL configuration, nil in tests

	conn  atomic.Pointer[dbclient.Conn] // nil until the first connection
	links chan linkwatch.Event
	// refreshNow asks for a status write-back before the next tick.
	refreshNow chan struct{}
	lost       atomic.Bool   // link events were dropped: rescan
	exitc      chan struct{} // closed by exit
	exited     chan struct{} // closed by run once it has cleaned up
	exiting    sync.Once
	cleanup    atomic.Bool // exit --cleanup

	// last is the snapshot last applied; nil when nothing runs.
	last *bridge.Desired
	// ports is how many ports ran at the last tick (see trimHeap); owned
	// by run.
	ports uint64
}

func newSwitchd(remote, rundir string, log *daemon.Logger, plane *dataplane, devs bridge.Devices) *switchd {
	cov := coverage.New("bridge_reconfigure", "ofproto_update_port", "dpif_port_add", "dpif_port_del",
		"netdev_get_stats", "txn_unchanged", "txn_success", "txn_error", "nln_changed")
	v := &switchd{
		remote:     remote,
		rundir:     rundir,
		log:        log,
		brLog:      log.Module("bridge"),
		sw:         newSwitch(plane, devs, log, cov.Inc),
		plane:      plane,
		cov:        cov,
		lock:       dbclient.NewLock(remote, "ovs_vswitchd", log.Module("reconnect")),
		links:      make(chan linkwatch.Event, 256),
		refreshNow: make(chan struct{}, 1),
		exitc:      make(chan struct{}),
		exited:     make(chan struct{}),
	}
	v.sw.ServeOpenFlow(rundir, log.Module("connmgr"), log.Module("rconn"))
	return v
}

// run serves until exit or ctx ends and returns the exit status. ready is
// called once the first configuration is live and acknowledged in the
// database, the moment OVS completes --detach.
func (v *switchd) run(ctx context.Context, ready func()) int {
	defer close(v.exited)
	defer v.sw.StopOpenFlow()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go v.lock.Run(ctx)
	linkwatch.Run(ctx, v.log.Module("netdev_linux"), func(ev linkwatch.Event) {
		select {
		case v.links <- ev:
		default:
			v.lost.Store(true)
		}
	})
	connected := make(chan *dbclient.Conn, 1)
	go func() {
		c, err := dbclient.Dial(ctx, v.remote, v.log.Module("ovsdb_idl"))
		if err == nil {
			connected <- c
		}
	}()

	ticker := time.NewTicker(statsInterval)
	defer ticker.Stop()
	var (
		dirty, force bool
		retry        <-chan time.Time
		changed      <-chan struct{}
		isReady      bool
		errLimit     = daemon.NewRateLimit(12, 2)
	)
	for {
		conn := v.conn.Load()
		if dirty && retry == nil && conn != nil && conn.Connected() && v.lock.State() == dbclient.LockHeld {
			if err := v.reconfigure(ctx, conn, force); err != nil {
				v.brLog.WarnRL(errLimit, "database write-back failed: %v", err)
				retry = time.After(time.Second)
			} else {
				dirty, force = false, false
				if !isReady {
					isReady = true
					ready()
					v.brLog.Infof("%s", daemon.VersionString(program, version))
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0
		case <-v.exitc:
			if v.cleanup.Load() {
				v.sw.Close()
			}
			if conn != nil {
				conn.Close()
			}
			return 0
		case c := <-connected:
			v.conn.Store(c)
			changed = c.Changed()
			dirty = true
		case <-changed:
			dirty = true
		case <-v.sw.OpenFlowChanged():
			dirty = true
		case <-v.sw.STPChanged():
			if v.sw.RunSTP() {
				dirty = true // the STP status columns
			}
		case <-v.sw.BondsChanged():
			v.sw.RunBonds()
			dirty = true // Port.bond_active_slave
		case <-v.sw.RSTPChanged():
			if v.sw.RunRSTP() {
				dirty = true // rstp_status, rstp_statistics
			}
		case <-v.lock.Changed():
			switch v.lock.State() {
			case dbclient.LockContended:
				v.brLog.Errorf("another ovs-vswitchd process is running, disabling this process (pid %d) until it goes away", os.Getpid())
				v.sw.Close()
				v.last = nil
			case dbclient.LockHeld:
				dirty, force = true, true
			}
		case ev := <-v.links:
			v.cov.Inc("nln_changed")
			changed := false
			if ev.Name == "" || v.lost.Swap(false) {
				changed = v.sw.Rescan()
			}
			if ev.Name != "" && v.sw.LinkChanged(ev.Name, ev.Index, ev.Present) {
				changed = true
			}
			if changed {
				dirty, force = true, true
			}
			v.sw.SyncOpenFlowPorts()
		case <-v.refreshNow:
			// A dummy port's state changed (netdev-dummy/set-admin-state):
			// OVS writes it back at once.
			v.sw.Refresh()
			v.sw.RunBonds()
			v.sw.SyncOpenFlowPorts()
			dirty = true
		case <-ticker.C:
			v.syncDatapathCoverage()
			v.cov.Tick()
			v.trimHeap()
			v.sw.Refresh()
			v.sw.RunBonds() // in case a carrier change went unnoticed
			v.sw.SyncOpenFlowPorts()
			dirty = true
			// Link notifications can be missed (a device gone before
			// the subscription started): retry waiting interfaces.
			force = force || v.sw.Missing()
		case <-retry:
			retry = nil
		}
	}
}

// trimSlack is how much free Go heap the process keeps
// from the system between ticks: deleted ports leave their buffers in the
// heap, which the runtime gives back to the system only slowly, so RSS
// stayed at the peak of the ports' life.
const trimSlack = 32 << 20

// trimHeap collects the garbage and returns the free heap to the system
// after ports went away, or when free heap exceeds trimSlack. Freed spans
// alone are no signal: an idle switch allocates so little that no
// collection runs after ports are deleted, and their buffers stay in the
// heap as unswept garbage until the next one. It costs a garbage
// collection, and forwarding allocates next to nothing, so it is rare.
func (v *switchd) trimHeap() {
	usage := map[string]uint64{}
	v.sw.MemoryUsage(usage)
	ports := usage["ports"]
	fewer := ports < v.ports
	v.ports = ports
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if fewer || sampleUint(s[0]) > trimSlack {
		debug.FreeOSMemory()
	}
}

// reconfigure applies the database's current configuration if it changed
// (or force) and writes the switch's state back.
func (v *switchd) reconfigure(ctx context.Context, conn *dbclient.Conn, force bool) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	rows, err := conn.Rows(ctx)
	if err != nil {
		return err
	}
	v.configureSSL(ctx, conn, rows)
	d := bridge.BuildIn(rows, v.rundir)
	if force || v.last == nil || !reflect.DeepEqual(d, v.last) {
		if v.last == nil || !slices.Equal(d.Problems, v.last.Problems) {
			for _, p := range d.Problems {
				v.brLog.Warnf("%s", p)
			}
		}
		if v.last == nil || !slices.Equal(d.Notes, v.last.Notes) {
			for _, n := range d.Notes {
				v.brLog.Infof("%s", n)
			}
		}
		v.sw.Apply(d)
		v.last = d
	}
	n, err := conn.Write(ctx, v.sw.Report(d))
	switch {
	case err != nil:
		v.cov.Inc("txn_error")
		return err
	case n == 0:
		v.cov.Inc("txn_unchanged")
	default:
		v.cov.Inc("txn_success")
	}
	return nil
}

// configureSSL applies the SSL row Open_vSwitch.ssl names over the
// command line's files, as OVS's bridge_run does on every trip through its
// main loop: besides database changes, reconfigure runs at every tick, so
// files that changed are re-read (the context compares mtimes). Without a
// row, the files last configured stay, as in OVS.
func (v *switchd) configureSSL(ctx context.Context, conn *dbclient.Conn, rows bridge.Rows) {
	if v.ssl == nil || len(rows.OpenVSwitch) == 0 {
		return
	}
	row, ok := conn.SSL(ctx, rows.OpenVSwitch[0])
	if !ok {
		return
	}
	v.ssl.Configure(ovsssl.Settings{PrivateKey: row.PrivateKey, Certificate: row.Certificate,
		CACert: row.CaCert, BootstrapCACert: row.BootstrapCaCert})
}

// exit stops the main loop and returns once it has stopped; with cleanup
// the bridges and their devices are removed first. As in OVS, "exit"
// answers only then, so that ovs-appctl returns to a cleaned-up system.
func (v *switchd) exit(cleanup bool) {
	v.exiting.Do(func() {
		v.cleanup.Store(cleanup)
		close(v.exitc)
	})
	<-v.exited
}

// refreshSoon asks the main loop for a status write-back now.
func (v *switchd) refreshSoon() {
	select {
	case v.refreshNow <- struct{}{}:
	default:
	}
}

// newSwitch returns the running switch, its STP logging as OVS's stp
// module.
func newSwitch(plane *dataplane, devs bridge.Devices, log *daemon.Logger, count func(string)) *bridge.Switch {
	sw := bridge.NewSwitch(plane.dp, plane.backer, devs, log.Module("bridge"), count)
	sw.SetSTPLog(log.Module("stp"))
	return sw
}
