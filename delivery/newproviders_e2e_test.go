package delivery_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestChatFailoverTeamsToDiscord: through the running service, a chat
// send tries chat-teams first (its webhook answers 503: not posted), then
// chat-discord, whose message id the ledger records; each try is a row.
func TestChatFailoverTeamsToDiscord(t *testing.T) {
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	var teamsHits atomic.Int32
	teams := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		teamsHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(teams.Close)
	discord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/webhooks/1/tok" || r.URL.Query().Get("wait") != "true" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"id":"1180000000000000777"}`)
	}))
	t.Cleanup(discord.Close)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "chat-teams", "priority": 0,
		"config": map[string]any{"webhookUrl": teams.URL + "/workflows/1/invoke?sig=s"}}, 201)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "chat-discord", "priority": 1,
		"config": map[string]any{"webhookUrl": discord.URL + "/api/webhooks/1/tok"}}, 201)
	f.tenantCall("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"chat": []string{"C0123ABCD"}}}, 200)

	body := sendStep("run_chat", "post")
	body["channel"] = "chat"
	body["content"] = map[string]any{"body": "Deploy done"}
	res := f.mustSend(body)
	if res.ProviderMessageID != "1180000000000000777" || teamsHits.Load() != 1 {
		t.Fatalf("result %+v, teams tried %d times", res, teamsHits.Load())
	}
	rows := f.deliveries("run_chat")
	if len(rows) != 2 || rows[0].ChannelKey != "chat-teams" || rows[0].Status != "failed" ||
		rows[1].ChannelKey != "chat-discord" || rows[1].Status != "sent" ||
		rows[1].ProviderMessageID == nil || *rows[1].ProviderMessageID != "1180000000000000777" {
		t.Fatalf("deliveries %+v", rows)
	}
}

// TestVonageSendRecordsItsMessageID: an sms through sms-vonage, its
// answer's message-id in the ledger, the number sent without its '+'.
func TestVonageSendRecordsItsMessageID(t *testing.T) {
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	got := make(chan url.Values, 1)
	vonage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got <- r.PostForm
		_, _ = io.WriteString(w, `{"message-count":"1","messages":[{"to":"15550100","message-id":"0C000000217B7F02","status":"0"}]}`)
	}))
	t.Cleanup(vonage.Close)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "sms-vonage", "config": map[string]any{
		"apiKey": "a1b2c3d4", "apiSecret": "vonage-secret", "from": "Acme", "apiBaseUrl": vonage.URL}}, 201)
	body := sendStep("run_sms", "text")
	body["channel"] = "sms"
	body["content"] = map[string]any{"body": "Your code is 1234"}
	if res := f.mustSend(body); res.ProviderMessageID != "0C000000217B7F02" {
		t.Fatalf("result %+v", res)
	}
	if form := <-got; form.Get("to") != "15550100" || form.Get("text") != "Your code is 1234" || form.Get("api_secret") != "vonage-secret" {
		t.Fatalf("form %v", form)
	}
}
