package fcm

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	project     = "herald-test-1a2b3"
	clientEmail = "herald@herald-test-1a2b3.iam.gserviceaccount.com"
	keyID       = "0123456789abcdef0123456789abcdef01234567"
	accessToken = "ya29.c.test-access-token"
	deviceToken = "fGw0qy4TGgk:APA91bH-device-token_1234567890"
)

var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
	keyPEM  string
)

// testKey is one RSA key for the package's tests, as a service account's
// PKCS #8 PEM.
func testKey(t testing.TB) (*rsa.PrivateKey, string) {
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		key, keyPEM = k, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	})
	return key, keyPEM
}

func serviceAccountJSON(t testing.TB, tokenURI string) string {
	_, pemKey := testKey(t)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": keyID,
		"private_key": pemKey, "client_email": clientEmail, "client_id": "1234567890",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
	})
	return string(b)
}

var testMessage = providertest.Message("push", deviceToken, `{"title":"Deploy","body":"done <ok>","data":{"runId":"run_1","url":"/runs/1"}}`)

// checkAssertion verifies a JWT-bearer token request as Google's token
// endpoint does: the grant type, the RS256 signature by the account's key,
// the key id, and the claims.
func checkAssertion(t testing.TB, form url.Values, tokenURI string) {
	t.Helper()
	if g := form.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		t.Errorf("grant_type %q", g)
	}
	parts := strings.Split(form.Get("assertion"), ".")
	if len(parts) != 3 {
		t.Fatalf("assertion is not a JWT")
	}
	k, _ := testKey(t)
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		t.Errorf("assertion signature: %v", err)
	}
	var header struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	c, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if json.Unmarshal(h, &header) != nil || json.Unmarshal(c, &claims) != nil {
		t.Fatalf("assertion parts %s %s", h, c)
	}
	if header.Alg != "RS256" || header.Kid != keyID {
		t.Errorf("assertion header %+v", header)
	}
	if claims.Iss != clientEmail || claims.Scope != Scope || claims.Aud != tokenURI || claims.Exp-claims.Iat != 3600 {
		t.Errorf("assertion claims %+v", claims)
	}
}

// tokenEndpoint answers JWT-bearer token requests as Google's does.
func tokenEndpoint(t testing.TB, fetches *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		checkAssertion(t, r.PostForm, "http://"+r.Host+"/token")
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"access_token":"`+accessToken+`","expires_in":3599,"token_type":"Bearer"}`)
	}
}

// fcmError is FCM's documented error answer.
func fcmError(status int, rpcStatus, errorCode string) providertest.Answer {
	return providertest.JSONAnswer(errorCode, status, map[string]any{"error": map[string]any{
		"code": status, "message": "Requested entity was not found.", "status": rpcStatus,
		"details": []map[string]any{{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode}},
	}})
}

func TestSuite(t *testing.T) {
	providertest.Run(t, harness(t))
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness(b))
}

// harness describes the provider's API to the shared suite.
func harness(t testing.TB) providertest.Harness {
	_, pemKey := testKey(t)
	var fetches atomic.Int32
	return providertest.Harness{
		New: New,
		Config: func(base string) map[string]any {
			return map[string]any{"serviceAccountJson": serviceAccountJSON(t, base+"/token"), "apiBaseUrl": base}
		},
		// The key, and one line of its base64 body.
		Secrets:  []string{pemKey, strings.Split(pemKey, "\n")[3]},
		Required: []string{"serviceAccountJson"},
		Message:  testMessage,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == "/v1/projects/"+project+"/messages:send" },
		Aux:      tokenEndpoint(t, &fetches),
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			_, _ = io.WriteString(w, `{"name":"projects/`+project+`/messages/0:1500415314455276%31bd1c9631bd1c96"}`)
			return "projects/" + project + "/messages/0:1500415314455276%31bd1c9631bd1c96"
		},
		NotSent: []providertest.Answer{
			fcmError(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
			fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
			fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
			fcmError(500, "INTERNAL", "INTERNAL"),
			fcmError(503, "UNAVAILABLE", "UNAVAILABLE"),
		},
		Rejected: []providertest.Answer{
			providertest.BadAddress(fcmError(404, "NOT_FOUND", "UNREGISTERED")),
			fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
		},
	}
}

func TestExactRequestAndTokenReuse(t *testing.T) {
	var fetches atomic.Int32
	var answer atomic.Int32 // status of the next send answer
	answer.Store(200)
	send, got := providertest.Record(func(w http.ResponseWriter) {
		if s := int(answer.Load()); s != 200 {
			w.WriteHeader(s)
			_, _ = io.WriteString(w, `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"name":"projects/`+project+`/messages/1"}`)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", tokenEndpoint(t, &fetches))
	mux.HandleFunc("/", send)
	p := newLoopback(t, mux.ServeHTTP)
	id, err := p.Send(context.Background(), testMessage)
	if err != nil || id != "projects/"+project+"/messages/1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	(<-got).Check(t, providertest.Want{
		URI:    "/v1/projects/" + project + "/messages:send",
		Header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer " + accessToken},
		Body:   `{"message":{"token":"` + deviceToken + `","notification":{"title":"Deploy","body":"done \u003cok\u003e"},"data":{"runId":"run_1","url":"/runs/1"}}}`,
	})

	// The access token is reused until FCM refuses it.
	if _, err := p.Send(context.Background(), testMessage); err != nil {
		t.Fatal(err)
	}
	<-got
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d token requests for two sends, want 1", n)
	}
	answer.Store(401)
	if _, err := p.Send(context.Background(), testMessage); err == nil {
		t.Fatal("a 401 answer was a success")
	}
	<-got
	answer.Store(200)
	if _, err := p.Send(context.Background(), testMessage); err != nil {
		t.Fatal(err)
	}
	<-got
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d token requests, want 2 (a new one after the 401)", n)
	}
}

// newLoopback builds a provider whose token endpoint and API are both
// handler, on a loopback server.
func newLoopback(t *testing.T, handler http.HandlerFunc) provider.Provider {
	t.Helper()
	base, deps := providertest.Loopback(t, handler)
	p, err := New(map[string]any{"serviceAccountJson": serviceAccountJSON(t, base+"/token"), "apiBaseUrl": base}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokenEndpointRefusalIsNotSent(t *testing.T) {
	p := newLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/token" {
			t.Errorf("sent without a token: %s", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	})
	_, err := p.Send(context.Background(), testMessage)
	if !isKind(err, provider.ErrNotSent) {
		t.Fatalf("err %v, want ErrNotSent", err)
	}
}

func TestTokenRequestHonoursTheSendContext(t *testing.T) {
	p := newLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leave
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Send(ctx, testMessage)
	if !isKind(err, provider.ErrNotSent) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v, want ErrNotSent at the deadline", err, time.Since(start))
	}
}

func TestNewRefusesBadServiceAccounts(t *testing.T) {
	_, pemKey := testKey(t)
	deps := providertest.Deps()
	good := func() map[string]any {
		var m map[string]any
		_ = json.Unmarshal([]byte(serviceAccountJSON(t, "https://oauth2.googleapis.com/token")), &m)
		return m
	}
	for name, patch := range map[string]map[string]any{
		"no project":    {"project_id": ""},
		"no email":      {"client_email": ""},
		"bad key":       {"private_key": "-----BEGIN PRIVATE KEY-----\nbm9wZQ==\n-----END PRIVATE KEY-----\n"},
		"bad token_uri": {"token_uri": "file:///etc/passwd"},
		"not an sa":     {"type": "authorized_user"},
	} {
		sa := good()
		for k, v := range patch {
			sa[k] = v
		}
		b, _ := json.Marshal(sa)
		_, err := New(map[string]any{"serviceAccountJson": string(b)}, deps)
		if err == nil {
			t.Errorf("%s: New succeeded", name)
			continue
		}
		if strings.Contains(err.Error(), strings.Split(pemKey, "\n")[3]) {
			t.Errorf("%s: the error holds the key", name)
		}
	}
	if _, err := New(map[string]any{"serviceAccountJson": "{"}, deps); err == nil {
		t.Error("a malformed JSON was accepted")
	}
}

func isKind(err, kind error) bool {
	var e *provider.Error
	return err != nil && errors.As(err, &e) && e.Kind == kind
}
