package testsmtp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// testCert returns a self-signed certificate for 127.0.0.1 and localhost
// and a pool that trusts it, made once per test binary.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	c, err := certOnce()
	if err != nil {
		t.Fatal(err)
	}
	return c.cert, c.roots
}

type certPair struct {
	cert  tls.Certificate
	roots *x509.CertPool
}

var certOnce = sync.OnceValues(func() (certPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "herald test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return certPair{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return certPair{}, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return certPair{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots: roots}, nil
})
