package main

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/ofproto"
)

// dataplane is the datapath and OpenFlow layer all bridges share, behind
// the interfaces the bridge reconciler drives.
type dataplane struct {
	dp     bridge.Datapath
	backer bridge.Backer
	close  func()
}

// newDataplane builds the shared datapath (netdev@ovs-netdev) and its
// OpenFlow backer, the datapath's upcaller.
func newDataplane(log *daemon.Logger) *dataplane {
	dp := datapath.New(log.Module("dpif_netdev"))
	backer := ofproto.NewBacker(dp, log.Module("ofproto_dpif"))
	return &dataplane{dp: dp, backer: backerAdapter{backer}, close: dp.Close}
}

// backerAdapter returns ofproto's bridges as bridge.OFBridge.
type backerAdapter struct{ *ofproto.Backer }

func (a backerAdapter) AddBridge(name string) bridge.OFBridge { return a.Backer.AddBridge(name) }
