package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/ovsdb/db"
)

// SSLOptions are ovsdb-server's SSL options. The file names may be
// db:DB,TABLE,COLUMN references, resolved to the first non-empty string of
// that column whenever the database changes and at each connection, as
// ovsdb-server's reconfigure_ssl does ("db:Open_vSwitch,SSL,private_key").
type SSLOptions = ovsssl.Options

// handshakeTimeout bounds an SSL handshake, so that a peer that stops
// half-way does not hold a goroutine and a socket forever.
const handshakeTimeout = 30 * time.Second

// sslRefs returns the db: references among the SSL options.
func sslRefs(o *SSLOptions) []string {
	var out []string
	for _, v := range []string{o.PrivateKey, o.Certificate, o.CACert, o.Protocols, o.Ciphers} {
		if strings.HasPrefix(v, "db:") {
			out = append(out, v)
		}
	}
	return out
}

// CheckSSLRefs checks the db: references among the SSL options, with
// ovsdb-server's messages (it refuses to start with a bad one).
func (s *Server) CheckSSLRefs() error {
	for _, ref := range sslRefs(&s.opts.SSL) {
		if _, _, err := s.stringColumn(ref); err != nil {
			return err
		}
	}
	return nil
}

// stringColumn finds the database, table and string column a db:
// reference names.
func (s *Server) stringColumn(ref string) (*dbEntry, *db.Column, error) {
	if err := s.CheckDBRemote(ref); err != nil {
		return nil, nil, err
	}
	parts := strings.Split(strings.TrimPrefix(ref, "db:"), ",")
	e := s.entry(parts[0])
	col := e.d.Schema().Tables[parts[1]].Column(parts[2])
	if col.Type.Key.Type != db.TypeString || col.Type.Value != nil {
		return nil, nil, fmt.Errorf("%q: table %q column %q is not string or set of strings", ref, parts[1], parts[2])
	}
	return e, col, nil
}

// queryDBString resolves one option: a db: reference to the first
// non-empty string in its column, anything else to itself.
func (s *Server) queryDBString(v string) string {
	if !strings.HasPrefix(v, "db:") {
		return v
	}
	e, col, err := s.stringColumn(v)
	if err != nil {
		s.sslLog.Errorf("%v", err)
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(v, "db:"), ",")
	out := ""
	e.d.Read(func(snap db.Snapshot) {
		for _, row := range snap.Rows(parts[1]) {
			for _, k := range row.Get(col).Keys {
				if str, _ := k.(string); str != "" && out == "" {
					out = str
				}
			}
		}
	})
	return out
}

// configureSSL resolves the SSL options and applies them; files that
// changed are re-read.
func (s *Server) configureSSL() {
	o := s.opts.SSL
	s.ssl.Configure(ovsssl.Settings{
		PrivateKey:      s.queryDBString(o.PrivateKey),
		Certificate:     s.queryDBString(o.Certificate),
		CACert:          s.queryDBString(o.CACert),
		BootstrapCACert: o.BootstrapCACert,
		Protocols:       s.queryDBString(o.Protocols),
		Ciphers:         s.queryDBString(o.Ciphers),
	})
}

// sslHandshake runs the SSL handshake on a new connection, as server
// (accepted from pssl:) or client (ssl:). Failures are logged as
// stream-ssl does and close the connection.
func (s *Server) sslHandshake(nc net.Conn, name string, client bool) (net.Conn, error) {
	s.configureSSL()
	var cfg *tls.Config
	var err error
	if client {
		cfg, err = s.ssl.ClientConfig()
	} else {
		cfg, err = s.ssl.ServerConfig()
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	var tc *tls.Conn
	fn := "SSL_accept"
	if client {
		tc, fn = tls.Client(nc, cfg), "SSL_connect"
	} else {
		tc = tls.Server(nc, cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if !errors.Is(err, ovsssl.ErrBootstrapped) {
			// As stream-ssl, then jsonrpc, report it in OVS.
			s.sslLog.Warnf("%s: %v", fn, err)
			s.jsonLog.Warnf("%s: receive error: Protocol error", name)
		}
		nc.Close()
		return nil, err
	}
	return tc, nil
}
