package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// ftpServerScript is a minimal FTP server (anonymous, one file, RETR in
// passive or active mode, IPv4 and IPv6) that logs what it sees: the
// control connection's peer, the PORT/EPRT address it is told, the
// passive data connection's peer.
const ftpServerScript = `import socket, sys
host = sys.argv[1]
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
data = b"govs-ftp-data\n" * 3000
srv = socket.socket(fam)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((host, 21)); srv.listen(8)
def log(*a): print(*a, flush=True)
while True:
    c, peer = srv.accept()
    log("ctl", peer[0])
    f = c.makefile("rb")
    def send(s): c.sendall(s.encode() + b"\r\n")
    send("220 govs")
    pasv = None; active = None
    for line in f:
        cmd = line.decode().strip(); verb = cmd.split(" ")[0].upper(); arg = cmd[len(verb):].strip()
        if verb in ("USER", "PASS", "TYPE"):
            send({"USER": "331 ok", "PASS": "230 ok", "TYPE": "200 ok"}[verb])
        elif verb in ("PASV", "EPSV"):
            pasv = socket.socket(fam); pasv.bind((host, 0)); pasv.listen(1)
            p = pasv.getsockname()[1]
            if verb == "PASV":
                send("227 Entering Passive Mode (%s,%d,%d)." % (host.replace(".", ","), p >> 8, p & 255))
            else:
                send("229 Entering Extended Passive Mode (|||%d|)" % p)
        elif verb == "PORT":
            n = arg.split(","); active = (".".join(n[:4]), int(n[4]) * 256 + int(n[5])); log("port", active[0]); send("200 ok")
        elif verb == "EPRT":
            d = arg[0]; n = arg.split(d); active = (n[2], int(n[3])); log("port", active[0]); send("200 ok")
        elif verb == "RETR":
            send("150 here")
            if pasv:
                pasv.settimeout(8); dc, dp = pasv.accept(); pasv.close(); pasv = None; log("data", dp[0])
            else:
                dc = socket.socket(fam); dc.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                dc.settimeout(8); dc.bind((host, 20)); dc.connect(active)
            dc.sendall(data); dc.close()
            send("226 done")
        elif verb == "QUIT":
            send("221 bye"); break
        else:
            send("502 no")
    c.close()
`

// ftpClientScript fetches the file with python's ftplib in the mode
// given and prints its length; with PASV it trusts the address the
// server's 227 announces, so that the rewritten address is the one used.
const ftpClientScript = `import ftplib, io, sys
host, mode = sys.argv[1], sys.argv[2]
f = ftplib.FTP(timeout=float(sys.argv[3]))
f.trust_server_pasv_ipv4_address = True
f.connect(host, 21); f.login(); f.set_pasv(mode == "passive")
buf = io.BytesIO(); f.retrbinary("RETR file", buf.write); f.quit()
print(len(buf.getvalue()))
`

// debPython is Debian's python3, which the OVS packages bring: it starts
// several times faster than a pyenv shim on a loaded machine.
const debPython = "/usr/bin/python3"

// tftpServerScript answers each datagram to port 69 from a new port with
// a TFTP DATA block and waits for the acknowledgement, which it reports
// back in a second block, as a TFTP server's transfer goes.
const tftpServerScript = `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 69))
while True:
    d, peer = s.recvfrom(512)
    t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); t.bind((sys.argv[1], 0)); t.settimeout(5)
    t.sendto(b"\x00\x03\x00\x01govs-tftp", peer)
    try:
        a, p = t.recvfrom(64); t.sendto(b"\x00\x03\x00\x02 acked", p)
    except OSError:
        pass
    t.close()
`

// tftpClientScript sends a read request to port 69, acknowledges the
// block from whatever port it came and prints both blocks' data.
const tftpClientScript = `import socket, sys
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.settimeout(5)
c.sendto(b"\x00\x01file\x00octet\x00", (sys.argv[1], 69))
d, peer = c.recvfrom(512); c.sendto(b"\x00\x04\x00\x01", peer)
e, _ = c.recvfrom(512); print((d[4:] + e[4:]).decode())
`

const ftpFileLen = len("govs-ftp-data\n") * 3000

// ftpServer runs the FTP server in ns on host until the test ends and
// returns a function giving what it has logged so far.
func ftpServer(t *testing.T, ns *vswNS, host string) func() string {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	startInNS(t, ns, w, debPython, "-c", ftpServerScript, host)
	waitListening(t, ns, "t", 21)
	return func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
}

// startInNS runs args in ns until the test ends, writing their output
// to w if it is not nil.
func startInNS(t *testing.T, ns *vswNS, w io.Writer, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name}, args...)...)
	if w != nil {
		cmd.Stdout, cmd.Stderr = w, w
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitListening waits for a socket in ns bound to port, of TCP (proto
// "t") or UDP ("u").
func waitListening(t *testing.T, ns *vswNS, proto string, port int) {
	t.Helper()
	vswWait(t, vswTimeout, fmt.Sprintf("a server in %s on port %d", ns.Name, port), func() bool {
		o, _ := ns.exec("ss", "-Hl"+proto+"n", fmt.Sprintf("sport = :%d", port))
		return strings.Contains(o, fmt.Sprintf(":%d", port))
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// ftpGet fetches the file from host in mode ("passive" or "active") and
// reports whether all of it arrived within secs seconds.
func ftpGet(ns *vswNS, host, mode string, secs int) (bool, string) {
	out, err := ns.exec(debPython, "-c", ftpClientScript, host, mode, fmt.Sprint(secs))
	return err == nil && strings.TrimSpace(out) == fmt.Sprint(ftpFileLen), out
}

// TestOpenFlowCtFTP runs a TFTP exchange (alg=tftp) and FTP transfers with python's ftplib through a
// firewall loaded with Debian's ovs-ofctl that lets a open new
// connections only to port 21 and lets in what the FTP helper relates to
// them (ct(alg=ftp)): passive and active, plain and through SNAT, where
// the helper rewrites PORT's address and the data connection the server
// opens to the translated address reaches the client. Without the helper
// the transfer fails.
func TestOpenFlowCtFTP(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gftp", "10.84.0")
	amac := strings.TrimSpace(s.a.mustExec("cat", "/sys/class/net/eth0/address"))
	s.b.mustExec("ip", "neigh", "replace", "10.84.0.100", "lladdr", amac, "dev", "eth0", "nud", "permanent")
	logs := ftpServer(t, s.b, "10.84.0.2")
	firewall := func(commit, nat, natRel string) {
		s.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
			"table=0,priority=100,icmp,actions=NORMAL",
			"table=0,priority=90,ip,actions=ct(table=1,zone=3"+nat+")",
			"table=1,priority=100,ct_state=+trk+new-rel,tcp,tp_dst=21,in_port=1,actions="+commit+",output:2",
			"table=1,priority=100,ct_state=+trk+new-rel,udp,tp_dst=69,in_port=1,actions=ct(commit,zone=3,alg=tftp),output:2",
			"table=1,priority=100,ct_state=+trk+new+rel,ip,in_port=1,actions=ct(commit,zone=3"+natRel+"),output:2",
			"table=1,priority=100,ct_state=+trk+new+rel,ip,in_port=2,actions=ct(commit,zone=3"+natRel+"),output:1",
			"table=1,priority=100,ct_state=+trk+est,in_port=1,actions=output:2",
			"table=1,priority=100,ct_state=+trk+est,in_port=2,actions=output:1",
			"table=1,priority=1,actions=drop")
	}
	firewall("ct(commit,zone=3,alg=ftp)", "", "")
	s.a.waitPing("10.84.0.2")
	for _, mode := range []string{"passive", "active"} {
		if ok, out := ftpGet(s.a, "10.84.0.2", mode, 8); !ok {
			t.Fatalf("%s FTP through the firewall: %s\nserver: %s\n%s", mode, out, logs(), s.appctl("dpctl/dump-conntrack", "-m"))
		}
	}
	// TFTP: the server answers from a port of its own, the client
	// acknowledges to it.
	startInNS(t, s.b, nil, debPython, "-c", tftpServerScript, "10.84.0.2")
	waitListening(t, s.b, "u", 69)
	if out, err := s.a.exec(debPython, "-c", tftpClientScript, "10.84.0.2"); err != nil || strings.TrimSpace(out) != "govs-tftp acked" {
		t.Errorf("TFTP through the firewall: %v: %s\n%s", err, out, s.appctl("dpctl/dump-conntrack", "-m"))
	}
	ct := s.appctl("dpctl/dump-conntrack", "zone=3")
	if !strings.Contains(ct, "dport=21),reply=(") || !strings.Contains(ct, "helper=ftp") || !strings.Contains(ct, "sport=20,") ||
		!strings.Contains(ct, "dport=69),reply=(") || !strings.Contains(ct, "helper=tftp") {
		t.Errorf("conntrack after plain FTP:\n%s", ct)
	}

	// SNAT to .100: the server sees .100 in both modes, and is told .100
	// by the rewritten PORT.
	firewall("ct(commit,zone=3,alg=ftp,nat(src=10.84.0.100))", ",nat", ",nat")
	s.appctl("dpctl/flush-conntrack")
	before := logs()
	for _, mode := range []string{"passive", "active"} {
		if ok, out := ftpGet(s.a, "10.84.0.2", mode, 8); !ok {
			t.Fatalf("%s FTP through SNAT: %s\nserver: %s\n%s", mode, out, logs(), s.appctl("dpctl/dump-conntrack", "-m"))
		}
	}
	seen := strings.TrimPrefix(logs(), before)
	for _, want := range []string{"ctl 10.84.0.100", "data 10.84.0.100", "port 10.84.0.100"} {
		if !strings.Contains(seen, want) {
			t.Errorf("server's log through SNAT lacks %q:\n%s", want, seen)
		}
	}
	if strings.Contains(seen, "10.84.0.1\n") {
		t.Errorf("the server saw the client's own address through SNAT:\n%s", seen)
	}

	// Without the helper the data connections are not related: dropped.
	firewall("ct(commit,zone=3)", "", "")
	s.appctl("dpctl/flush-conntrack")
	if ok, out := ftpGet(s.a, "10.84.0.2", "passive", 2); ok {
		t.Errorf("passive FTP passed the firewall without the helper: %s", out)
	}
}
