package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/govs/govs/internal/unixsock"
)

// PprofServer serves Go's runtime profiles (net/http/pprof's /debug/pprof/
// pages) on a unix socket, for profiling a running daemon:
//
//	curl --unix-socket PATH http://x/debug/pprof/heap > heap.pb.gz
//	go tool pprof heap.pb.gz
type PprofServer struct {
	srv *http.Server
	ln  net.Listener
}

// ServePprof listens on path (mode 0750, replacing a stale socket) and
// serves the profiles until Close.
func ServePprof(path string) (*PprofServer, error) {
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
	s := &PprofServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops serving and removes the socket.
func (s *PprofServer) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
