package ovsssl

import "github.com/govs/govs/internal/daemon"

// Options are the SSL options OVS's daemons take on the command line
// (STREAM_SSL_OPTION_HANDLERS and friends).
type Options struct {
	Settings
	PeerCACert string // --peer-ca-cert: extra certificates sent to peers
}

// Flags returns the command-line flags that fill o: -p/--private-key,
// -c/--certificate, -C/--ca-cert, --bootstrap-ca-cert, --peer-ca-cert,
// --ssl-protocols, --ssl-ciphers.
func (o *Options) Flags() []daemon.Flag {
	set := func(p *string) func(string) error {
		return func(v string) error { *p = v; return nil }
	}
	return []daemon.Flag{
		{Long: "private-key", Short: 'p', Arg: daemon.RequiredArg, Set: set(&o.PrivateKey)},
		{Long: "certificate", Short: 'c', Arg: daemon.RequiredArg, Set: set(&o.Certificate)},
		{Long: "ca-cert", Short: 'C', Arg: daemon.RequiredArg, Set: set(&o.CACert)},
		{Long: "bootstrap-ca-cert", Arg: daemon.RequiredArg, Set: func(v string) error {
			o.CACert, o.BootstrapCACert = v, true
			return nil
		}},
		{Long: "peer-ca-cert", Arg: daemon.RequiredArg, Set: set(&o.PeerCACert)},
		{Long: "ssl-protocols", Arg: daemon.RequiredArg, Set: set(&o.Protocols)},
		{Long: "ssl-ciphers", Arg: daemon.RequiredArg, Set: set(&o.Ciphers)},
	}
}
