//go:build linux

package netdev

import (
	"net/netip"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/internal/pkttest"
)

type builtFrame struct {
	b []byte
	o packet.Offload
}

var gsoFrames [4]builtFrame

func init() {
	for i := range gsoFrames {
		f := pkttest.Frame{
			Dst: [6]byte{2, 0, 0, 0, 0, 9}, Src: [6]byte{2, 0, 0, 0, 0, 8},
			SrcIP: netip.MustParseAddr("10.199.9.1"), DstIP: netip.MustParseAddr("10.199.9.2"),
			TCP:     &pkttest.TCP{SrcPort: 1, DstPort: 2, Flags: pkttest.ACK},
			Payload: make([]byte, 3000*(i+1)),
		}
		b, o := f.GSO(1448)
		gsoFrames[i] = builtFrame{b, o}
	}
}

func gsoFrame(i int) builtFrame { return gsoFrames[i%len(gsoFrames)] }
