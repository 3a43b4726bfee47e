package tests

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// hostileBPDUs are frames to the STP multicast address that no sane
// bridge sends: LLC headers with nothing or too little after them, wrong
// protocol identifiers, versions and types, truncated configuration and
// RST BPDUs, a length field that claims more than the frame holds, an
// Ethertype where the 802.3 length belongs, and random bytes. Each is
// dst 01:80:c2:00:00:00, src 02:00:00:00:bd:01, then what follows here.
var hostileBPDUs = []string{
	"0003" + "424203",
	"0004" + "42420300",
	"0008" + "424203" + "0000000000",
	"0026" + "424203" + "1234000000" + strings.Repeat("00", 30),
	"0027" + "424203" + "00000055" + strings.Repeat("ff", 32),
	"000f" + "424203" + "00000202" + strings.Repeat("11", 8),
	"05dc" + "424203" + "000000" + "00" + strings.Repeat("00", 10),
	"0800" + "424203" + "000000" + "80",
	"0026" + "424203" + "00000000" + "ff" + strings.Repeat("ff", 30),
	"00cb" + "424203" + strings.Repeat("a5c3", 100),
}

// sendRawFrames sends each hex frame out of ns's eth0 count times from
// an AF_PACKET socket.
func sendRawFrames(t *testing.T, ns *vswNS, count int, frames ...string) {
	t.Helper()
	const py = `import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
for _ in range(int(sys.argv[1])):
    for f in sys.argv[2:]:
        s.send(bytes.fromhex(f))
`
	args := append([]string{"python3", "-c", py, strconv.Itoa(count)}, frames...)
	if out, err := ns.exec(args...); err != nil {
		t.Fatalf("sending raw frames from %s: %v: %s", ns.Name, err, out)
	}
}

// TestVswitchdHostileBPDU: a bridge running STP and one running RSTP
// each receive a burst of malformed BPDUs from a namespace on one of their
// ports. The switch counts them as errors in the port's statistics, keeps
// answering stp/show, rstp/show and the database, and both bridges keep
// forwarding between their namespaces.
func TestVswitchdHostileBPDU(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	a := vswAddPrefixedNS(t, p, "a", "10.141.0.1/24")
	b := vswAddPrefixedNS(t, p, "b", "10.141.0.2/24")
	c := vswAddPrefixedNS(t, p, "c", "10.141.1.1/24")
	d := vswAddPrefixedNS(t, p, "d", "10.141.1.2/24")
	sbr, rbr := p+"s", p+"r"
	e.mustVsctl(append(append([]string{"add-br", sbr, "--", "set", "bridge", sbr, "stp_enable=true",
		"other_config:hwaddr=02:00:00:00:bd:10"}, stpOtherConfig...),
		"--", "add-port", sbr, a.Host, "--", "add-port", sbr, b.Host,
		"--", "add-br", rbr, "--", "set", "bridge", rbr, "rstp_enable=true", "other_config:hwaddr=02:00:00:00:bd:20",
		"--", "add-port", rbr, c.Host, "other_config:rstp-port-admin-edge=true",
		"--", "add-port", rbr, d.Host, "other_config:rstp-port-admin-edge=true")...)
	a.waitPing("10.141.0.2")
	c.waitPing("10.141.1.2")

	var frames []string
	for _, f := range hostileBPDUs {
		frames = append(frames, "0180c2000000"+"02000000bd01"+f)
	}
	for _, f := range frames {
		if _, err := hex.DecodeString(f); err != nil {
			t.Fatalf("bad test frame %s: %v", f, err)
		}
	}
	sendRawFrames(t, a, 20, frames...)
	sendRawFrames(t, c, 20, frames...)

	errCount := func(port, col, key string) int {
		out, _ := e.vsctl("get", "port", port, col+":"+key)
		n, _ := strconv.Atoi(strings.Trim(strings.TrimSpace(out), `"`))
		return n
	}
	vswWait(t, vswTimeout, "the malformed BPDUs counted as errors on both ports", func() bool {
		return errCount(a.Host, "statistics", "stp_error_count") > 0 && errCount(c.Host, "rstp_statistics", "rstp_error_count") > 0
	})
	t.Logf("errors counted: stp %d, rstp %d", errCount(a.Host, "statistics", "stp_error_count"),
		errCount(c.Host, "rstp_statistics", "rstp_error_count"))

	if show := e.mustAppctl("stp/show", sbr); !stpPortRow(a.Host, "designated", "forwarding").MatchString(show) {
		t.Errorf("stp/show after the malformed BPDUs:\n%s", show)
	}
	if show := e.mustAppctl("rstp/show", rbr); !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(c.Host) + ` +Designated +Forwarding `).MatchString(show) {
		t.Errorf("rstp/show after the malformed BPDUs:\n%s", show)
	}
	if err := a.ping("10.141.0.2", 3); err != nil {
		t.Errorf("STP bridge after the malformed BPDUs: %v", err)
	}
	if err := c.ping("10.141.1.2", 3); err != nil {
		t.Errorf("RSTP bridge after the malformed BPDUs: %v", err)
	}
	e.mustVsctl("show")
}
