// Package pprofsock serves Go's runtime profiles on a unix socket. It is a
// package of its own so that only the daemons that offer it (ovs-vswitchd's
// --pprof) link net/http: ovsdb-server's RSS is 1 MB less without it.
package pprofsock

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/govs/govs/internal/unixsock"
)

// Server serves Go's runtime profiles (net/http/pprof's /debug/pprof/
// pages) on a unix socket, for profiling a running daemon:
//
//	curl --unix-socket PATH http://x/debug/pprof/heap > heap.pb.gz
//	go tool pprof heap.pb.gz
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on path (mode 0750, replacing a stale socket) and
// serves the profiles until Close.
func Serve(path string) (*Server, error) {
	ln, err := unixsock.Listen(path, 0o750)
	if err != nil {
		return nil, fmt.Errorf("pprof socket %s: %w", path, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops serving and removes the socket.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
