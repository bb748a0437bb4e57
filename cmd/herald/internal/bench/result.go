package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Result is everything one Run measured; it encodes as the --json output.
type Result struct {
	Machine Machine `json:"machine"`
	Command string  `json:"command,omitempty"`
	// Steps is the workflow of the scenarios that send (Config.Steps).
	Steps     int          `json:"steps"`
	StartedAt time.Time    `json:"startedAt"`
	Seconds   float64      `json:"seconds"`
	Modes     []ModeResult `json:"modes"`
}

// Machine describes where the figures were taken.
type Machine struct {
	CPUs        int     `json:"cpus"`
	GoVersion   string  `json:"goVersion"`
	Kernel      string  `json:"kernel"`
	MemTotalMB  uint64  `json:"memTotalMB"`
	MemFreeMB   uint64  `json:"memAvailableMB"`
	LoadAtStart float64 `json:"loadAvgAtStart"`
}

// ModeResult is one sync mode's figures.
type ModeResult struct {
	Sync     string          `json:"sync"`
	Audience *AudienceResult `json:"audience,omitempty"`
	Fanout   []FanoutResult  `json:"fanout,omitempty"`
	Latency  *LatencyResult  `json:"latency,omitempty"`
	// Individual is the single-subscriber triggers from many clients.
	Individual *IndividualResult `json:"individual,omitempty"`
	// Recovery is the fan-out whose herald serve was killed half-way.
	Recovery *RecoveryResult `json:"recovery,omitempty"`
	Timers   *TimersResult   `json:"timers,omitempty"`
	API      *APIResult      `json:"api,omitempty"`
}

// Process is what herald serve used during one scenario.
type Process struct {
	// PeakRSSBytes is the highest resident set of herald serve.
	PeakRSSBytes uint64 `json:"peakRssBytes"`
	// PeakAnonBytes is the highest anonymous resident memory sampled
	// (every 50ms): PeakRSSBytes without mapped files' pages.
	PeakAnonBytes uint64 `json:"peakAnonBytes"`
	// ServeCPUSeconds is herald serve's user+system CPU time.
	ServeCPUSeconds float64 `json:"serveCpuSeconds"`
	// BenchCPUSeconds is this process's CPU time (Bridge, sink, clients).
	BenchCPUSeconds float64 `json:"benchCpuSeconds"`
	// DiskBytes is how much the data directory grew (allocated blocks).
	DiskBytes int64 `json:"diskBytes"`
	// LoadAvg is the 1-minute load average at the end of the scenario.
	LoadAvg float64 `json:"loadAvg"`
	// BridgeCalls is how many requests the Bridge answered, and
	// ServeCPUMsPerCall herald serve's CPU time per call (ms).
	BridgeCalls       int64   `json:"bridgeCalls"`
	ServeCPUMsPerCall float64 `json:"serveCpuMsPerBridgeCall"`
	// NATS* are the NATS process's figures with Config.NATSCommand (the
	// figures above are then herald serve's alone).
	NATSPeakRSSBytes  uint64  `json:"natsPeakRssBytes,omitempty"`
	NATSPeakAnonBytes uint64  `json:"natsPeakAnonBytes,omitempty"`
	NATSCPUSeconds    float64 `json:"natsCpuSeconds,omitempty"`
}

// AudienceResult is the audience set-up through the API.
type AudienceResult struct {
	Subscribers   int     `json:"subscribers"`
	Subscriptions int     `json:"subscriptions"`
	Requests      int     `json:"requests"`
	Seconds       float64 `json:"seconds"`
	RequestsPerS  float64 `json:"requestsPerSecond"`
	Process
}

// FanoutResult is one topic trigger to N subscribers.
type FanoutResult struct {
	Subscribers int `json:"subscribers"`
	// PostMs is how long POST /v1/events took to answer (the fan-out).
	PostMs float64 `json:"postMs"`
	// FirstMs and LastMs are the arrivals of the first and the last
	// message at the sink, from the POST.
	FirstMs  float64 `json:"firstMs"`
	LastMs   float64 `json:"lastMs"`
	RunsPerS float64 `json:"runsPerSecond"`
	// Deciles is the pace of each tenth of the audience in arrival
	// order: does a large fan-out slow down as it goes?
	Deciles    []Decile `json:"deciles,omitempty"`
	Messages   int      `json:"messages"`
	Duplicates int      `json:"duplicates"`
	ServeCPUMs float64  `json:"serveCpuMsPerRun"`
	DiskPerRun float64  `json:"diskBytesPerRun"`
	Process
}

// Decile is one tenth of a fan-out's messages: when its last one
// arrived, from the POST, and the pace over the tenth (from the end of the
// tenth before, or from the POST for the first).
type Decile struct {
	Messages int     `json:"messages"`
	AtMs     float64 `json:"atMs"`
	RunsPerS float64 `json:"runsPerSecond"`
}

// decilesOf is the Deciles of n messages whose tenths arrived at tenths,
// from start.
func decilesOf(n int, start time.Time, tenths []time.Time) []Decile {
	out := make([]Decile, 0, len(tenths))
	prevAt, prevN := start, 0
	for i, at := range tenths {
		got := (i + 1) * n / 10
		d := Decile{Messages: got, AtMs: ms(at.Sub(start))}
		if el := at.Sub(prevAt).Seconds(); el > 0 {
			d.RunsPerS = float64(got-prevN) / el
		}
		out = append(out, d)
		prevAt, prevN = at, got
	}
	return out
}

// Spread is a distribution of latencies, in milliseconds.
type Spread struct {
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	MeanMs float64 `json:"meanMs"`
}

// spreadOf is the Spread of sorted, latencies in milliseconds in
// ascending order (at least one).
func spreadOf(sorted []float64) Spread {
	return Spread{P50Ms: percentile(sorted, 50), P95Ms: percentile(sorted, 95), P99Ms: percentile(sorted, 99),
		MaxMs: sorted[len(sorted)-1], MeanMs: mean(sorted)}
}

// LatencyResult is sequential single-subscriber triggers.
type LatencyResult struct {
	Triggers int `json:"triggers"`
	// Trigger → message in the sink.
	Spread
	// PostP50Ms is how long the POST itself took (median).
	PostP50Ms  float64 `json:"postP50Ms"`
	Duplicates int     `json:"duplicates"`
	DiskPerRun float64 `json:"diskBytesPerRun"`
	Process
}

// IndividualResult is many single-subscriber triggers from concurrent
// clients, each client posting its next as soon as the last is answered.
type IndividualResult struct {
	Triggers int `json:"triggers"`
	Clients  int `json:"clients"`
	// PostsSeconds is how long the triggers took to be answered, all of
	// them; LastMs when the last message arrived, from the first POST.
	PostsSeconds float64 `json:"postsSeconds"`
	LastMs       float64 `json:"lastMs"`
	RunsPerS     float64 `json:"runsPerSecond"`
	// Trigger (its POST sent) → its message in the sink.
	Spread
	// PostP50Ms and PostP99Ms are how long a POST took.
	PostP50Ms  float64 `json:"postP50Ms"`
	PostP99Ms  float64 `json:"postP99Ms"`
	Messages   int     `json:"messages"`
	Duplicates int     `json:"duplicates"`
	ServeCPUMs float64 `json:"serveCpuMsPerRun"`
	DiskPerRun float64 `json:"diskBytesPerRun"`
	Process
}

// RecoveryResult is a topic fan-out whose herald serve was killed
// (SIGKILL) once half of its messages arrived, then restarted on the same
// data directory.
type RecoveryResult struct {
	Runs int `json:"runs"`
	// KilledAtMessages is how many messages had arrived at the kill;
	// KilledAtMs when, from the POST. PostAnswered reports whether the
	// trigger was answered before.
	KilledAtMessages int     `json:"killedAtMessages"`
	KilledAtMs       float64 `json:"killedAtMs"`
	PostAnswered     bool    `json:"postAnsweredBeforeKill"`
	// ReadyMs is how long the restarted process took to answer /readyz;
	// RecoveryMs the time from the restart to the last subscriber's
	// first message.
	ReadyMs    float64 `json:"readyMs"`
	RecoveryMs float64 `json:"recoveryMs"`
	// BoundMs is AckWait + 5 s; WithinBound whether RecoveryMs kept to it.
	AckWaitMs   float64 `json:"ackWaitMs"`
	BoundMs     float64 `json:"boundMs"`
	WithinBound bool    `json:"withinBound"`
	// Messages is every message of the fan-out; Distinct the recipients
	// who got one; Duplicates the messages beyond the first of a
	// recipient; Missing the subscribers who got none (both must be 0).
	// Of the duplicates, SameMessageID carried the Message-ID of the
	// recipient's first copy (a send taken over after the kill, which a
	// mail client drops: delivery's documented SMTP caveat), OtherMessageID
	// another one (a second send).
	Messages       int `json:"messages"`
	Distinct       int `json:"distinct"`
	Duplicates     int `json:"duplicates"`
	SameMessageID  int `json:"duplicatesWithTheFirstMessageId"`
	OtherMessageID int `json:"duplicatesWithAnotherMessageId"`
	Missing        int `json:"missing"`
	// KilledPeakRSSBytes is the killed process's peak RSS; the Process
	// figures' RSS is the restarted one's, their CPU both processes'.
	KilledPeakRSSBytes uint64 `json:"killedPeakRssBytes"`
	Process
}

// TimersResult is runs that each sleep, then run a step.
type TimersResult struct {
	Runs         int     `json:"runs"`
	DelayMs      float64 `json:"delayMs"`
	SpreadMs     float64 `json:"spreadMs,omitempty"`
	SleepingPeak int     `json:"sleepingAtOnce"`
	// DueOverMs is how long the delays' ends spread over, first to last:
	// the runs resume at Runs/DueOverMs per millisecond or fall behind.
	DueOverMs float64 `json:"dueOverMs"`
	// Lateness of the step after the delay, executing at the Bridge,
	// against the delay's until; milliseconds.
	LateP50Ms  float64 `json:"latenessP50Ms"`
	LateP95Ms  float64 `json:"latenessP95Ms"`
	LateP99Ms  float64 `json:"latenessP99Ms"`
	LateMaxMs  float64 `json:"latenessMaxMs"`
	Early      int     `json:"early"`
	PostMs     float64 `json:"postMs"`
	Seconds    float64 `json:"seconds"`
	DiskPerRun float64 `json:"diskBytesPerRun"`
	Process
}

// APIResult is the subscriber API under concurrent clients.
type APIResult struct {
	Clients int `json:"clients"`
	// UpsertsPerS: PUT /v1/subscribers/{id}, each answer checked to carry
	// the value just written.
	UpsertsPerS float64 `json:"upsertsPerSecond"`
	// GetsPerS: GET /v1/subscribers/{id}, each checked to carry the last
	// value this client wrote.
	GetsPerS float64 `json:"getsPerSecond"`
	// PairsPerS: a PUT then a GET of the same subscriber that must see it.
	PairsPerS   float64 `json:"putThenGetPerSecond"`
	UpsertP99Ms float64 `json:"upsertP99Ms"`
	GetP99Ms    float64 `json:"getP99Ms"`
	// Violations counts answers that did not show the client's own last
	// write (must be 0).
	Violations int     `json:"readYourWritesViolations"`
	DiskPerPut float64 `json:"diskBytesPerUpsert"`
	TotalPuts  int     `json:"upserts"`
	TotalGets  int     `json:"gets"`
	Process
}

// percentile returns the p-th percentile (0–100) of sorted values
// (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sortedCopy(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// WriteText writes the result as Markdown tables, one section per
// scenario, the sync modes side by side.
func (r *Result) WriteText(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d CPUs, %s, Linux %s, %d MB memory (%d MB available); load average %.2f at start; %.0f s in all.\n",
		m.CPUs, m.GoVersion, m.Kernel, m.MemTotalMB, m.MemFreeMB, m.LoadAtStart, r.Seconds)
	if r.Command != "" {
		fmt.Fprintf(w, "Command: `%s`\n", r.Command)
	}
	fmt.Fprintf(w, "Workflow of the scenarios that send: %s.\n", stepsText(r.Steps))
	for _, mode := range r.Modes {
		if a := mode.Audience; a != nil {
			fmt.Fprintf(w, "\nAudience set-up (%s): %d subscribers, %d subscriptions, %d API requests in %.1f s (%.0f req/s); peak RSS %.0f MB; load %.2f\n",
				mode.Sync, a.Subscribers, a.Subscriptions, a.Requests, a.Seconds, a.RequestsPerS, mb(a.PeakRSSBytes), a.LoadAvg)
		}
	}
	writeTable(w, fmt.Sprintf("Fan-out: one topic trigger, %s, POST → last message in the sink", stepsText(r.Steps)),
		"| sync | subscribers | POST answered | last message | runs/s | serve CPU ms/run | serve CPU ms/Bridge call | peak RSS | peak anonymous | NATS peak RSS (anonymous), CPU | disk/run | duplicates | load |",
		r.fanoutRows())
	writeTable(w, "Fan-out by tenths: when each tenth of the messages was in the sink, and the pace over it",
		"| sync | subscribers | 10 % | 20 % | 30 % | 40 % | 50 % | 60 % | 70 % | 80 % | 90 % | 100 % |",
		r.decileRows())
	var lat, ind, rec, tim, api []string
	for _, mode := range r.Modes {
		if in := mode.Individual; in != nil {
			ind = append(ind, fmt.Sprintf("| %s | %d | %d | %.2f s | %.2f s | %.0f | %.2f | %.3f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | %d | %.0f MB (%.0f) | %s | %.0f B | %.2f |",
				mode.Sync, in.Triggers, in.Clients, in.PostsSeconds, in.LastMs/1000, in.RunsPerS, in.ServeCPUMs, in.ServeCPUMsPerCall,
				in.P50Ms, in.P95Ms, in.P99Ms, in.MaxMs, in.PostP50Ms, in.PostP99Ms, in.Duplicates, mb(in.PeakRSSBytes), mb(in.PeakAnonBytes),
				natsCell(in.Process), in.DiskPerRun, in.LoadAvg))
		}
		if rc := mode.Recovery; rc != nil {
			within := "yes"
			if !rc.WithinBound {
				within = "**no**"
			}
			rec = append(rec, fmt.Sprintf("| %s | %d | %d at %.2f s | %.2f s | %.2f s | %.1f s | %s | %d | %d (%d same Message-ID) | %d | %.0f MB | %.2f |",
				mode.Sync, rc.Runs, rc.KilledAtMessages, rc.KilledAtMs/1000, rc.ReadyMs/1000, rc.RecoveryMs/1000, rc.BoundMs/1000, within,
				rc.Distinct, rc.Duplicates, rc.SameMessageID, rc.Missing, mb(rc.KilledPeakRSSBytes), rc.LoadAvg))
		}
		if l := mode.Latency; l != nil {
			lat = append(lat, fmt.Sprintf("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f MB | %.0f B | %.2f |",
				mode.Sync, l.Triggers, l.P50Ms, l.P95Ms, l.P99Ms, l.MaxMs, l.MeanMs, l.PostP50Ms, mb(l.PeakRSSBytes), l.DiskPerRun, l.LoadAvg))
		}
		if t := mode.Timers; t != nil {
			delay := fmt.Sprintf("%.0f", t.DelayMs)
			if t.SpreadMs > 0 {
				delay += fmt.Sprintf(" + 0…%.0f", t.SpreadMs)
			}
			tim = append(tim, fmt.Sprintf("| %s | %d | %d | %s | %.1f | %.1f | %.1f | %.1f | %d | %.0f MB | %.0f B | %.2f |",
				mode.Sync, t.Runs, t.SleepingPeak, delay, t.LateP50Ms, t.LateP95Ms, t.LateP99Ms, t.LateMaxMs, t.Early, mb(t.PeakRSSBytes), t.DiskPerRun, t.LoadAvg))
		}
		if a := mode.API; a != nil {
			api = append(api, fmt.Sprintf("| %s | %d | %.0f | %.0f | %.0f | %.1f | %.1f | %d | %.0f MB | %.0f B | %.2f |",
				mode.Sync, a.Clients, a.UpsertsPerS, a.GetsPerS, a.PairsPerS, a.UpsertP99Ms, a.GetP99Ms, a.Violations, mb(a.PeakRSSBytes), a.DiskPerPut, a.LoadAvg))
		}
	}
	writeTable(w, "Latency: sequential single-subscriber triggers, POST → message in the sink (ms)",
		"| sync | triggers | p50 | p95 | p99 | max | mean | POST p50 | peak RSS | disk/run | load |",
		lat)
	writeTable(w, fmt.Sprintf("Individual: single-subscriber triggers from concurrent clients, %s; trigger → message in the sink (ms)", stepsText(r.Steps)),
		"| sync | triggers | clients | all answered | last message | runs/s | serve CPU ms/run | serve CPU ms/Bridge call | p50 | p95 | p99 | max | POST p50 / p99 | duplicates | peak RSS (anonymous) | NATS | disk/run | load |",
		ind)
	writeTable(w, "Recovery: herald serve killed (SIGKILL) half-way through a topic fan-out, restarted on the same data",
		"| sync | runs | killed at (messages, time) | ready after | restart → last subscriber's message | bound (AckWait + 5 s) | within | subscribers served | duplicates | missing | killed process's peak RSS | load |",
		rec)
	writeTable(w, "Timers: runs sleeping at once, lateness of the step after the delay at the Bridge (ms)",
		"| sync | runs | asleep at once | delay ms | p50 | p95 | p99 | max | early | peak RSS | disk/run | load |",
		tim)
	writeTable(w, "API: subscribers, read-your-writes checked on every answer",
		"| sync | clients | upserts/s | GETs/s | PUT-then-GET/s | upsert p99 ms | GET p99 ms | RYW violations | peak RSS | disk/upsert | load |",
		api)
}

// stepsText describes the workflow of Config.Steps.
func stepsText(steps int) string {
	if steps == 2 {
		return "a `run` step (a record of ~200 bytes) then a `send` step per run"
	}
	return "one `send` step per run"
}

// natsCell is the NATS process's peak RSS (anonymous) and CPU, or "in
// serve" when NATS was embedded in herald serve.
func natsCell(p Process) string {
	if p.NATSPeakRSSBytes == 0 {
		return "in serve"
	}
	return fmt.Sprintf("%.0f (%.0f) MB, %.1f s", mb(p.NATSPeakRSSBytes), mb(p.NATSPeakAnonBytes), p.NATSCPUSeconds)
}

func (r *Result) fanoutRows() []string {
	var rows []string
	for _, mode := range r.Modes {
		for _, f := range mode.Fanout {
			rows = append(rows, fmt.Sprintf("| %s | %d | %.2f s | %.2f s | %.0f | %.2f | %.3f | %.0f MB | %.0f MB | %s | %.0f B | %d | %.2f |",
				mode.Sync, f.Subscribers, f.PostMs/1000, f.LastMs/1000, f.RunsPerS, f.ServeCPUMs, f.ServeCPUMsPerCall, mb(f.PeakRSSBytes), mb(f.PeakAnonBytes),
				natsCell(f.Process), f.DiskPerRun, f.Duplicates, f.LoadAvg))
		}
	}
	return rows
}

func (r *Result) decileRows() []string {
	var rows []string
	for _, mode := range r.Modes {
		for _, f := range mode.Fanout {
			if len(f.Deciles) == 0 {
				continue
			}
			row := fmt.Sprintf("| %s | %d |", mode.Sync, f.Subscribers)
			for _, d := range f.Deciles {
				row += fmt.Sprintf(" %.1f s, %.0f/s |", d.AtMs/1000, d.RunsPerS)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// writeTable writes a section of WriteText: its title, then a Markdown
// table of header and rows, unless there are no rows.
func writeTable(w io.Writer, title, header string, rows []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### %s\n\n", title)
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, "|"+strings.Repeat("---|", strings.Count(header, "|")-1))
	fmt.Fprintln(w, strings.Join(rows, "\n"))
}
