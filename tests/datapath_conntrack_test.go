package tests

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev"
)

// ctRig is govs's datapath between two namespaces (ports 1 and 2), with a
// translation written as the datapath flows an OpenFlow stateful firewall
// gives: every IPv4 packet goes through ct(zone=9) and comes back with
// recirc_id 1; there new connections from port 1 are committed (with nat,
// if set) and forwarded, established ones and related ICMP errors pass
// both ways, the rest is dropped. Other frames (ARP, IPv6) are forwarded.
type ctRig struct {
	dp   *datapath.Datapath
	a, b *vswNS
	// drops gets a value for each translation that drops (up to 1024).
	drops chan struct{}
}

func newCtRig(t *testing.T, nat *conntrack.NATRange) *ctRig {
	vswNeedRoot(t)
	r := &ctRig{a: vswAddPrefixedNS(t, "gvct", "a", "10.9.0.1/24"), b: vswAddPrefixedNS(t, "gvct", "b", "10.9.0.2/24"),
		drops: make(chan struct{}, 1024)}
	r.dp = datapath.New(nil)
	t.Cleanup(r.dp.Close)
	for no, ns := range map[uint32]*vswNS{1: r.a, 2: r.b} {
		p, err := netdev.OpenSystem(ns.Host, netdev.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		if err := r.dp.AddPort(no, p); err != nil {
			t.Fatal(err)
		}
	}
	var natAll *conntrack.NATRange
	if nat != nil {
		natAll = &conntrack.NATRange{}
	}
	r.dp.SetUpcall(datapath.UpcallFunc(func(batch []datapath.Upcall) {
		for i := range batch {
			u := &batch[i]
			k := &u.Key
			u.Mask.EthType = 0xffff
			other := 3 - k.InPort
			switch {
			case k.EthType != flow.EthTypeIPv4:
				u.Actions = append(u.Actions, datapath.Output(other))
			case k.RecircID == 0:
				u.Actions = append(u.Actions, datapath.CT(conntrack.Action{Zone: 9, NAT: natAll}), datapath.Recirc(1))
			default:
				u.Mask.CtState = 0xff
				switch st := k.CtState; {
				case st&(conntrack.StateEstablished|conntrack.StateRelated) != 0 && st&conntrack.StateInvalid == 0:
					u.Actions = append(u.Actions, datapath.Output(other))
				case st&conntrack.StateNew != 0 && k.InPort == 1:
					u.Actions = append(u.Actions, datapath.CT(conntrack.Action{Zone: 9, Commit: true, NAT: nat}), datapath.Output(other))
				default:
					select {
					case r.drops <- struct{}{}:
					default:
					}
				}
			}
		}
	}))
	return r
}

// echo serves one connection on ln that answers what it reads, and
// reports the peer's address.
func ctEcho(t *testing.T, ln net.Listener) <-chan string {
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			peer <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		peer <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		c.SetDeadline(time.Now().Add(vswTimeout))
		io.Copy(c, c)
	}()
	return peer
}

// roundTrip connects from ns to addr, sends 256 KiB and reads them back.
func ctRoundTrip(t *testing.T, ns *vswNS, addr string) {
	t.Helper()
	var c net.Conn
	var err error
	vswInNS(t, ns.Name, func() { c, err = net.DialTimeout("tcp", addr, vswTimeout) })
	if err != nil {
		t.Fatalf("connect to %s from %s: %v", addr, ns.Name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(vswTimeout))
	data := []byte(strings.Repeat("conntrack", 256*1024/9))
	go func() {
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != string(data) {
		t.Fatalf("echo through the firewall: %d of %d bytes back, %v", len(got), len(data), err)
	}
}

func ctListen(t *testing.T, ns *vswNS, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	vswInNS(t, ns.Name, func() { ln, err = net.Listen("tcp", addr) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// A stateful firewall as datapath flows: A reaches B, B's answers come
// back, B cannot open a connection to A.
func TestDatapathConntrackFirewall(t *testing.T) {
	r := newCtRig(t, nil)
	ln := ctListen(t, r.b, "10.9.0.2:0")
	peer := ctEcho(t, ln)
	ctRoundTrip(t, r.a, ln.Addr().String())
	if p := <-peer; p != "10.9.0.1" {
		t.Errorf("B saw the connection from %s", p)
	}

	lnA := ctListen(t, r.a, "10.9.0.1:0")
	drops := len(r.drops)
	var err error
	vswInNS(t, r.b.Name, func() {
		var c net.Conn
		// Short on purpose: the SYN is dropped, the dial can only time out.
		if c, err = net.DialTimeout("tcp", lnA.Addr().String(), 2*time.Second); err == nil {
			c.Close()
		}
	})
	if err == nil {
		t.Fatal("B opened a connection to A through the firewall")
	}
	if len(r.drops) == drops {
		t.Error("no translation dropped B's SYN")
	}
	for _, e := range r.dp.Conntrack().Dump(9) {
		if e.Orig.Addr(true) == netip.MustParseAddr("10.9.0.2") {
			t.Errorf("B's connection was committed: %s", e)
		}
	}

	// Pings of 3000 bytes go as fragments both ways: reassembled,
	// tracked, forwarded.
	if out, err := r.a.exec("ping", "-q", "-n", "-c", "3", "-i", "0.2", "-s", "3000", "-w", vswPingDeadline, "10.9.0.2"); err != nil {
		t.Errorf("fragmented pings from A: %v\n%s", err, out)
	}
	r.b.noPing("10.9.0.1")

	// A datagram to a closed port: B's ICMP port unreachable is related
	// to A's connection and reaches A, whose next read fails at once.
	var uerr error
	vswInNS(t, r.a.Name, func() {
		c, err := net.Dial("udp", "10.9.0.2:9")
		if err != nil {
			uerr = err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(vswTimeout))
		c.Write([]byte("anyone?"))
		_, uerr = c.Read(make([]byte, 16))
	})
	if uerr == nil || !strings.Contains(uerr.Error(), "connection refused") {
		t.Errorf("UDP to a closed port: %v, want connection refused (the related ICMP error)", uerr)
	}
}

// SNAT: B sees A's connection come from the NAT address, and the echo
// finds its way back to A.
func TestDatapathConntrackSNAT(t *testing.T) {
	natIP := netip.MustParseAddr("10.9.0.100").As4()
	var a [16]byte
	copy(a[:], natIP[:])
	r := newCtRig(t, &conntrack.NATRange{Src: true, MinAddr: a, MaxAddr: a})
	// B resolves the NAT address to A's interface.
	mac := strings.TrimSpace(r.a.mustExec("cat", "/sys/class/net/eth0/address"))
	r.b.mustExec("ip", "neigh", "replace", "10.9.0.100", "lladdr", mac, "dev", "eth0", "nud", "permanent")
	ln := ctListen(t, r.b, "10.9.0.2:0")
	peer := ctEcho(t, ln)
	ctRoundTrip(t, r.a, ln.Addr().String())
	if p := <-peer; p != "10.9.0.100" {
		t.Errorf("B saw the connection from %s, want the NAT address 10.9.0.100", p)
	}
	var found bool
	for _, e := range r.dp.Conntrack().Dump(9) {
		found = found || e.Reply.Addr(false) == netip.MustParseAddr("10.9.0.100")
	}
	if !found {
		t.Errorf("no NATed connection in %v", r.dp.Conntrack().Dump(9))
	}
}
