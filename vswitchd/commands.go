package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/bridge"
)

// registerCommands adds ovs-vswitchd's unixctl commands, with OVS's usage
// strings and output formats.
func (v *switchd) registerCommands(u *daemon.UnixctlServer) {
	if u == nil {
		return
	}
	u.Register("exit", "[--cleanup]", 0, 1, func(args []string) (string, error) {
		v.exit(len(args) == 1 && args[0] == "--cleanup")
		return "", nil
	})
	u.Register("memory/show", "", 0, 0, func([]string) (string, error) {
		return v.memoryShow(), nil
	})
	u.Register("coverage/show", "", 0, 0, func([]string) (string, error) {
		v.syncDatapathCoverage()
		return v.cov.Show(), nil
	})
	u.Register("coverage/read-counter", "COUNTER", 1, 1, func(args []string) (string, error) {
		v.syncDatapathCoverage()
		n, ok := v.cov.Read(args[0])
		if !ok {
			return "", errors.New("No such counter")
		}
		return fmt.Sprintf("%d\n", n), nil
	})
	u.Register("dpif/show", "", 0, 0, func([]string) (string, error) {
		return v.sw.DpifShow(), nil
	})
	u.Register("dpctl/show", "[-s] [dp...]", 0, 64, v.sw.DpctlShow)
	u.Register("tnl/ports/show", "[-v]", 0, 1, v.sw.TunnelPortsShow)
	u.Register("dpif/dump-dps", "", 0, 0, func([]string) (string, error) {
		return v.sw.DpifDumpDps(), nil
	})
	u.Register("dpif/show-dp-features", "bridge", 1, 1, v.sw.DpifShowDpFeatures)
	u.Register("dpctl/dump-dps", "", 0, 0, func([]string) (string, error) {
		return v.sw.DumpDps(), nil
	})
	u.Register("qos/show", "interface", 1, 1, func(args []string) (string, error) {
		return v.sw.QoSShow(args[0])
	})
	u.Register("fdb/show", "bridge", 1, 1, func(args []string) (string, error) {
		return v.sw.FDBShow(args[0])
	})
	u.Register("fdb/stats-show", "bridge", 1, 1, func(args []string) (string, error) {
		return v.sw.FDBStatsShow(args[0])
	})
	u.Register("fdb/add", "bridge port vlan mac", 4, 4, v.sw.FDBAdd)
	u.Register("fdb/del", "bridge vlan mac", 3, 3, v.sw.FDBDel)
	u.Register("fdb/stats-clear", "[bridge]", 0, 1, v.sw.FDBStatsClear)
	u.Register("fdb/flush", "[bridge]", 0, 1, func(args []string) (string, error) {
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		if err := v.sw.FDBFlush(name); err != nil {
			return "", err
		}
		return "table successfully flushed\n", nil
	})
	u.Register("mdb/show", "bridge", 1, 1, v.sw.MdbShow)
	u.Register("mdb/flush", "[bridge]", 0, 1, v.sw.MdbFlush)
	u.Register("bond/list", "", 0, 0, func([]string) (string, error) {
		return v.sw.BondList(), nil
	})
	u.Register("bond/show", "[port]", 0, 1, v.sw.BondShow)
	u.Register("lacp/show", "[port]", 0, 1, v.sw.LACPShow)
	u.Register("stp/show", "[bridge]", 0, 1, v.sw.STPShow)
	u.Register("stp/tcn", "[bridge]", 0, 1, v.sw.STPTCN)
	u.Register("lacp/show-stats", "[port]", 0, 1, v.sw.LACPShowStats)
	u.Register("rstp/show", "[bridge]", 0, 1, v.sw.RSTPShow)
	u.Register("bond/set-active-member", "port member", 2, 2, func(args []string) (string, error) {
		return v.sw.SetActiveMember(args[0], args[1])
	})
	u.Register("bond/hash", "mac [vlan] [basis]", 1, 3, bridge.BondHash)
	u.Register("bond/migrate", "port hash member", 3, 3, func(args []string) (string, error) {
		return v.sw.BondMigrate(args[0], args[1], args[2])
	})
	for _, c := range []string{"bond/enable-member", "bond/disable-member"} {
		u.Register(c, "port member", 2, 2, func(args []string) (string, error) {
			return v.sw.EnableMember(args[0], args[1], c == "bond/enable-member")
		})
	}
	u.Register("ofproto/list", "", 0, 0, func([]string) (string, error) {
		return v.sw.OFProtoList(), nil
	})
	u.Register("bridge/reconnect", "[bridge]", 0, 1, v.sw.BridgeReconnect)
	u.Register("ofproto/list-tunnels", "", 0, 0, func([]string) (string, error) {
		if v.plane.ofproto == nil {
			return "", nil
		}
		return v.plane.ofproto.ListTunnels(), nil
	})
	u.Register("bridge/dump-flows", "[--offload-stats] bridge", 1, 2, func(args []string) (string, error) {
		return v.sw.BridgeDumpFlows(args[len(args)-1])
	})
}

// memoryShow is memory/show's line: OVS's counts (ports, udpif keys, the
// database replica's idl-cells) and govs' own, "key:value" sorted by key
// as OVS's memory_report prints them:
//
//	goroutines   goroutines running
//	heap-inuse-kB  Go heap spans in use (live objects and garbage not yet swept)
//	heap-live-kB   heap marked live by the last garbage collection
func (v *switchd) memoryShow() string {
	usage := map[string]uint64{}
	if c := v.conn.Load(); c != nil {
		usage["idl-cells-Open_vSwitch"] = uint64(c.IDLCells())
	}
	v.sw.MemoryUsage(usage)
	ms := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(ms)
	usage["goroutines"] = uint64(runtime.NumGoroutine())
	usage["heap-live-kB"] = sampleUint(ms[0]) / 1024
	usage["heap-inuse-kB"] = (sampleUint(ms[1]) + sampleUint(ms[2])) / 1024
	return daemon.MemoryReport(usage)
}

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}

// registerTunnelCommands adds the commands of native tunnelling's tables.
func registerTunnelCommands(u *daemon.UnixctlServer, routes *tunnel.Router, neigh *tunnel.NeighCache) {
	if u == nil {
		return
	}
	u.Register("ovs/route/add", tunnel.RouteAddUsage, 2, 4, routes.AddCmd)
	u.Register("ovs/route/del", tunnel.RouteDelUsage, 1, 2, routes.DelCmd)
	u.Register("ovs/route/lookup", tunnel.RouteLookupUsage, 1, 2, routes.LookupCmd)
	u.Register("ovs/route/show", "", 0, 0, routes.ShowCmd)
	for _, p := range []string{"tnl/neigh/", "tnl/arp/"} {
		u.Register(p+"show", "", 0, 0, neigh.ShowCmd)
		u.Register(p+"set", tunnel.NeighSetUsage, 3, 3, neigh.SetCmd)
		u.Register(p+"flush", "", 0, 0, neigh.FlushCmd)
		u.Register(p+"aging", "[SECS]", 0, 1, neigh.AgingCmd)
	}
}
