package standardwebhooks_test

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/standardwebhooks"
)

// TestVerifyStandardVector: the specification's published vector
// verifies at its own time and within the tolerance; an altered body, id
// or signature, another key, or a timestamp out of tolerance does not.
// Several signatures in one header (a key being rotated) verify when one
// matches.
func TestVerifyStandardVector(t *testing.T) {
	s, err := standardwebhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	const id, ts, sig = "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	body := []byte(`{"test": 2432232314}`)
	at := time.Unix(1614265330, 0)
	for _, now := range []time.Time{at, at.Add(4 * time.Minute), at.Add(-4 * time.Minute)} {
		if err := s.Verify(id, ts, sig, body, now); err != nil {
			t.Fatalf("the vector at %v: %v", now.Sub(at), err)
		}
	}
	if err := s.Verify(id, ts, "v1,bm90IGl0 "+sig, body, at); err != nil {
		t.Fatalf("one of two signatures: %v", err)
	}
	other, _ := standardwebhooks.ParseSecret("whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA==")
	for name, f := range map[string]func() error{
		"body":      func() error { return s.Verify(id, ts, sig, []byte(`{"test": 2432232315}`), at) },
		"id":        func() error { return s.Verify("msg_other", ts, sig, body, at) },
		"signature": func() error { return s.Verify(id, ts, "v1,"+sig[4:], body, at) },
		"key":       func() error { return other.Verify(id, ts, sig, body, at) },
		"late":      func() error { return s.Verify(id, ts, sig, body, at.Add(6*time.Minute)) },
		"early":     func() error { return s.Verify(id, ts, sig, body, at.Add(-6*time.Minute)) },
		"timestamp": func() error { return s.Verify(id, "x", sig, body, at) },
		"empty":     func() error { return s.Verify(id, ts, "", body, at) },
	} {
		if err := f(); !errors.Is(err, standardwebhooks.ErrBadSignature) {
			t.Errorf("%s altered: %v", name, err)
		}
	}
}
