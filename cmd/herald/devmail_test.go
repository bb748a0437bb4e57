package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testwait"
)

func TestDevmailCatchesAndLists(t *testing.T) {
	t.Parallel()
	smtpAddr, httpAddr := testnet.FreeAddr(t), testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &testlog.Buffer{}
	go func() {
		done <- run(ctx, []string{"devmail", "--smtp", smtpAddr, "--http", httpAddr}, &bytes.Buffer{}, logs)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("devmail: %v", err)
		}
	}()

	host, portText, _ := net.SplitHostPort(smtpAddr)
	port, _ := net.LookupPort("tcp", portText)
	sender := smtp.NewSender(smtp.Options{})
	defer sender.Close()
	cfg := smtp.Config{Host: host, Port: port, FromEmail: "noreply@herald.test", FromName: "Herald", Username: "any", Password: "thing"}
	testwait.Until(t, "devmail to accept mail", func() error {
		_, err := sender.Send(ctx, cfg, smtp.Message{To: "ada@example.com", Subject: "Caught ✓", Body: "Hello"})
		return err
	})

	resp, err := http.Get("http://" + httpAddr + "/api/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Messages []struct {
			From    string   `json:"from"`
			To      []string `json:"to"`
			Subject string   `json:"subject"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Messages) != 1 || list.Messages[0].Subject != "Caught ✓" || list.Messages[0].To[0] != "ada@example.com" {
		t.Fatalf("messages = %+v", list.Messages)
	}
	page, err := http.Get("http://" + httpAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", page.StatusCode, page.Header.Get("Content-Type"))
	}
}

func TestDevmailRefusesBadArguments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"devmail", "--bogus"}, {"devmail", "extra"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v", args, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = run(context.Background(), []string{"devmail", "--smtp", l.Addr().String(), "--http", "127.0.0.1:0"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "smtp") {
		t.Fatalf("SMTP address in use: %v", err)
	}
}
