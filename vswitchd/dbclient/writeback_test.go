package dbclient

import (
	"net"
	"testing"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/bridge"
)

func TestIfaceColumns(t *testing.T) {
	ok := ifaceColumns(bridge.IfaceStatus{UUID: "u", OFPort: 3,
		Link:  &bridge.LinkStatus{AdminUp: true, LinkUp: false, Speed: 10e9, Duplex: "full", MTU: 1500, MAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}.String(), Ifindex: 7, HasIfindex: true},
		Stats: map[string]int{"rx_packets": 1}})
	if *ok.Ofport != 3 || ok.Error != nil || *ok.AdminState != "up" || *ok.LinkState != "down" || *ok.LinkSpeed != 10e9 ||
		*ok.MTU != 1500 || *ok.MACInUse != "02:00:00:00:00:01" || *ok.Ifindex != 7 || *ok.LinkResets != 0 || ok.Statistics["rx_packets"] != 1 {
		t.Errorf("running interface: %+v", ok)
	}
	failed := ifaceColumns(bridge.IfaceStatus{UUID: "u", OFPort: -1, Error: "boom"})
	if *failed.Ofport != -1 || *failed.Error != "boom" || failed.AdminState != nil || failed.MTU != nil || failed.Ifindex != nil || failed.Statistics != nil {
		t.Errorf("failed interface: %+v", failed)
	}

	// Only what differs is written; nil and empty maps are the same.
	cur := *ok
	cur.Statistics = map[string]int{"rx_packets": 1}
	if f := changedIfaceFields(&cur, ok); len(f) != 0 {
		t.Errorf("unchanged interface: %d fields", len(f))
	}
	if f := changedIfaceFields(&vswitchd.Interface{Statistics: map[string]int{}}, failed); len(f) != 2 {
		t.Errorf("new failure: %d fields, want ofport and error", len(f))
	}
}

func TestNormalizeRemote(t *testing.T) {
	for in, want := range map[string]string{
		"unix:/run/db.sock":  "unix:/run/db.sock",
		"tcp:127.0.0.1:6640": "tcp:127.0.0.1:6640",
		"ssl:127.0.0.1:6640": "ssl:127.0.0.1:6640",
	} {
		if got, err := NormalizeRemote(in); err != nil || got != want {
			t.Errorf("NormalizeRemote(%q) = %q, %v", in, got, err)
		}
	}
	if got, err := NormalizeRemote("unix:db.sock"); err != nil || got[:6] != "unix:/" {
		t.Errorf("relative path: %q, %v", got, err)
	}
	if _, err := NormalizeRemote("ptcp:6640"); err == nil {
		t.Error("ptcp: accepted")
	}
}
