package standardwebhooks

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The test vector published with the standard's reference libraries
// (standard-webhooks/standard-webhooks, libraries/go/webhook_test.go,
// TestWebhookSign; the same in every language's library).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesThePublishedVector(t *testing.T) {
	s, err := ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sign(vectorID, time.Unix(vectorTimestamp, 0), []byte(vectorBody)); got != vectorSignature {
		t.Fatalf("Sign = %s, want %s", got, vectorSignature)
	}
}

func TestSetHeaders(t *testing.T) {
	s, err := ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	s.SetHeaders(h, vectorID, time.Unix(vectorTimestamp, 0).Add(999*time.Millisecond), []byte(vectorBody))
	want := map[string]string{
		"Webhook-Id":        vectorID,
		"Webhook-Timestamp": "1614265330",
		"Webhook-Signature": vectorSignature,
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestAnotherBodyIdOrTimeSignsDifferently(t *testing.T) {
	s, _ := ParseSecret(vectorSecret)
	ts := time.Unix(vectorTimestamp, 0)
	for name, got := range map[string]string{
		"body": s.Sign(vectorID, ts, []byte(`{"test": 2432232315}`)),
		"id":   s.Sign(vectorID+"x", ts, []byte(vectorBody)),
		"time": s.Sign(vectorID, ts.Add(time.Second), []byte(vectorBody)),
	} {
		if got == vectorSignature {
			t.Errorf("another %s gave the same signature", name)
		}
	}
}

func TestParseSecretRefusesMalformedSecrets(t *testing.T) {
	for _, bad := range []string{
		"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	} {
		_, err := ParseSecret(bad)
		if !errors.Is(err, ErrBadSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrBadSecret", bad, err)
		}
		if len(bad) > len(SecretPrefix) && err != nil && strings.Contains(err.Error(), bad) {
			t.Errorf("the error %q holds the secret", err)
		}
	}
}
