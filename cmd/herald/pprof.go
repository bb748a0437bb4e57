package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves net/http/pprof on addr (HERALD_PPROF_ADDR; herald
// bench sets it to profile the process it measures). The listener is
// separate from the API and never exposed by default. stop closes it.
func startPprof(addr string, logger *slog.Logger) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("pprof listener stopped", "err", err)
		}
	}()
	logger.Warn("serving pprof; do not expose this address", "addr", l.Addr().String())
	return func() { _ = srv.Close() }, nil
}
