//go:build tools

package main

import (
	_ "github.com/adhocore/gronx"
	_ "github.com/emersion/go-smtp"
	_ "github.com/gorilla/mux"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/qri-io/jsonschema"
	_ "go.etcd.io/bbolt"
)

func main() {}
