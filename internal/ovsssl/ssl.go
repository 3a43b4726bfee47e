// Package ovsssl is Open vSwitch's SSL configuration (lib/stream-ssl.c) on
// top of crypto/tls: the private key, certificate and CA certificate files,
// re-read when they change; CA bootstrap (the CA certificate saved from the
// peer on the first connection); extra certificates sent to the peer
// (--peer-ca-cert); --ssl-protocols and --ssl-ciphers. Peers are verified
// as OVS does: the peer must present a certificate signed by the CA, and
// names are not checked. Errors are logged with stream-ssl's texts.
package ovsssl

import (
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Logger is the "stream_ssl" vlog module.
type Logger interface {
	Errorf(format string, args ...any)
	Warnf(format string, args ...any)
	Infof(format string, args ...any)
}

// Settings are the SSL options after db: references are resolved: file
// names ("" when not configured) and the protocol and cipher lists ("" for
// OVS's defaults).
type Settings struct {
	PrivateKey, Certificate, CACert string
	BootstrapCACert                 bool
	Protocols, Ciphers              string
}

// ErrBootstrapped ends the connection on which the CA certificate was
// just bootstrapped: the next one is verified against it, as in OVS.
var ErrBootstrapped = errors.New("killing successful connection to retry using CA cert")

// fileState is a configured file as last read: its name and mtime.
type fileState struct {
	name  string
	mtime time.Time
}

// changed reports whether name differs from the last one read or the file
// was modified since, and records the new state (stream-ssl's
// update_ssl_config).
func (f *fileState) changed(name string, log Logger) bool {
	if name == "" {
		return false
	}
	var mtime time.Time
	if st, err := os.Stat(name); err == nil {
		mtime = st.ModTime()
	} else if !errors.Is(err, os.ErrNotExist) {
		log.Errorf("%s: stat failed (%v)", name, err)
	}
	if f.name == name && f.mtime.Equal(mtime) {
		return false
	}
	f.name, f.mtime = name, mtime
	return true
}

// Context is one process's SSL configuration.
type Context struct {
	log    Logger
	peerCA [][]byte // DER certificates sent after ours (--peer-ca-cert)

	mu          sync.Mutex // guards everything below
	key, cert   fileState
	keyPEM      []byte
	certPEM     []byte
	pair        *tls.Certificate // nil unless key and certificate match
	pairErr     error
	ca          fileState
	caRead      bool
	caPool      *x509.CertPool
	verify      bool // false with ca_cert "none"
	bootstrap   bool // CA file missing and --bootstrap-ca-cert given
	protocols   string
	minV, maxV  uint16
	ciphersArg  string
	cipherSuits []uint16
}

// New returns a context with OVS's defaults. peerCACert, if not empty, is
// a file of certificates sent to peers after the own one.
func New(log Logger, peerCACert string) *Context {
	c := &Context{log: log, verify: true, protocols: DefaultProtocols, ciphersArg: DefaultCiphers}
	c.cipherSuits, _, _ = ParseCiphers(DefaultCiphers)
	if peerCACert != "" {
		certs, err := readCerts(peerCACert)
		if err != nil {
			log.Errorf("%v", err)
		}
		c.peerCA = certs
	}
	return c
}

func readCerts(name string) ([][]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s for reading: %v", name, err)
	}
	var out [][]byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			out = append(out, blk.Bytes)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("PEM_read_X509 failed reading %s: no certificate in file", name)
	}
	return out, nil
}

// Configured reports whether any file is configured
// (stream_ssl_is_configured).
func (c *Context) Configured() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.key.name != "" || c.cert.name != "" || c.ca.name != ""
}

// Configure applies settings, reading the files that changed since the
// last call; it runs in the daemon's reconfiguration, as stream-ssl's
// setters do in OVS's main loops. Errors are logged.
func (c *Context) Configure(s Settings) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keyChanged := c.key.changed(s.PrivateKey, c.log)
	certChanged := c.cert.changed(s.Certificate, c.log)
	if keyChanged || certChanged {
		// Both are re-read whenever either changes, so that a key and
		// certificate replaced one after the other end up a pair.
		c.readKeyAndCert()
	}
	if c.ca.changed(s.CACert, c.log) {
		c.readCA(s.CACert, s.BootstrapCACert)
	}
	if s.Protocols != "" && s.Protocols != c.protocols {
		if min, max, err := ParseProtocols(s.Protocols); err != nil {
			c.log.Errorf("%v", err)
		} else {
			c.minV, c.maxV, c.protocols = min, max, s.Protocols
		}
	}
	if s.Ciphers != "" && s.Ciphers != c.ciphersArg {
		ids, ignored, err := ParseCiphers(s.Ciphers)
		for _, w := range ignored {
			c.log.Warnf("%s: not a cipher or cipher class Go's crypto/tls implements, ignored", w)
		}
		if err != nil {
			c.log.Errorf("%v", err)
		} else {
			c.cipherSuits = ids
		}
		c.ciphersArg = s.Ciphers
	}
}

func (c *Context) readKeyAndCert() {
	c.pair, c.pairErr, c.keyPEM, c.certPEM = nil, nil, nil, nil
	if c.cert.name != "" {
		b, err := os.ReadFile(c.cert.name)
		if err == nil {
			if _, err = readCerts(c.cert.name); err != nil {
				err = errors.New("no certificate found")
			}
		}
		if err != nil {
			c.log.Errorf("SSL_use_certificate_file: %v", err)
		} else {
			c.certPEM = b
		}
	}
	if c.key.name != "" {
		b, err := os.ReadFile(c.key.name)
		if err == nil {
			if blk, _ := pem.Decode(b); blk == nil || !strings.Contains(blk.Type, "PRIVATE KEY") {
				err = errors.New("no private key found")
			}
		}
		if err != nil {
			c.log.Errorf("SSL_use_PrivateKey_file: %v", err)
		} else {
			c.keyPEM = b
		}
	}
	if c.keyPEM != nil && c.certPEM != nil {
		pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
		if err != nil {
			c.pairErr = err
			return
		}
		pair.Certificate = append(pair.Certificate, c.peerCA...)
		c.pair = &pair
	}
}

func (c *Context) readCA(name string, bootstrap bool) {
	c.caRead = true
	c.caPool = nil
	if name == "none" {
		c.verify = false
		c.log.Warnf("Peer certificate validation disabled (this is a security risk)")
		return
	}
	c.verify = true
	if _, err := os.Stat(name); bootstrap && errors.Is(err, os.ErrNotExist) {
		c.bootstrap = true
		return
	}
	certs, err := readCerts(name)
	if err != nil {
		c.log.Errorf("failed to load client certificates from %s: %v", name, err)
		return
	}
	pool := x509.NewCertPool()
	for _, der := range certs {
		if cert, err := x509.ParseCertificate(der); err == nil {
			pool.AddCert(cert)
		}
	}
	c.caPool, c.bootstrap = pool, false
}

// ready checks that everything a connection needs is configured, logging
// what is missing with stream-ssl's texts. Called with c.mu held.
func (c *Context) ready() error {
	var err error
	if c.keyPEM == nil {
		c.log.Errorf("Private key must be configured to use SSL")
		err = errors.New("SSL not configured")
	}
	if c.certPEM == nil {
		c.log.Errorf("Certificate must be configured to use SSL")
		err = errors.New("SSL not configured")
	}
	if !c.caRead && c.verify && !c.bootstrap {
		c.log.Errorf("CA certificate must be configured to use SSL")
		err = errors.New("SSL not configured")
	}
	if err == nil && c.pair == nil {
		c.log.Errorf("Private key does not match certificate public key: %v", c.pairErr)
		err = errors.New("SSL not configured")
	}
	return err
}

// ServerConfig returns the configuration for one accepted connection, or
// an error (already logged) if SSL is not fully configured.
func (c *Context) ServerConfig() (*tls.Config, error) { return c.config(false) }

// ClientConfig returns the configuration for one outgoing connection.
func (c *Context) ClientConfig() (*tls.Config, error) { return c.config(true) }

func (c *Context) config(client bool) (*tls.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	cfg := c.baseConfig(client)
	if !client {
		cfg.Certificates = []tls.Certificate{*c.pair}
		cfg.ClientAuth = tls.RequireAnyClientCert
		if !c.verify {
			cfg.ClientAuth = tls.RequestClientCert
		}
		cfg.ClientCAs = c.caPool
	}
	return cfg, nil
}

// DynamicClientConfig returns a client configuration for a library that
// keeps one for all its reconnections: the certificate and the CA are
// looked up at each handshake, and a handshake fails (logged) while SSL is
// not fully configured. Protocols and ciphers are those of now.
func (c *Context) DynamicClientConfig() *tls.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.baseConfig(true)
}

// baseConfig is the part of a configuration common to both sides. Called
// with c.mu held.
func (c *Context) baseConfig(client bool) *tls.Config {
	cfg := &tls.Config{
		// Peers are verified in VerifyPeerCertificate, as OVS
		// does: signed by the CA, no name check.
		InsecureSkipVerify:     true,
		VerifyPeerCertificate:  c.verifier(client),
		CipherSuites:           c.cipherSuits,
		MinVersion:             c.minV,
		MaxVersion:             c.maxV,
		SessionTicketsDisabled: true, // OVS turns the session cache off
	}
	if c.minV == 0 {
		cfg.MinVersion = tls.VersionTLS10 // OpenSSL's floor with no SSLv3
	}
	if client {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if err := c.ready(); err != nil {
				return nil, err
			}
			return c.pair, nil
		}
	}
	return cfg
}

// verifier checks the peer's chain against the CA as configured at the
// time of the handshake.
func (c *Context) verifier(client bool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		c.mu.Lock()
		pool, verify, bootstrap := c.caPool, c.verify, c.bootstrap
		c.mu.Unlock()
		certs := make([]*x509.Certificate, 0, len(raw))
		for _, der := range raw {
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return fmt.Errorf("certificate verify failed (%v)", err)
			}
			certs = append(certs, cert)
		}
		if bootstrap && client {
			return c.bootstrapCA(certs)
		}
		if !verify {
			return nil
		}
		if len(certs) == 0 {
			return errors.New("peer did not return a certificate")
		}
		if pool == nil {
			return errors.New("certificate verify failed (no CA certificate loaded)")
		}
		inter := x509.NewCertPool()
		for _, ic := range certs[1:] {
			inter.AddCert(ic)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err != nil {
			return fmt.Errorf("certificate verify failed (%v)", err)
		}
		return nil
	}
}

// bootstrapCA saves the top of the peer's chain as the CA certificate, as
// stream-ssl's do_ca_cert_bootstrap, and ends the connection.
func (c *Context) bootstrapCA(certs []*x509.Certificate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.bootstrap {
		c.log.Infof("rejecting SSL connection during bootstrap race window")
		return ErrBootstrapped
	}
	name := c.ca.name
	if len(certs) == 0 {
		c.log.Errorf("could not bootstrap CA cert: no certificate presented by peer")
		return errors.New("could not bootstrap CA cert")
	}
	cert := certs[len(certs)-1]
	if err := cert.CheckSignatureFrom(cert); err != nil || !bytesEqual(cert.RawIssuer, cert.RawSubject) {
		c.log.Errorf("could not bootstrap CA cert: obtained certificate is not self-signed (self signed certificate check failed)")
		if len(certs) < 2 {
			c.log.Errorf("only one certificate was received, so probably the peer is not configured to send its CA certificate")
		}
		return errors.New("could not bootstrap CA cert")
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			c.log.Infof("reading CA cert %s created by another process", name)
			c.ca = fileState{}
			c.ca.changed(name, c.log)
			c.readCA(name, true)
			return ErrBootstrapped
		}
		c.log.Errorf("could not bootstrap CA cert: creating %s failed: %v", name, err)
		return err
	}
	werr := pem.Encode(f, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		c.log.Errorf("could not bootstrap CA cert: writing %s failed: %v", name, werr)
		os.Remove(name)
		return werr
	}
	c.log.Infof("successfully bootstrapped CA cert to %s", name)
	sum := sha1.Sum(cert.Raw)
	fp := make([]string, len(sum))
	for i, b := range sum {
		fp[i] = fmt.Sprintf("%02x", b)
	}
	c.log.Infof("Trusting CA cert from %s (%s) (fingerprint %s)", name, oneline(cert), strings.Join(fp, ":"))
	c.ca = fileState{}
	c.ca.changed(name, c.log)
	c.readCA(name, false)
	c.log.Infof("killing successful connection to retry using CA cert")
	return ErrBootstrapped
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// oneline renders a subject as OpenSSL's X509_NAME_oneline: /C=US/O=.../CN=...
func oneline(cert *x509.Certificate) string {
	var b strings.Builder
	for _, n := range cert.Subject.Names {
		key := map[string]string{"2.5.4.6": "C", "2.5.4.8": "ST", "2.5.4.7": "L", "2.5.4.10": "O",
			"2.5.4.11": "OU", "2.5.4.3": "CN"}[n.Type.String()]
		if key == "" {
			key = n.Type.String()
		}
		fmt.Fprintf(&b, "/%s=%v", key, n.Value)
	}
	return b.String()
}
