package dbclient

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"

	"github.com/govs/govs/internal/ovsssl"
)

// sslContext is the process's SSL configuration (OVS has one SSL context
// per process too), used by ssl: database remotes.
var sslContext atomic.Pointer[ovsssl.Context]

var errNoSSL = errors.New("SSL is not configured (--private-key, --certificate, --ca-cert)")

// UseSSL sets the SSL configuration ssl: remotes use.
func UseSSL(c *ovsssl.Context) { sslContext.Store(c) }

// dialSSL connects to HOST:PORT and completes the SSL handshake; the
// reason of a failure is logged by the context's verifier or returned.
func dialSSL(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	sc := sslContext.Load()
	if sc == nil {
		return nil, errNoSSL
	}
	cfg, err := sc.ClientConfig()
	if err != nil {
		return nil, err
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}
