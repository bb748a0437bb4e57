package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/runstate"
	"github.com/heraldhq/herald/service"
)

// checkCmd is `herald check --bridge URL …`: it replays the tenant's
// recorded runs against a candidate Bridge through POST /v1/checks (as the
// tenant of the key), prints the runs that would break, and fails when an
// unfinished one would: the gate of a deploy.
func checkCmd(fs *flag.FlagSet) action {
	var f service.Flags
	var bridgeURL, key, secret, workflow, since string
	var max int
	fs.StringVar(&bridgeURL, "bridge", "", "the candidate Bridge's URL (a preview deploy), required")
	fs.StringVar(&key, "key", "", "the tenant's API key (HERALD_API_KEY)")
	fs.StringVar(&f.HTTPAddr, "http", "", "the server: its REST API address, or its base URL (https://herald.example.com) (HERALD_HTTP_ADDR)")
	fs.StringVar(&secret, "secret", "", "the candidate's signing secret; default: the tenant's")
	fs.StringVar(&workflow, "workflow", "", "check the runs of this workflow only")
	fs.StringVar(&since, "since", "", "check the runs finished within this duration too (default 168h)")
	fs.IntVar(&max, "max", 0, "check at most this many runs, unfinished ones first (default 1000)")
	return func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		if bridgeURL == "" {
			return &usageError{msg: "--bridge is required"}
		}
		if key == "" {
			key = os.Getenv("HERALD_API_KEY")
		}
		if key == "" {
			return &usageError{msg: "--key or HERALD_API_KEY is required"}
		}
		if since != "" {
			if d, err := time.ParseDuration(since); err != nil || d <= 0 {
				return &usageError{msg: fmt.Sprintf("--since %q is not a positive duration", since)}
			}
		}
		addr := f.HTTPAddr
		if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
			cfg, err := toolConfig(f)
			if err != nil {
				return err
			}
			addr = localAddr(cfg.HTTPAddr)
		}
		body := map[string]any{"bridgeUrl": bridgeURL}
		for k, v := range map[string]string{"signingSecret": secret, "workflowId": workflow, "since": since} {
			if v != "" {
				body[k] = v
			}
		}
		if max != 0 {
			body["max"] = max
		}
		var rep checkReport
		c := &adminClient{addr: addr, token: key}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := c.call(ctx, http.MethodPost, "/v1/checks", body, &rep); err != nil {
			return err
		}
		return printCheck(stdout, rep)
	}
}

// checkReport is the answer of POST /v1/checks.
type checkReport struct {
	Checked  int `json:"checked"`
	OK       int `json:"ok"`
	Breaking []struct {
		RunID      string `json:"runId"`
		WorkflowID string `json:"workflowId"`
		Status     string `json:"status"`
		Position   int    `json:"position"`
		Recorded   struct {
			StepID string `json:"stepId"`
			Type   string `json:"type"`
		} `json:"recorded"`
		Candidate struct {
			StepID string `json:"stepId"`
			Type   string `json:"type"`
			Error  string `json:"error"`
		} `json:"candidate"`
	} `json:"breaking"`
}

// errUnfinishedBreak fails herald check: a deploy of the candidate breaks
// a run in flight.
var errUnfinishedBreak = errors.New("check: the candidate breaks unfinished runs")

// printCheck prints the report as a table and fails when an unfinished
// run would break.
func printCheck(w io.Writer, rep checkReport) error {
	fmt.Fprintf(w, "checked %d runs: %d ok, %d breaking\n", rep.Checked, rep.OK, len(rep.Breaking))
	if len(rep.Breaking) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tSTEP\tRECORDED\tCANDIDATE")
	unfinished := 0
	for _, b := range rep.Breaking {
		if !runstate.Status(b.Status).Finished() {
			unfinished++
		}
		rec := "-"
		if b.Recorded.StepID != "" {
			rec = b.Recorded.StepID + " (" + b.Recorded.Type + ")"
		}
		cand := b.Candidate.Error
		if b.Candidate.StepID != "" {
			cand = b.Candidate.StepID + " (" + b.Candidate.Type + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", b.RunID, b.WorkflowID, b.Status, b.Position, rec, cand)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unfinished > 0 {
		return fmt.Errorf("%w: %d of them", errUnfinishedBreak, unfinished)
	}
	return nil
}
