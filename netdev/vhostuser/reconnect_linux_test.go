package vhostuser

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

func TestClientReconnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vm.sock")
	p, err := Dial("vhc0", path, testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st := p.Status(); st["status"] != "disconnected" || st["mode"] != "client" {
		t.Fatalf("status %v", st)
	}
	// Write without a device drops; Read waits.
	if n, err := p.Write(newPkts(3)); n != 0 || err != nil || p.Counters().TxNoDeviceDrops != 3 {
		t.Fatalf("Write while disconnected: %d, %v, %+v", n, err, p.Counters())
	}
	reader := make(chan []byte, 4)
	go func() {
		pkts := newPkts(1)
		for {
			n, err := p.Read(pkts)
			if err != nil {
				close(reader)
				return
			}
			if n == 1 {
				reader <- append([]byte(nil), pkts[0].Data()...)
			}
		}
	}()
	for round := range 3 {
		// The front-end (a VM) comes up after the port, serving the
		// socket; the port connects within its reconnect interval.
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetDeadline(time.Now().Add(testDeadline))
		c, err := ln.AcceptUnix()
		if err != nil {
			t.Fatalf("round %d: the port did not connect: %v", round, err)
		}
		f := newFakeFrontend(t, c)
		f.negotiate(allFeatures, 1, 64)
		waitFor(t, "running", testDeadline, p.Running)
		frame := udpFrame(300, uint16(round))
		f.rings[1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
		select {
		case got := <-reader:
			if !bytes.Equal(got, frame) {
				t.Fatalf("round %d: frame differs", round)
			}
		case <-time.After(testDeadline):
			t.Fatalf("round %d: no frame", round)
		}
		// The VM goes away (QEMU restarting): the device stops, the
		// port keeps its counters and waits for the socket again.
		ln.Close()
		os.Remove(path)
		c.Close()
		waitFor(t, "disconnected", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
		if p.Running() {
			t.Fatal("running without a connection")
		}
	}
	if c := p.Counters(); c.Connections != 3 || p.Stats().RxPackets != 3 {
		t.Fatalf("counters %+v stats %+v", c, p.Stats())
	}
	p.Close()
	if _, ok := <-reader; ok {
		t.Fatal("Read went on after Close")
	}
	if _, err := p.Write(newPkts(1)); err != netdev.ErrClosed {
		t.Fatalf("Write after Close: %v", err)
	}
}

func TestServerReconnectAndClose(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", testDeadline, p.Running)
	checkForwards(t, p, f)
	f.c.Close()
	waitFor(t, "disconnected", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
	checkForwards(t, p, reconnectFrontend(t, p))
	// Close under a blocked Read and with buffers in flight: Read
	// returns ErrClosed, the socket file goes away.
	done := make(chan error, 1)
	go func() {
		_, err := p.Read(newPkts(4))
		done <- err
	}()
	waitFor(t, "the reader asleep", testDeadline, func() bool { return p.sleeping.Load() })
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != netdev.ErrClosed {
			t.Fatalf("Read: %v", err)
		}
	case <-time.After(testDeadline):
		t.Fatal("Read still blocked after Close")
	}
	if _, err := os.Stat(p.path); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if p.Close() != netdev.ErrClosed {
		t.Fatal("second Close")
	}
}
