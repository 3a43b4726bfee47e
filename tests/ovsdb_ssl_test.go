package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const ovsdbPKI = "/usr/bin/ovs-pki"

// sslFiles are certificates made by Debian's ovs-pki: a CA, a server and a
// client signed by it, and a client signed by another CA.
type sslFiles struct {
	dir                   string
	ca, otherCA           string
	srvKey, srvCert       string
	cliKey, cliCert       string
	strangerKey, stranger string
}

var (
	sslOnce sync.Once
	sslPKI  sslFiles
	sslErr  error
)

// sslCerts makes the PKI once per test binary (key generation is slow).
func sslCerts(t *testing.T) sslFiles {
	t.Helper()
	ovsdbNeed(t, ovsdbPKI)
	sslOnce.Do(func() {
		// In tests/out (ignored by git), like the built binaries, and
		// made afresh by each test binary: nothing is left in /tmp.
		dir, err := filepath.Abs(filepath.Join("out", "pki"))
		if err == nil {
			os.RemoveAll(dir)
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			sslErr = err
			return
		}
		run := func(wd string, args ...string) {
			if sslErr != nil {
				return
			}
			cmd := exec.Command(ovsdbPKI, args...)
			cmd.Dir = wd
			if out, err := cmd.CombinedOutput(); err != nil {
				sslErr = fmt.Errorf("ovs-pki %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		other := filepath.Join(dir, "other")
		os.Mkdir(other, 0o755)
		run(dir, "--dir="+filepath.Join(dir, "pki"), "init", "--force")
		run(dir, "--dir="+filepath.Join(dir, "pki"), "req+sign", "srv", "switch", "--force")
		run(dir, "--dir="+filepath.Join(dir, "pki"), "req+sign", "cli", "switch", "--force")
		run(other, "--dir="+filepath.Join(dir, "pki2"), "init", "--force")
		run(other, "--dir="+filepath.Join(dir, "pki2"), "req+sign", "stranger", "switch", "--force")
		sslPKI = sslFiles{dir: dir,
			ca: filepath.Join(dir, "pki", "switchca", "cacert.pem"), otherCA: filepath.Join(dir, "pki2", "switchca", "cacert.pem"),
			srvKey: filepath.Join(dir, "srv-privkey.pem"), srvCert: filepath.Join(dir, "srv-cert.pem"),
			cliKey: filepath.Join(dir, "cli-privkey.pem"), cliCert: filepath.Join(dir, "cli-cert.pem"),
			strangerKey: filepath.Join(other, "stranger-privkey.pem"), stranger: filepath.Join(other, "stranger-cert.pem")}
	})
	if sslErr != nil {
		t.Fatal(sslErr)
	}
	return sslPKI
}

// sslClient runs Debian's ovsdb-client with a key, certificate and CA.
func sslClient(key, cert, ca string, args ...string) ovsdbResult {
	return ovsdbRun("timeout", append([]string{"60", ovsdbClient, "-p", key, "-c", cert, "-C", ca}, args...)...)
}

// TestOVSDBSSL: Debian's ovsdb-client and ovs-vsctl talk to govs' server
// over pssl:, with files given on the command line; a client with a
// certificate from another CA is refused and the log says why.
func TestOVSDBSSL(t *testing.T) {
	k := sslCerts(t)
	port := ovsdbFreePort(t)
	p := ovsdbStart(t, ovsdbOpts{remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
		extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=" + k.ca}})
	p.mustVsctl("init")
	remote := fmt.Sprintf("ssl:127.0.0.1:%d", port)
	ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })

	r := ovsdbRun(ovsdbVsctl, "--db="+remote, "-p", k.cliKey, "-c", k.cliCert, "-C", k.ca, "--timeout=30", "--no-wait", "add-br", "brssl")
	if r.code != 0 {
		t.Fatalf("ovs-vsctl over ssl: exit %d: %s\nlog:\n%s", r.code, r.stderr, p.readLog())
	}
	r = sslClient(k.cliKey, k.cliCert, k.ca, "dump", remote, "Open_vSwitch", "Bridge", "name")
	if r.code != 0 || !strings.Contains(r.stdout, "brssl") {
		t.Fatalf("ovsdb-client dump over ssl: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if got := p.appctl("ovsdb-server/list-remotes").stdout; !strings.Contains(got, fmt.Sprintf("pssl:%d:127.0.0.1\n", port)) {
		t.Errorf("list-remotes: %q", got)
	}

	r = sslClient(k.strangerKey, k.stranger, k.ca, "list-dbs", remote)
	if r.code == 0 {
		t.Fatalf("a client with another CA's certificate was served: %s", r.stdout)
	}
	ovsdbWait(t, vswTimeout, "the refusal in the log", func() bool {
		return strings.Contains(p.readLog(), "|stream_ssl|WARN|SSL_accept: certificate verify failed")
	})
	// And the server is refused by a client that trusts another CA.
	r = sslClient(k.cliKey, k.cliCert, k.otherCA, "list-dbs", remote)
	if r.code == 0 {
		t.Fatalf("a client trusted a server of another CA: %s", r.stdout)
	}
}

// TestOVSDBSSLFromDatabase: the files come from the SSL table, as ovs-ctl
// starts ovsdb-server; the listener serves once "ovs-vsctl set-ssl" fills
// the row, and a bad reference is refused at start with OVS's text.
func TestOVSDBSSLFromDatabase(t *testing.T) {
	k := sslCerts(t)
	refs := []string{"--private-key=db:Open_vSwitch,SSL,private_key", "--certificate=db:Open_vSwitch,SSL,certificate",
		"--bootstrap-ca-cert=db:Open_vSwitch,SSL,ca_cert"}
	for _, kind := range []string{"govs", "debian"} {
		t.Run(kind, func(t *testing.T) {
			port := ovsdbFreePort(t)
			p := ovsdbStart(t, ovsdbOpts{kind: kind, extra: refs})
			p.mustVsctl("init")
			remote := fmt.Sprintf("ssl:127.0.0.1:%d", port)
			p.mustVsctl("set-ssl", k.srvKey, k.srvCert, k.ca)
			p.mustVsctl("set-manager", fmt.Sprintf("pssl:%d:127.0.0.1", port))
			ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
			r := sslClient(k.cliKey, k.cliCert, k.ca, "list-dbs", remote)
			if r.code != 0 || r.stdout != "Open_vSwitch\n_Server\n" {
				t.Fatalf("list-dbs over ssl: exit %d: %q %s\nlog:\n%s", r.code, r.stdout, r.stderr, p.readLog())
			}
		})
	}

	// ovsdb-server refuses a reference to a non-string column.
	for _, kind := range []string{"govs", "debian"} {
		bin := ovsdbDebianServer
		if kind == "govs" {
			bin = ovsdbGovsServer(t)
		}
		dir := t.TempDir()
		db := filepath.Join(dir, "conf.db")
		if out, err := exec.Command(ovsdbTool, "create", db, ovsdbVSwitchSch).CombinedOutput(); err != nil {
			t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
		}
		r := ovsdbRun(bin, db, "--remote=punix:"+filepath.Join(dir, "s"), "--unixctl="+filepath.Join(dir, "c"),
			"--private-key=db:Open_vSwitch,SSL,bootstrap_ca_cert")
		want := "ovsdb-server: \"db:Open_vSwitch,SSL,bootstrap_ca_cert\": table \"SSL\" column \"bootstrap_ca_cert\" is not string or set of strings\n\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("%s: exit %d, stderr %q; want 1, %q", kind, r.code, r.stderr, want)
		}
	}
}

// TestOVSDBSetSSL: ovs-vsctl set-ssl, get-ssl and del-ssl print the same
// against both servers.
func TestOVSDBSetSSL(t *testing.T) {
	steps := [][]string{
		{"get-ssl"},
		{"set-ssl", "/k.pem", "/c.pem", "/ca.pem"},
		{"get-ssl"},
		{"--", "--bootstrap", "set-ssl", "/k2.pem", "/c2.pem", "/ca2.pem"},
		{"get-ssl"},
		{"list", "SSL"},
		{"del-ssl"},
		{"get-ssl"},
		{"set-ssl", "/k.pem"},
	}
	out := map[string][]string{}
	for _, kind := range []string{"govs", "debian"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		p.mustVsctl("init")
		for _, s := range steps {
			r := p.vsctl(append([]string{"--no-wait"}, s...)...)
			out[kind] = append(out[kind], fmt.Sprintf("%s: exit %d\n%s%s", strings.Join(s, " "), r.code,
				ovsdbNormalize(r.stdout, false), r.stderr))
		}
	}
	for i := range steps {
		if out["govs"][i] != out["debian"][i] {
			t.Errorf("govs:\n%s\ndebian:\n%s", out["govs"][i], out["debian"][i])
		}
	}
}

// TestVswitchdSSL: govs' ovs-vswitchd reaches its database over ssl:, on
// Debian's server and on govs', once with the CA given and once
// bootstrapping it from the server (which sends it with --peer-ca-cert);
// "ovs-vsctl set" waiting for the switch returns only if the switch is
// connected, holds its lock and writes cur_cfg back.
func TestVswitchdSSL(t *testing.T) {
	vswNeedRoot(t)
	k := sslCerts(t)
	bin := vswBinary(t)
	for _, kind := range []string{"govs", "debian"} {
		for _, boot := range []bool{false, true} {
			name := kind
			if boot {
				name += "-bootstrap"
			}
			t.Run(name, func(t *testing.T) {
				port := ovsdbFreePort(t)
				p := ovsdbStart(t, ovsdbOpts{kind: kind, remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
					extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=" + k.ca,
						"--peer-ca-cert=" + k.ca}})
				p.mustVsctl("init")
				ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
				dir := t.TempDir()
				ca := "--ca-cert=" + k.ca
				if boot {
					ca = "--bootstrap-ca-cert=" + filepath.Join(dir, "cacert.pem")
				}
				logf := filepath.Join(dir, "ovs-vswitchd.log")
				_, err := vswRunEnv([]string{"OVS_RUNDIR=" + dir}, bin, fmt.Sprintf("ssl:127.0.0.1:%d", port),
					"--pidfile", "--detach", "--no-chdir", "--log-file="+logf, "-vconsole:off",
					"--private-key="+k.cliKey, "--certificate="+k.cliCert, ca)
				if err != nil {
					t.Fatal(err)
				}
				pid := vswReadPid(filepath.Join(dir, "ovs-vswitchd.pid"))
				t.Cleanup(func() { vswKill(t, pid) })
				r := p.vsctl("--timeout=60", "set", "Open_vSwitch", ".", "external_ids:ssl-test=1")
				if r.code != 0 {
					b, _ := os.ReadFile(logf)
					t.Fatalf("ovs-vsctl set with the switch over ssl: exit %d: %s\nswitch log:\n%s\nserver log:\n%s",
						r.code, r.stderr, vswTail(string(b), 30), vswTail(p.readLog(), 30))
				}
				if boot {
					b, _ := os.ReadFile(logf)
					if !strings.Contains(string(b), "|stream_ssl|INFO|successfully bootstrapped CA cert to "+filepath.Join(dir, "cacert.pem")) {
						t.Errorf("no bootstrap in the switch's log:\n%s", vswTail(string(b), 30))
					}
				}
			})
		}
	}
}

// TestVswitchdSSLRow: govs' ovs-vswitchd takes its SSL files from the SSL
// row once it reads it, over those of its command line, as OVS's bridge.c
// does. The server (ovs-ctl's db: references) and the row move to another
// PKI together; after the server restarts, the switch reconnects only if
// it now presents the other PKI's certificate and trusts its CA.
func TestVswitchdSSLRow(t *testing.T) {
	vswNeedRoot(t)
	k := sslCerts(t)
	bin := vswBinary(t)
	for _, kind := range []string{"govs", "debian"} {
		t.Run(kind, func(t *testing.T) {
			port := ovsdbFreePort(t)
			p := ovsdbStart(t, ovsdbOpts{kind: kind, remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
				extra: []string{"--private-key=db:Open_vSwitch,SSL,private_key",
					"--certificate=db:Open_vSwitch,SSL,certificate", "--ca-cert=db:Open_vSwitch,SSL,ca_cert"}})
			p.mustVsctl("init", "--", "set-ssl", k.srvKey, k.srvCert, k.ca)
			ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
			dir := t.TempDir()
			logf := filepath.Join(dir, "ovs-vswitchd.log")
			_, err := vswRunEnv([]string{"OVS_RUNDIR=" + dir}, bin, fmt.Sprintf("ssl:127.0.0.1:%d", port),
				"--pidfile", "--detach", "--no-chdir", "--log-file="+logf, "-vconsole:off",
				"--private-key="+k.cliKey, "--certificate="+k.cliCert, "--ca-cert="+k.ca)
			if err != nil {
				t.Fatal(err)
			}
			pid := vswReadPid(filepath.Join(dir, "ovs-vswitchd.pid"))
			t.Cleanup(func() { vswKill(t, pid) })
			vsctl := func(what string, args ...string) {
				t.Helper()
				// Without --no-wait: ovs-vsctl returns once the switch
				// has applied the change and written cur_cfg back.
				if r := p.vsctl(append([]string{"--timeout=30"}, args...)...); r.code != 0 {
					b, _ := os.ReadFile(logf)
					t.Fatalf("%s: exit %d: %s\nswitch log:\n%s\nserver log:\n%s",
						what, r.code, r.stderr, vswTail(string(b), 30), vswTail(p.readLog(), 30))
				}
			}
			vsctl("the switch connected with its command line's files", "set", "Open_vSwitch", ".", "external_ids:step=1")
			// Applied by the switch before it acknowledges the change.
			vsctl("set-ssl to the other PKI", "set-ssl", k.strangerKey, k.stranger, k.otherCA)
			p.stop()
			p.start()
			ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
			vsctl("the switch reconnected with the SSL row's files", "set", "Open_vSwitch", ".", "external_ids:step=2")
		})
	}
}

// TestOVSDBSSLReread: the CA file is re-read when it changes, as
// stream-ssl does: a client refused under one CA is accepted once the file
// holds its CA, without a restart; the same through the SSL row.
func TestOVSDBSSLReread(t *testing.T) {
	k := sslCerts(t)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(to+".tmp", b, 0o644)
		}
		if err == nil {
			err = os.Rename(to+".tmp", to)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	copyFile(k.otherCA, ca)
	port := ovsdbFreePort(t)
	p := ovsdbStart(t, ovsdbOpts{remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
		extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=db:Open_vSwitch,SSL,ca_cert"}})
	p.mustVsctl("init")
	p.mustVsctl("set-ssl", "/nonexistent-key", "/nonexistent-cert", ca)
	ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
	remote := fmt.Sprintf("ssl:127.0.0.1:%d", port)
	if r := sslClient(k.cliKey, k.cliCert, k.ca, "list-dbs", remote); r.code == 0 {
		t.Fatalf("client accepted under another CA: %s", r.stdout)
	}
	copyFile(k.ca, ca)
	ovsdbWait(t, vswTimeout, "the client accepted after the CA file changed", func() bool {
		return sslClient(k.cliKey, k.cliCert, k.ca, "list-dbs", remote).code == 0
	})
	// The row now names another file, with the other CA again.
	other := filepath.Join(dir, "other.pem")
	copyFile(k.otherCA, other)
	p.mustVsctl("set", "SSL", ".", "ca_cert="+other)
	ovsdbWait(t, vswTimeout, "the client refused after the SSL row changed", func() bool {
		return sslClient(k.cliKey, k.cliCert, k.ca, "list-dbs", remote).code != 0
	})
}

// TestOVSDBSSLCiphers: --ssl-protocols and --ssl-ciphers are honoured as
// by Debian's server (a client whose only cipher is not enabled is
// refused), and bad values are logged with stream-ssl's texts.
func TestOVSDBSSLCiphers(t *testing.T) {
	k := sslCerts(t)
	for _, kind := range []string{"govs", "debian"} {
		t.Run(kind, func(t *testing.T) {
			port := ovsdbFreePort(t)
			p := ovsdbStart(t, ovsdbOpts{kind: kind, remotes: []string{fmt.Sprintf("pssl:%d:127.0.0.1", port)},
				extra: []string{"--private-key=" + k.srvKey, "--certificate=" + k.srvCert, "--ca-cert=" + k.ca,
					"--ssl-protocols=TLSv1.2", "--ssl-ciphers=ECDHE-RSA-AES256-GCM-SHA384"}})
			ovsdbWait(t, vswTimeout, "pssl listener", func() bool { return ovsdbPortOpen(port) })
			remote := fmt.Sprintf("ssl:127.0.0.1:%d", port)
			if r := sslClient(k.cliKey, k.cliCert, k.ca, "list-dbs", remote); r.code != 0 {
				t.Fatalf("default client refused: %s\nlog:\n%s", r.stderr, p.readLog())
			}
			if r := sslClient(k.cliKey, k.cliCert, k.ca, "--ssl-ciphers=AES128-SHA", "list-dbs", remote); r.code == 0 {
				t.Fatalf("client with a cipher the server does not enable was served")
			}
			if r := sslClient(k.cliKey, k.cliCert, k.ca, "--ssl-ciphers=ECDHE-RSA-AES256-GCM-SHA384", "list-dbs", remote); r.code != 0 {
				t.Fatalf("client with the server's cipher refused: %s", r.stderr)
			}

			bad := ovsdbStart(t, ovsdbOpts{kind: kind, extra: []string{"--private-key=" + k.srvKey,
				"--ssl-ciphers=FOO", "--ssl-protocols=TLSv9"}})
			for _, want := range []string{"|stream_ssl|ERR|SSL_CTX_set_cipher_list: error:0A0000B9:SSL routines::no cipher match",
				"|stream_ssl|ERR|TLSv9: SSL protocol not recognized"} {
				ovsdbWait(t, vswTimeout, want, func() bool { return strings.Contains(bad.readLog(), want) })
			}
		})
	}
}
