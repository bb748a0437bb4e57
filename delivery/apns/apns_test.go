package apns

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	teamID      = "ABCDE12345"
	keyID       = "KEY1234567"
	topic       = "com.example.app"
	deviceToken = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
)

// key is the test's .p8 key, made once.
var key = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// p8 is key as a .p8 file holds it.
func p8() string {
	der, err := x509.MarshalPKCS8PrivateKey(key())
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// keyBody is the base64 body of the .p8 file: a secret that must never be
// shown.
func keyBody() string {
	der, _ := x509.MarshalPKCS8PrivateKey(key())
	return base64.StdEncoding.EncodeToString(der)[8:48]
}

var message = providertest.Message("push", deviceToken, `{"title":"Hello","body":"World","data":{"orderId":"42","aps":"not ours"}}`)

func config(base string) map[string]any {
	return map[string]any{"teamId": teamID, "keyId": keyID, "privateKey": p8(), "topic": topic, "apiBaseUrl": base}
}

// verifyToken checks an authorization header's provider token: ES256 by
// key, kid and iss as configured. It returns the token's iat.
func verifyToken(authz string) (int64, error) {
	tok, ok := strings.CutPrefix(authz, "bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		return 0, errors.New("not a bearer JWT")
	}
	var head struct{ Alg, Kid string }
	var claims struct {
		Iss string `json:"iss"`
		Iat int64  `json:"iat"`
	}
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	c, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if json.Unmarshal(h, &head) != nil || json.Unmarshal(c, &claims) != nil || len(sig) != 64 {
		return 0, errors.New("malformed JWT")
	}
	if head.Alg != "ES256" || head.Kid != keyID || claims.Iss != teamID || claims.Iat == 0 {
		return 0, fmt.Errorf("header %+v claims %+v", head, claims)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&key().PublicKey, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return 0, errors.New("bad signature")
	}
	return claims.Iat, nil
}

func reason(name string, status int, r string, bad bool) providertest.Answer {
	return providertest.Answer{Name: name, Status: status, BadAddress: bad, Body: fmt.Sprintf(`{"reason":%q}`, r)}
}

func TestSuite(t *testing.T) {
	providertest.Run(t, harness())
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness())
}

func harness() providertest.Harness {
	return providertest.Harness{
		New:      New,
		Config:   config,
		Secrets:  []string{keyBody()},
		Required: []string{"teamId", "keyId", "privateKey", "topic"},
		Message:  message,
		// The device shows one notification of an apns-collapse-id.
		SendKey: func(r *http.Request, _ []byte) string {
			return r.Header.Get("Apns-Id") + " " + r.Header.Get("Apns-Collapse-Id")
		},
		IsSend: func(r *http.Request) bool {
			_, err := verifyToken(r.Header.Get("Authorization"))
			return r.Method == http.MethodPost && r.URL.Path == "/3/device/"+deviceToken && err == nil
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			id := r.Header.Get("Apns-Id")
			w.Header().Set("apns-id", id)
			w.WriteHeader(http.StatusOK)
			return id
		},
		NotSent: []providertest.Answer{
			reason("403 ExpiredProviderToken", 403, "ExpiredProviderToken", false),
			reason("403 InvalidProviderToken", 403, "InvalidProviderToken", false),
			reason("400 BadTopic", 400, "BadTopic", false),
			reason("400 TopicDisallowed", 400, "TopicDisallowed", false),
			reason("429 TooManyRequests", 429, "TooManyRequests", false),
			reason("500 InternalServerError", 500, "InternalServerError", false),
			reason("503 ServiceUnavailable", 503, "ServiceUnavailable", false),
		},
		Rejected: []providertest.Answer{
			{Name: "410 Unregistered", Status: 410, BadAddress: true, Body: `{"reason":"Unregistered","timestamp":1764275400000}`},
			reason("400 BadDeviceToken", 400, "BadDeviceToken", false),
			reason("400 DeviceTokenNotForTopic", 400, "DeviceTokenNotForTopic", false),
			reason("413 PayloadTooLarge", 413, "PayloadTooLarge", false),
		},
	}
}

// TestExactRequestOverHTTP2: the request APNs documents, over HTTP/2 with
// TLS as APNs serves it.
func TestExactRequestOverHTTP2(t *testing.T) {
	protos := make(chan int, 2)
	record, got := providertest.Record(func(w http.ResponseWriter) {})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.ProtoMajor
		w.Header().Set("apns-id", r.Header.Get("Apns-Id"))
		record(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true // as egress's transport does
	p, err := New(config(srv.URL), provider.Deps{HTTPClient: client, Logger: slog.New(slog.DiscardHandler), Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(context.Background(), message)
	if err != nil {
		t.Fatal(err)
	}
	if proto := <-protos; proto != 2 {
		t.Fatalf("HTTP/%d, want HTTP/2", proto)
	}
	r := <-got
	r.Check(t, providertest.Want{
		URI:    "/3/device/" + deviceToken,
		Header: map[string]string{"Apns-Topic": topic, "Apns-Push-Type": "alert", "Apns-Priority": "10", "Content-Type": "application/json"},
		Body:   `{"aps":{"alert":{"body":"World","title":"Hello"},"sound":"default"},"orderId":"42"}`,
	})
	if _, err := verifyToken(r.Header.Get("Authorization")); err != nil {
		t.Fatalf("provider token: %v", err)
	}
	if id == "" || id != r.Header.Get("Apns-Id") || len(id) != 36 || len(r.Header.Get("Apns-Collapse-Id")) != 32 {
		t.Fatalf("id %q, apns-id %q, apns-collapse-id %q", id, r.Header.Get("Apns-Id"), r.Header.Get("Apns-Collapse-Id"))
	}

	// Another try of the same send carries the same ids; another send not.
	again, _ := p.Send(context.Background(), message)
	<-protos
	r2 := <-got
	if again != id || r2.Header.Get("Apns-Collapse-Id") != r.Header.Get("Apns-Collapse-Id") {
		t.Fatalf("a retry's ids %q %q differ", again, r2.Header.Get("Apns-Collapse-Id"))
	}
	other := message
	other.IdempotencyKey = "run_2:push"
	if a, _ := ids(other.Tenant, other.IdempotencyKey); a == id {
		t.Fatal("two sends share an apns-id")
	}
}

// TestProviderTokenCached: one token serves sends for 50 minutes, then a
// new one is signed; ExpiredProviderToken makes one at once.
func TestProviderTokenCached(t *testing.T) {
	var mu sync.Mutex
	var iats []int64
	expire := false
	base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) {
		iat, err := verifyToken(r.Header.Get("Authorization"))
		if err != nil {
			t.Errorf("provider token: %v", err)
		}
		mu.Lock()
		iats = append(iats, iat)
		exp := expire
		expire = false
		mu.Unlock()
		if exp {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"reason":"ExpiredProviderToken"}`)
		}
	})
	now := time.Unix(1_800_000_000, 0)
	deps.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p, err := New(config(base), deps)
	if err != nil {
		t.Fatal(err)
	}
	send := func() error { _, err := p.Send(context.Background(), message); return err }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	_ = send()
	advance(49 * time.Minute)
	_ = send()
	advance(2 * time.Minute)
	_ = send()
	mu.Lock()
	expire = true
	mu.Unlock()
	advance(time.Minute)
	if err := send(); !errors.Is(err, provider.ErrNotSent) {
		t.Fatalf("ExpiredProviderToken: %v", err)
	}
	_ = send()
	mu.Lock()
	defer mu.Unlock()
	t0 := int64(1_800_000_000)
	want := []int64{t0, t0, t0 + 51*60, t0 + 51*60, t0 + 52*60}
	if fmt.Sprint(iats) != fmt.Sprint(want) {
		t.Fatalf("iat of each send %v, want %v", iats, want)
	}
}

func TestNewServerAndKey(t *testing.T) {
	deps := providertest.Deps()
	cfg := config("")
	delete(cfg, "apiBaseUrl")
	p, err := New(cfg, deps)
	if err != nil || p.(*Provider).base != DevelopmentBaseURL {
		t.Fatalf("default server: %v %v", p, err)
	}
	cfg["production"] = true
	if p, err := New(cfg, deps); err != nil || p.(*Provider).base != ProductionBaseURL {
		t.Fatalf("production server: %v %v", p, err)
	}
	// The .p8 file's base64 body alone is a key too.
	der, _ := x509.MarshalPKCS8PrivateKey(key())
	cfg["privateKey"] = base64.StdEncoding.EncodeToString(der)
	if _, err := New(cfg, deps); err != nil {
		t.Fatalf("a bare key body: %v", err)
	}
	rsaLike := "-----BEGIN PRIVATE KEY-----\nMIIBVAIBADANBgkqhkiG9w0BAQEFAASCAT4wggE6AgEAAkEA\n-----END PRIVATE KEY-----\n"
	c := config("")
	delete(c, "apiBaseUrl")
	providertest.BadConfigs(t, New, c, map[string]map[string]any{
		"not a key":         {"privateKey": "hello"},
		"not an EC key":     {"privateKey": rsaLike},
		"production a text": {"production": "yes"},
		"base with a path":  {"apiBaseUrl": "https://api.push.apple.com/3"},
		"team not a string": {"teamId": 7},
	}, keyBody())
}

// TestDeviceTokenChecked: a token that is not hexadecimal never reaches
// the path.
func TestDeviceTokenChecked(t *testing.T) {
	base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a send reached APNs") })
	p, _ := New(config(base), deps)
	m := message
	m.To = "../../v1/x"
	if _, err := p.Send(context.Background(), m); !errors.Is(err, provider.ErrRejected) {
		t.Fatalf("err %v", err)
	}
}
