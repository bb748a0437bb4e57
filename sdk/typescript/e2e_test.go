// Package typescript_test drives the TypeScript Bridge SDK end to end: a
// real herald service calls a Bridge served by a node process
// (test/e2e-bridge.ts) through every kind of step, and an e-mail arrives
// at an SMTP sink. It needs node and npm; without node it is skipped (CI
// installs both, see .ci/run).
package typescript_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

func TestTypeScriptBridgeE2E(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	script := buildBridge(t)

	sink := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("ts")
	h.MailChannel(key, sink.Port)
	port := freePort(t)
	bind, err := h.API(key).BindBridge(context.Background(), fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	stop := startBridge(t, node, script, bind.SigningSecret, port, "")

	for id, body := range map[string]any{
		"ada": map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}, "attributes": map[string]any{"firstName": "Ada"}},
		"bo":  map[string]any{"contacts": map[string]any{"email": []string{"bo@example.com"}}, "attributes": map[string]any{"firstName": "Bo"}},
	} {
		if r := h.Do("PUT", "/v1/subscribers/"+id, key, body); r.Status >= 300 {
			t.Fatalf("subscriber %s: %d %s", id, r.Status, r.Body)
		}
	}
	trigger := func(workflowID, subscriberID string, payload map[string]any) string {
		t.Helper()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": workflowID, "to": map[string]any{"subscriberId": subscriberID}, "payload": payload})
		runs, _ := r.Map(t)["runs"].([]any)
		if r.Status != 202 || len(runs) != 1 {
			t.Fatalf("trigger %s: %d %s", workflowID, r.Status, r.Body)
		}
		return runs[0].(map[string]any)["runId"].(string)
	}

	// A digest: the second run joins the window the first opened.
	b1 := trigger("batched", "ada", map[string]any{"n": 1})
	b2 := trigger("batched", "ada", map[string]any{"n": 2})
	// run, delay, waitForEvent answered by a signal, and an e-mail.
	j1 := trigger("journey", "ada", nil)
	j2 := trigger("journey", "bo", nil)
	h.WaitRun(key, j1, "waiting")
	h.WaitRun(key, j2, "waiting")
	if r := h.Do("POST", "/v1/events/"+j1+"/signal", key, map[string]any{"event": "confirmed", "payload": map[string]any{"by": "e2e"}}); r.Status != 202 {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	run := h.WaitRun(key, j1, "completed", "failed")
	var types []string
	for _, s := range run["steps"].([]any) {
		step := s.(map[string]any)
		types = append(types, step["type"].(string)+"/"+step["status"].(string))
	}
	if run["status"] != "completed" || strings.Join(types, " ") != "run/completed delay/completed waitForEvent/completed send/completed" {
		t.Fatalf("journey: %v", run)
	}
	first := h.WaitRun(key, b1, "completed", "digested", "failed")
	second := h.WaitRun(key, b2, "completed", "digested", "failed")
	if statuses := fmt.Sprint(first["status"], " ", second["status"]); statuses != "completed digested" && statuses != "digested completed" {
		t.Fatalf("digest runs: %v, %v", first, second)
	}
	waitMail(t, sink, "ada@example.com", "Subject: Hi Ada, confirmed by e2e")
	waitMail(t, sink, "ada@example.com", "Subject: 2 updates: ")

	// Before the deploy, herald checks it: the Bridge in place replays
	// every run; a candidate renaming the first step breaks the run in
	// flight at position 1. Neither writes to the log.
	before, err := h.Log().LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check := func(body map[string]any) map[string]any {
		t.Helper()
		r := h.Do("POST", "/v1/checks", key, body)
		if r.Status != 200 {
			t.Fatalf("check: %d %s", r.Status, r.Body)
		}
		return r.Map(t)
	}
	if rep := check(map[string]any{"bridgeUrl": bind.WebhookURL}); rep["checked"] != 4.0 || rep["ok"] != 4.0 {
		t.Fatalf("check against the Bridge in place: %v", rep)
	}
	candidatePort := freePort(t)
	startBridge(t, node, script, bind.SigningSecret, candidatePort, "changed")
	rep := check(map[string]any{"bridgeUrl": fmt.Sprintf("http://127.0.0.1:%d/", candidatePort)})
	found := false
	for _, b := range rep["breaking"].([]any) {
		b := b.(map[string]any)
		if b["runId"] == j2 {
			found = true
			if got := fmt.Sprint(b["status"], " ", b["position"], " ", b["recorded"], " ", b["candidate"]); got != "waiting 1 map[stepId:load type:run] map[stepId:load-v2 type:run]" {
				t.Errorf("the run in flight, checked: %s", got)
			}
		}
	}
	if !found || rep["checked"] != 4.0 {
		t.Fatalf("check against the changed Bridge: %v", rep)
	}
	if after, err := h.Log().LastSeq(context.Background()); err != nil || after != before {
		t.Fatalf("the checks wrote to the log: %d, then %d (%v)", before, after, err)
	}

	// A deploy that renames a completed step fails the run in flight.
	stop()
	startBridge(t, node, script, bind.SigningSecret, port, "changed")
	if r := h.Do("POST", "/v1/events/"+j2+"/signal", key, map[string]any{"event": "confirmed"}); r.Status != 202 {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	run = h.WaitRun(key, j2, "failed", "completed")
	e, _ := run["error"].(map[string]any)
	want := `step 1 was "load" (run) in the history, the code asked for "load-v2" (run)`
	if run["status"] != "failed" || e["code"] != "nondeterministic" || !strings.Contains(fmt.Sprint(e["message"]), want) {
		t.Fatalf("changed workflow: %v", run)
	}
}

// buildBridge compiles the package and the test Bridge when a source is
// newer than its output (make test-ts has usually just done it) and returns
// the script to run.
func buildBridge(t *testing.T) string {
	t.Helper()
	script := filepath.Join("build", "e2e-bridge.js")
	if _, err := os.Stat("node_modules"); err != nil {
		npm(t, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	}
	if newer(t, []string{"src", "test", "package.json"}, filepath.Join("dist", "index.js")) ||
		newer(t, []string{"src", "test", "package.json"}, script) {
		npm(t, "run", "build", "--silent")
		npm(t, "exec", "--", "tsc", "-p", "tsconfig.test.json")
	}
	return script
}

func npm(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("npm", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newer reports whether output is missing or older than a file under roots.
func newer(t *testing.T, roots []string, output string) bool {
	t.Helper()
	st, err := os.Stat(output)
	if err != nil {
		return true
	}
	found := false
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil && info.ModTime().After(st.ModTime()) {
					found = true
				}
			}
			return nil
		})
	}
	return found
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBridge runs the test Bridge on port and waits until it listens; the
// returned stop (also a cleanup) ends it.
func startBridge(t *testing.T, node, script, secret string, port int, variant string) (stop func()) {
	t.Helper()
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "HERALD_SIGNING_SECRET="+secret, fmt.Sprintf("PORT=%d", port), "VARIANT="+variant)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stop = func() {
		select {
		case <-done:
			return
		default:
		}
		close(done)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if stderr.Len() > 0 {
			t.Logf("bridge (%s) stderr:\n%s", variant, stderr.String())
		}
	}
	t.Cleanup(stop)
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening on ") {
				listening <- true
			}
		}
		listening <- false
	}()
	select {
	case ok := <-listening:
		if !ok {
			stop()
			t.Fatalf("the bridge exited before listening: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		stop()
		t.Fatal("the bridge did not listen within 30 s")
	}
	return stop
}

// waitMail waits until the sink received a message to rcpt whose data
// contains text.
func waitMail(t *testing.T, sink *testsmtp.Server, rcpt, text string) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("a message to %s with %q", rcpt, text), func() error {
		var got []string
		for _, m := range sink.Messages() {
			if len(m.To) > 0 && m.To[0] == rcpt && bytes.Contains(m.Data, []byte(text)) {
				return nil
			}
			got = append(got, fmt.Sprintf("%v: %.300s", m.To, m.Data))
		}
		return fmt.Errorf("got:\n%s", strings.Join(got, "\n"))
	})
}
