package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// providers is one loopback server speaking the APIs of Twilio, Slack,
// FCM (with its token endpoint) and a webhook receiver, recording the
// path of every request it accepted.
type providers struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int // by provider: sms, chat, push, webhook
}

func startProviders(t *testing.T) *providers {
	p := &providers{hits: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		hit := ""
		switch {
		case strings.HasSuffix(r.URL.Path, "/Messages.json"):
			hit = "sms"
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"sid":"SM0123456789abcdef0123456789abcdef"}`)
		case r.URL.Path == "/api/chat.postMessage":
			hit = "chat"
			_, _ = io.WriteString(w, `{"ok":true,"channel":"C0123","ts":"1700000000.000100"}`)
		case r.URL.Path == "/token":
			_, _ = io.WriteString(w, `{"access_token":"ya29.test","expires_in":3599,"token_type":"Bearer"}`)
		case strings.HasSuffix(r.URL.Path, "/messages:send"):
			hit = "push"
			_, _ = io.WriteString(w, `{"name":"projects/acme-test/messages/1"}`)
		case r.URL.Path == "/hook":
			hit = "webhook"
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
		if hit != "" {
			p.mu.Lock()
			p.hits[hit]++
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *providers) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[kind]
}

// serviceAccount is an FCM service account whose tokens come from
// tokenURI, with a fresh RSA key.
func serviceAccount(t *testing.T, tokenURI string) string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "acme-test",
		"private_key_id": "k1", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "herald@acme-test.iam.gserviceaccount.com", "token_uri": tokenURI})
	return string(b)
}

// startExample builds this example Bridge as a program, runs it on addr
// with secret until the test ends, and returns once it answers.
func startExample(t *testing.T, addr, secret string) {
	bin := filepath.Join(t.TempDir(), "bridge")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "HERALD_SIGNING_SECRET="+secret, "BRIDGE_ADDR="+addr,
		"DIGEST_RECIPIENT=ops", "DIGEST_SCHEDULE=* * * * * *", // a tick every second
		"ACTIVITY_DIGEST_CRON="+activityCron)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	testwait.For(t, "the example Bridge to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
}

// TestEveryWorkflowThroughHerald builds the example Bridge, binds it to a
// running herald service with a channel of every kind (email failing over
// from a dead SES endpoint to SMTP, SMS, chat and push on loopback servers
// speaking their providers' APIs, a webhook receiver, the in-app inbox),
// and drives each of its workflows to the end its doc page describes.
func TestEveryWorkflowThroughHerald(t *testing.T) {
	// Beside the TypeScript example's test: each waits on its digests'
	// cron ticks and on its Bridge.
	t.Parallel()
	mail := testsmtp.Start(t, testsmtp.Options{})
	prov := startProviders(t)
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": "http://herald.test"}})
	_, key := h.Tenant("Acme")
	do := func(method, path string, body any, want int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	channel := func(channelKey string, priority int, config map[string]any) {
		do("POST", "/v1/channels", map[string]any{"channelKey": channelKey, "priority": priority, "config": config}, http.StatusCreated)
	}
	channel("email-ses", 0, map[string]any{"region": "eu-west-1", "accessKeyId": "AKIDEXAMPLE", "secretAccessKey": "secret",
		"fromEmail": "hello@acme.test", "endpoint": "http://" + testnet.FreeAddr(t)}) // nothing listens: fails over
	channel("email-smtp", 1, map[string]any{"host": "127.0.0.1", "port": mail.Port, "fromEmail": "hello@acme.test"})
	channel("sms-twilio", 0, map[string]any{"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "token",
		"from": "+15550000000", "apiBaseUrl": prov.URL})
	channel("chat-slack", 0, map[string]any{"botToken": "xoxb-test", "apiBaseUrl": prov.URL})
	channel("push-fcm", 0, map[string]any{"serviceAccountJson": serviceAccount(t, prov.URL+"/token"), "apiBaseUrl": prov.URL})
	channel("webhook", 0, map[string]any{"url": prov.URL + "/hook"})
	channel("in-app", 0, map[string]any{})

	addr := testnet.FreeAddr(t)
	var bind struct{ SigningSecret string }
	do("PUT", "/v1/bridge", map[string]string{"webhookUrl": "http://" + addr + "/"}, http.StatusOK).JSON(t, &bind)
	startExample(t, addr, bind.SigningSecret)
	var synced struct{ Workflows []map[string]any }
	do("POST", "/v1/sync", nil, http.StatusOK).JSON(t, &synced)
	if len(synced.Workflows) != 12 {
		t.Fatalf("sync: %+v", synced)
	}

	for id, contacts := range map[string]map[string][]string{
		"ada": {"email": {"ada@example.com"}, "sms": {"+14155550123"}, "chat": {"U0123ABCD"}, "push": {"device-token-ada"}},
		"bob": {"email": {"bob@example.com"}},
		"sam": {"sms": {"+14155550199"}},
		"ops": {"email": {"ops@example.com"}},
	} {
		do("PUT", "/v1/subscribers/"+id, map[string]any{"contacts": contacts, "attributes": map[string]any{"firstName": id}}, http.StatusCreated)
	}
	// price_alert, morning_tip, activity_digest and invoice_paid, the
	// last three driven by feat.finish below.
	feat := startFeatures(t, h, key, mail)
	trigger := func(workflow, subscriber string, payload any) string {
		t.Helper()
		var tr struct{ Runs []struct{ RunID string } }
		do("POST", "/v1/events", map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": subscriber},
			"payload": payload}, http.StatusAccepted).JSON(t, &tr)
		if len(tr.Runs) != 1 {
			t.Fatalf("trigger %s: %+v", workflow, tr)
		}
		return tr.Runs[0].RunID
	}
	completed := func(runID string) map[string]any {
		t.Helper()
		run := h.WaitRun(key, runID, "completed", "failed", "cancelled")
		if run["status"] != "completed" {
			t.Fatalf("run %s of %s: %v", runID, run["workflowId"], run)
		}
		return run
	}
	mailTo := func(addr, subject string) string {
		t.Helper()
		var data string
		testwait.For(t, fmt.Sprintf("mail to %s about %q", addr, subject), func() bool {
			for _, m := range mail.Messages() {
				if len(m.To) == 1 && m.To[0] == addr && strings.Contains(string(m.Data), subject) {
					data = string(m.Data)
					return true
				}
			}
			return false
		})
		return data
	}
	inbox := func(subscriber, subject string) {
		t.Helper()
		r := do("GET", "/v1/subscribers/"+subscriber+"/inbox", nil, http.StatusOK)
		if !strings.Contains(string(r.Body), subject) {
			t.Fatalf("%s's inbox lacks %q: %s", subscriber, subject, r.Body)
		}
	}

	// welcome.
	{
		completed(trigger("welcome", "ada", nil))
		mailTo("ada@example.com", "Welcome to Acme, ada!")
		completed(trigger("welcome", "sam", nil)) // no e-mail address: a text instead
		if prov.count("sms") != 1 {
			t.Errorf("sam's welcome text: %d SMS sent", prov.count("sms"))
		}
		// Its French translation, edited through the API: a subscriber
		// in fr-CA gets the French words.
		do("PUT", "/v1/workflows/welcome/controls/welcome-email?locale=fr",
			map[string]any{"subject": "Bienvenue chez Acme", "greeting": "Bonjour"}, http.StatusOK)
		do("PUT", "/v1/subscribers/marie", map[string]any{"locale": "fr-CA", "contacts": map[string]any{"email": []string{"marie@example.com"}},
			"attributes": map[string]any{"firstName": "marie"}}, http.StatusCreated)
		completed(trigger("welcome", "marie", nil))
		mailTo("marie@example.com", "Bienvenue chez Acme, marie!")
	}
	// approval.
	{
		runID := trigger("approval", "ada", map[string]any{"title": "Expense #42", "approverId": "bob", "timeout": "1h"})
		h.WaitRun(key, runID, "waiting")
		mailTo("bob@example.com", "Approval needed: Expense #42")
		do("POST", "/v1/events/"+runID+"/signal", map[string]any{"event": "approved", "payload": map[string]any{"by": "bob"}}, http.StatusAccepted)
		completed(runID)
		mailTo("ada@example.com", "Approved: Expense #42")
	}
	// order_shipped on every kind, email failing over.
	{
		runID := trigger("order_shipped", "ada", map[string]any{"orderId": "A-1001", "carrier": "Parcelco"})
		completed(runID)
		mailTo("ada@example.com", "Your order A-1001 has shipped")
		for _, kind := range []string{"sms", "chat", "push", "webhook"} {
			if prov.count(kind) == 0 {
				t.Errorf("the %s provider received nothing", kind)
			}
		}
		inbox("ada", "Order A-1001 has shipped")
		var rows struct{ Data []map[string]any }
		do("GET", "/v1/deliveries?runId="+runID, nil, http.StatusOK).JSON(t, &rows)
		tried := map[string]any{}
		for _, row := range rows.Data {
			tried[row["channelKey"].(string)] = row["status"]
		}
		if tried["email-ses"] != "failed" || tried["email-smtp"] != "sent" {
			t.Errorf("the email did not fail over from SES to SMTP: %v", tried)
		}
	}
	// reminder after a delay.
	{
		completed(trigger("reminder", "ada", map[string]any{"text": "Renew your plan", "after": "1s"}))
		inbox("ada", "Renew your plan")
	}
	// comment_digest.
	{
		var runs []string
		for i := range 3 {
			runs = append(runs, trigger("comment_digest", "ada", map[string]any{"thread": "t1", "author": "user" + strconv.Itoa(i),
				"text": "comment " + strconv.Itoa(i), "window": "10s"}))
		}
		// The run that reached the digest first collects; the others join
		// it (a window long enough for a loaded machine to start them).
		ended := map[any]int{}
		for _, r := range runs {
			ended[h.WaitRun(key, r, "digested", "completed", "failed")["status"]]++
		}
		if ended["completed"] != 1 || ended["digested"] != 2 {
			t.Errorf("the three digest runs ended %v, want one completed and two digested", ended)
		}
		mailTo("ada@example.com", "3 new comments on t1")
	}
	// newsletter with footer links and default channels.
	{
		run := completed(trigger("newsletter", "ada", map[string]any{"title": "Acme in May", "body": "Dark mode is here."}))
		body := mailTo("ada@example.com", "Acme in May")
		if !strings.Contains(body, "http://herald.test/p/") || !strings.Contains(body, "http://herald.test/u/") {
			t.Errorf("the footer lacks the links:\n%s", body)
		}
		steps, _ := run["steps"].([]any)
		last, _ := steps[len(steps)-1].(map[string]any)
		if out, _ := last["output"].(map[string]any); out["reason"] != "preference" {
			t.Errorf("the in-app copy, off by default, was not skipped: %v", last)
		}
	}
	// password_reset is critical.
	{
		do("PATCH", "/v1/subscribers/ada/preferences", map[string]any{"channels": map[string]bool{"email": false}}, http.StatusOK)
		completed(trigger("password_reset", "ada", map[string]any{"resetUrl": "https://acme.test/reset/x"}))
		body := mailTo("ada@example.com", "Reset your password")
		if !strings.Contains(body, "http://herald.test/p/") || strings.Contains(body, "/u/") {
			t.Errorf("a critical e-mail's footer has the preference link only:\n%s", body)
		}
	}
	// daily_digest on its schedule.
	{
		testwait.For(t, "a daily_digest run completed", func() bool {
			var list struct{ Data []map[string]any }
			do("GET", "/v1/runs?status=completed&limit=500", nil, http.StatusOK).JSON(t, &list)
			return slices.ContainsFunc(list.Data, func(r map[string]any) bool { return r["workflowId"] == "daily_digest" })
		})
		mailTo("ops@example.com", "Acme daily digest for")
	}
	feat.finish()
}

// TestTypeScriptExampleThroughHerald builds the TypeScript example Bridge
// (examples/typescript, on the SDK of sdk/typescript), binds it to a running
// herald service with an email channel, and drives each of its workflows
// as the Go example's are driven: welcome, then the throttle, the delay
// until a local time, the cron digest and the payload schema. It needs node
// and npm; without them it is skipped (CI installs both, see .ci/run).
func TestTypeScriptExampleThroughHerald(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	began := time.Now()
	script := buildTypeScriptExample(t)
	t.Logf("the SDK and the example built in %v", time.Since(began).Round(time.Millisecond))

	mail := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, mail.Port)
	addr := testnet.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	var bind struct{ SigningSecret string }
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "http://" + addr + "/"}); r.Status != http.StatusOK {
		t.Fatalf("bridge: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &bind)
	}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "HERALD_SIGNING_SECRET="+bind.SigningSecret, "BRIDGE_PORT="+port,
		"ACTIVITY_DIGEST_CRON="+activityCron)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	testwait.For(t, "the TypeScript example Bridge to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	r := h.Do("POST", "/v1/sync", key, nil)
	var synced struct{ Workflows []struct{ WorkflowID string } }
	r.JSON(t, &synced)
	var ids []string
	for _, w := range synced.Workflows {
		ids = append(ids, w.WorkflowID)
	}
	if r.Status != http.StatusOK || strings.Join(ids, " ") != "welcome price_alert morning_tip activity_digest invoice_paid" {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}

	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}},
		"attributes": map[string]any{"firstName": "Ada", "plan": "pro"}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	t.Logf("the example Bridge answers and is synced at %v", time.Since(began).Round(time.Millisecond))
	feat := startFeatures(t, h, key, mail)
	feat.completed(feat.trigger("welcome", "ada", nil))
	feat.waitMail("ada@example.com", "Welcome to Acme, Ada!")
	// Its French translation, edited through the API: a subscriber in
	// fr-CA gets the French words.
	if r := h.Do("PUT", "/v1/workflows/welcome/controls/welcome-email?locale=fr", key,
		map[string]any{"subject": "Bienvenue chez Acme", "greeting": "Bonjour"}); r.Status != http.StatusOK {
		t.Fatalf("controls: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/subscribers/marie", key, map[string]any{"locale": "fr-CA", "contacts": map[string]any{"email": []string{"marie@example.com"}},
		"attributes": map[string]any{"firstName": "Marie", "plan": "pro"}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	feat.completed(feat.trigger("welcome", "marie", nil))
	feat.waitMail("marie@example.com", "Bienvenue chez Acme, Marie!")
	// A preview through the TypeScript Bridge: the profile step stands
	// for its sample (Ada), the email is rendered in French, nothing sent.
	sent := len(mail.Messages())
	var pv struct {
		Step struct{ Content struct{ Subject string } }
	}
	if r := h.Do("POST", "/v1/workflows/welcome/preview", key, map[string]any{"stepId": "welcome-email", "subscriberId": "marie"}); r.Status != http.StatusOK {
		t.Fatalf("preview: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &pv); pv.Step.Content.Subject != "Bienvenue chez Acme, Ada!" {
		t.Fatalf("preview: %s", r.Body)
	}
	if len(mail.Messages()) != sent {
		t.Fatal("a preview sent a message")
	}
	t.Logf("welcome, its translation and its preview done at %v", time.Since(began).Round(time.Millisecond))
	feat.finish()
}

// buildTypeScriptExample installs and compiles the SDK and the example
// when a source is newer than its output (make test-ts has usually just
// built the SDK) and returns the example's script.
func buildTypeScriptExample(t *testing.T) string {
	t.Helper()
	sdk, example := filepath.Join("..", "..", "sdk", "typescript"), filepath.Join("..", "typescript")
	for _, dir := range []string{sdk, example} {
		out := filepath.Join(dir, "dist", "index.js")
		if dir == example {
			out = filepath.Join(dir, "dist", "main.js")
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
			npm(t, dir, "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error")
		}
		if stale(t, out, filepath.Join(dir, "src"), filepath.Join(dir, "package.json")) {
			npm(t, dir, "run", "build", "--silent")
		}
	}
	return filepath.Join(example, "dist", "main.js")
}

func npm(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// stale reports whether output is missing or older than a file under roots.
func stale(t *testing.T, output string, roots ...string) bool {
	t.Helper()
	st, err := os.Stat(output)
	if err != nil {
		return true
	}
	found := false
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
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
