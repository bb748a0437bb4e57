package engine

import "github.com/heraldhq/herald/eventlog"

// workKinds name what each work subject's id is, in log lines.
var workKinds = []struct{ prefix, key string }{
	{eventlog.WorkRunPrefix, "run"},
	{eventlog.WorkFanoutPrefix, "transaction"},
	{eventlog.WorkTickPrefix, "workflow"},
}

// workAttrs are the log attributes of a work message: its tenant and the
// run, transaction or workflow it is about (decoded, not the subject
// token; a fired timer names its run in its data), or the raw subject when
// it parses as none of them.
func workAttrs(subject string, data []byte) []any {
	if subject == eventlog.WorkWake {
		if tenant, run, _, err := parseWake(data); err == nil {
			return []any{"tenant", tenant, "run", run}
		}
	}
	for _, k := range workKinds {
		if tenant, id, err := parseWork(subject, k.prefix); err == nil {
			return []any{"tenant", tenant, k.key, id}
		}
	}
	return []any{"subject", subject}
}
