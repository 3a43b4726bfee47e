package tunnel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// capturePy prints, in hex, the first frame on iface that is UDP to port
// 4789 (over IPv4 or IPv6), waiting at most 10 s.
const capturePy = `
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(10)
while True:
    f = s.recv(65535)
    t = f[12:14]
    if t == b'\x08\x00' and f[23] == 17 and f[36:38] == b'\x12\xb5':
        break
    if t == b'\x86\xdd' and f[20] == 17 and f[56:58] == b'\x12\xb5':
        break
print(f.hex())
`

// Frames the kernel's vxlan device sends parse to the fields it was
// configured with, and building them again from the parsed header gives
// the same bytes.
func TestKernelVXLANFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: creates a network namespace with veth and vxlan devices")
	}
	for _, c := range []struct {
		name, local, remote string
	}{
		{"ipv4", "172.31.9.1", "172.31.9.2"},
		{"ipv6", "2001:db8:9::1", "2001:db8:9::2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := fmt.Sprintf("gtnlvx%d", os.Getpid()%100000)
			run := func(args ...string) string {
				t.Helper()
				out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			exec.Command("ip", "netns", "del", ns).Run()
			if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
				t.Fatalf("ip netns add: %v\n%s", err, out)
			}
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
			plen := "24"
			if strings.Contains(c.local, ":") {
				plen = "64"
			}
			for _, cmd := range []string{
				"sysctl -qw net.ipv6.conf.default.accept_dad=0",
				"ip link add tva address 02:00:00:00:09:01 type veth peer name tvb address 02:00:00:00:09:02",
				"ip link set tva up", "ip link set tvb up",
				// The kernel would leave IPv6's UDP checksum partial on a veth.
				"ethtool -K tva tx off",
				"ip addr add " + c.local + "/" + plen + " dev tva",
				// The remote address is nowhere local, so the frames go out
				// of tva to tvb, where they are captured.
				"ip neigh add " + c.remote + " lladdr 02:00:00:00:09:02 dev tva",
				"ip link add vx0 address 02:00:00:00:09:03 type vxlan id 42 local " + c.local + " remote " + c.remote + " dstport 4789 dev tva",
				"ip link set vx0 up",
				"ip addr add 10.99.0.1/24 dev vx0",
				"ip neigh add 10.99.0.2 lladdr 02:00:00:00:09:04 dev vx0",
			} {
				run(strings.Fields(cmd)...)
			}
			capture := exec.Command("ip", "netns", "exec", ns, "python3", "-c", capturePy, "tvb")
			var out bytes.Buffer
			capture.Stdout, capture.Stderr = &out, &out
			if err := capture.Start(); err != nil {
				t.Fatal(err)
			}
			// Send until the capture has its frame (it may not listen yet).
			done := make(chan error, 1)
			go func() { done <- capture.Wait() }()
			var err error
		send:
			for {
				exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "0.2", "10.99.0.2").Run()
				select {
				case err = <-done:
					break send
				default:
				}
			}
			if err != nil {
				t.Fatalf("capture: %v\n%s", err, out.String())
			}
			frame, herr := hex.DecodeString(strings.TrimSpace(out.String()))
			if herr != nil {
				t.Fatalf("capture output %q: %v", out.String(), herr)
			}
			h, inner, perr := Parse(frame)
			if perr != nil {
				t.Fatalf("parse %x: %v", frame, perr)
			}
			if h.Kind != KindVXLAN || h.Key != 42 || h.DstPort != 4789 ||
				h.Src != netip.MustParseAddr(c.local) || h.Dst != netip.MustParseAddr(c.remote) ||
				h.EthDst != [6]byte{2, 0, 0, 0, 9, 2} || h.EthSrc != [6]byte{2, 0, 0, 0, 9, 1} {
				t.Errorf("parsed %+v", h)
			}
			// The ping or anything vx0 sends by itself (an MLD report, say).
			if len(inner) < 14 || !bytes.Equal(inner[6:12], []byte{2, 0, 0, 0, 9, 3}) {
				t.Errorf("inner frame %x", inner)
			}
			again, berr := Build(&h, inner)
			if berr != nil || !bytes.Equal(again, frame) {
				t.Errorf("rebuilt (%v)\n%x\nkernel's\n%x", berr, again, frame)
			}
		})
	}
}
