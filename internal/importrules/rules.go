package main

// rules are the import rules of docs/architecture.md, each under the name
// the Makefile's deps target runs it by. Text is the rule word for word as
// the page states it (TestPageStatesEveryRule holds the two together).
//
// A pattern is an import path, or a path followed by "/..." for it and
// every package under it; a path whose first element has no dot is one of
// the module's ("..." alone: every package of the module).
var rules = []Rule{
	{
		Name:   "bridge-self-contained",
		Text:   "`bridge/...` depends on no package of ours outside `bridge/...`: a tenant `go get`s the SDK without the server.",
		Of:     []string{"bridge/..."},
		Deps:   true,
		Forbid: []string{"..."},
		Allow:  []string{"bridge/..."},
	},
	{
		Name:   "bridge-no-nats",
		Text:   "`bridge/...` depends on no NATS package.",
		Of:     []string{"bridge/..."},
		Deps:   true,
		Forbid: []string{"github.com/nats-io/..."},
	},
	{
		Name:   "runstate-no-nats",
		Text:   "`runstate` depends on no NATS package: the fold of a run is pure.",
		Of:     []string{"runstate"},
		Deps:   true,
		Forbid: []string{"github.com/nats-io/..."},
	},
	{
		Name:   "service-imports-httpapi",
		Text:   "Only `service` imports `httpapi`.",
		Of:     []string{"..."},
		Except: []string{"service", "httpapi"},
		Forbid: []string{"httpapi"},
	},
	{
		Name:   "cmd-imports-service",
		Text:   "Only `cmd/herald` and the test harnesses `internal/testherald` and `internal/testchild` import `service`.",
		Of:     []string{"..."},
		Except: []string{"cmd/herald", "internal/testherald", "internal/testchild", "service"},
		Forbid: []string{"service"},
	},
	{
		Name:   "httpapi-not-engine",
		Text:   "`httpapi` imports neither `engine` nor `runstate`: it reaches commands through `control` and reads through `projections`.",
		Of:     []string{"httpapi"},
		Forbid: []string{"engine", "runstate"},
	},
	{
		Name:   "edge-imports-control",
		Text:   "Only `httpapi` and `service` import `control`: no package imports it for its types or its errors.",
		Of:     []string{"..."},
		Except: []string{"httpapi", "service", "control"},
		Forbid: []string{"control"},
	},
	{
		Name:   "control-not-engine",
		Text:   "`control` depends on no package of the engine's: it knows the engine only as the interface `control.Runtime`.",
		Of:     []string{"control"},
		Deps:   true,
		Forbid: []string{"engine/..."},
	},
	{
		Name:   "engine-not-control",
		Text:   "`engine` depends on no package of control's: it satisfies `control.Runtime` without importing it.",
		Of:     []string{"engine/..."},
		Deps:   true,
		Forbid: []string{"control/..."},
	},
	{
		Name:   "delivery-not-engine",
		Text:   "`delivery/...` depends on neither `engine` nor `control`: the engine declares the small `Deliverer` it needs, which `*delivery.Service` (in process) and `*delivery.Client` (over `POST /v1/deliver`) satisfy.",
		Of:     []string{"delivery/..."},
		Deps:   true,
		Forbid: []string{"engine/...", "control/..."},
	},
	{
		Name:   "delivery-core-no-providers",
		Text:   "The core `delivery` imports, of `delivery/...`, only `delivery/provider` and `delivery/inbound`: the providers and their registry `delivery/providers` sit outside it, and `service` passes the registry in.",
		Of:     []string{"delivery"},
		Forbid: []string{"delivery/..."},
		Allow:  []string{"delivery/provider", "delivery/inbound"},
	},
}
