package main

import (
	"math"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

// dataplane is the datapath and OpenFlow layer all bridges share, behind
// the interfaces the bridge reconciler drives.
type dataplane struct {
	dp     bridge.Datapath
	backer bridge.Backer
	close  func()
	// The concrete types, for the unixctl commands that show flows.
	datapath *datapath.Datapath
	ofproto  *ofproto.Backer
}

// newDataplane builds the shared datapath (netdev@ovs-netdev) and its
// OpenFlow backer, the datapath's upcaller.
func newDataplane(log *daemon.Logger) *dataplane {
	dp := datapath.New(log.Module("dpif_netdev"))
	backer := ofproto.NewBacker(dp, log.Module("ofproto_dpif"))
	// The action parser's warnings (ofproto/trace-packet-out's), in
	// OVS's modules.
	ofptext.SetWarn(func(module, msg string) { log.Module(module).Warnf("%s", msg) })
	ofptext.SetErr(func(module, msg string) { log.Module(module).Errorf("%s", msg) })
	return &dataplane{dp: dp, backer: backerAdapter{backer}, close: dp.Close, datapath: dp, ofproto: backer}
}

// backerAdapter returns ofproto's bridges as bridge.OFBridge.
type backerAdapter struct{ *ofproto.Backer }

func (a backerAdapter) AddBridge(name string) bridge.OFBridge { return a.Backer.AddBridge(name) }

// registerFlowCommands registers the unixctl commands that show and manage
// datapath flows, with OVS 3.1's names and usage texts.
func (p *dataplane) registerFlowCommands(u *daemon.UnixctlServer) {
	if u == nil {
		return
	}
	dp, b := p.datapath, p.ofproto
	for _, c := range []struct {
		name, usage string
		min, max    int
		fn          daemon.UnixctlHandler
	}{
		{"dpctl/dump-flows", "[-m] [--names] [dp] [filter=..] [type=..] [pmd=..]", 0, 6, dp.DumpFlowsCommand},
		{"dpctl/del-flows", "[dp] [file]", 0, 2, dp.DelFlowsCommand},
		{"dpctl/get-flow", "[dp] ufid", 1, 2, dp.GetFlowCommand},
		{"dpif-netdev/pmd-stats-show", "[-pmd core] [dp]", 0, 3, dp.PMDStatsShowCommand},
		{"dpif-netdev/pmd-stats-clear", "[-pmd core] [dp]", 0, 3, dp.PMDStatsClearCommand},
		{"dpif-netdev/pmd-rxq-show", "[-pmd core] [-secs secs] [dp]", 0, 5, dp.PMDRxqShowCommand},
		{"upcall/show", "", 0, 0, dp.UpcallShowCommand},
		{"upcall/set-flow-limit", "flow-limit-number", 1, 1, dp.SetFlowLimitCommand},
		{"upcall/disable-megaflows", "", 0, 0, dp.DisableMegaflowsCommand},
		{"upcall/enable-megaflows", "", 0, 0, dp.EnableMegaflowsCommand},
		{"revalidator/wait", "", 0, 0, dp.RevalidatorWaitCommand},
		{"revalidator/purge", "", 0, 0, dp.RevalidatorPurgeCommand},
		{"ofproto/trace", "{[dp_name] odp_flow | bridge br_flow} [OPTIONS...] [-generate|packet]", 1, math.MaxInt, b.TraceCommand},
		{"ofproto/trace-packet-out", "[-consistent] {[dp_name] odp_flow | bridge br_flow} [OPTIONS...] [-generate|packet] actions", 2, math.MaxInt, b.TracePacketOutCommand},
		{"dpif/dump-flows", "[-m] [--names | --no-names] bridge", 1, 3, b.DumpFlowsCommand},
	} {
		u.Register(c.name, c.usage, c.min, c.max, c.fn)
	}
	for _, c := range append(dp.CtCommands(), dp.IPFCommands()...) {
		u.Register(c.Name, c.Usage, c.Min, c.Max, c.Fn)
	}
}
