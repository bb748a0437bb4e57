package smtp_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testsmtp"
)

const (
	suiteUser     = "herald-relay"
	suitePassword = "suite-Pa55-word"
)

func TestSuite(t *testing.T) {
	providertest.Run(t, harness())
}

func BenchmarkProviderSend(b *testing.B) {
	providertest.Benchmark(b, harness())
}

// reply is an SMTP answer of the suite: code and text (its enhanced code
// first) at one step of the transaction.
func reply(step string, code int, text string) providertest.Answer {
	return providertest.Answer{Name: fmt.Sprintf("%s %d", step, code), Step: step, Status: code, Body: text}
}

// harness describes SMTP to the shared suite: its peer is a go-smtp server
// on loopback speaking STARTTLS and requiring AUTH.
func harness() providertest.Harness {
	return providertest.Harness{
		New: smtp.New,
		Config: func(base string) map[string]any {
			u, err := url.Parse(base)
			if err != nil {
				panic(err)
			}
			port, _ := strconv.Atoi(u.Port())
			return map[string]any{"host": u.Hostname(), "port": float64(port), "username": suiteUser,
				"password": suitePassword, "fromEmail": "noreply@herald.test", "fromName": "Herald"}
		},
		Secrets:  []string{suitePassword},
		Required: []string{"host", "port", "fromEmail"},
		Message: provider.Message{Tenant: "ten_1", RunID: "run_1", StepID: "mail", IdempotencyKey: "run_1:mail",
			To: "ada@example.com", Content: []byte(`{"subject":"Hi","body":"Hello"}`)},
		Serve: serve,
		NotSent: []providertest.Answer{
			reply("MAIL", 421, "4.3.2 closing"),
			reply("MAIL", 451, "4.3.0 try again later"),
			reply("MAIL", 550, "5.7.1 sender refused"),
			reply("RCPT", 452, "4.2.2 mailbox full"),
			reply("DATA", 451, "4.3.0 try again later"),
		},
		Rejected: []providertest.Answer{
			{Name: "RCPT 550 5.1.1", Step: "RCPT", Status: 550, Body: "5.1.1 no such user", BadAddress: true},
			reply("RCPT", 550, "5.7.1 relaying denied"),
			reply("DATA", 554, "5.6.0 message refused"),
		},
	}
}

// serve starts the suite's peer for b.
func serve(t testing.TB, b providertest.Behaviour) *providertest.Peer {
	var sends atomic.Int64
	answer := func(step string) error {
		if b.Answer == nil || b.Answer.Step != step {
			return nil
		}
		code, text := b.Answer.Status, b.Answer.Body
		enhanced := gosmtp.NoEnhancedCode
		if first, rest, ok := strings.Cut(text, " "); ok {
			var e gosmtp.EnhancedCode
			if _, err := fmt.Sscanf(first, "%d.%d.%d", &e[0], &e[1], &e[2]); err == nil {
				enhanced, text = e, rest
			}
		}
		return testsmtp.Reply(code, enhanced, text)
	}
	release := make(chan struct{})
	m := testsmtp.Start(t, testsmtp.Options{
		Security: testsmtp.StartTLS, User: suiteUser, Password: suitePassword,
		OnMail: func(int, *gosmtp.Conn) error {
			sends.Add(1)
			if b.Unreachable {
				t.Error("a send reached the server")
			}
			return answer("MAIL")
		},
		OnRcpt: func(string) error { return answer("RCPT") },
		OnData: func(n int, _ *gosmtp.Conn) error {
			if b.HangAfterFirst && n > 1 {
				<-release // the client gives up first
			}
			return answer("DATA")
		},
	})
	t.Cleanup(func() { close(release) }) // before the server stops
	return &providertest.Peer{
		Base:      fmt.Sprintf("smtp://127.0.0.1:%d", m.Port),
		TLSConfig: &tls.Config{RootCAs: m.Roots},
		Sends:     func() int { return int(sends.Load()) },
		LastID: func() string {
			got := m.Messages()
			if len(got) == 0 {
				return ""
			}
			msg, err := mail.ReadMessage(bytes.NewReader(got[len(got)-1].Data))
			if err != nil {
				return ""
			}
			return strings.Trim(msg.Header.Get("Message-Id"), "<>")
		},
		// The receiver can drop a second copy of one Message-ID.
		LastSendKey: func() string {
			got := m.Messages()
			if len(got) == 0 {
				return ""
			}
			return got[len(got)-1].MessageID()
		},
		Close: m.Close,
	}
}
