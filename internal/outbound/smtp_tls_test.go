package outbound_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Mailpit's password file format ({SHA}), test only
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// A production relay: STARTTLS required, credentials checked. The mailer
// upgrades, authenticates and delivers; wrong credentials are a rejection;
// TLS "off" against it is refused by the relay, never sent in the clear.
func TestSMTPMailerUpgradesWithStartTLSAndAuthenticates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	sum := sha1.Sum([]byte("relay-password")) //nolint:gosec // see import
	authFile := filepath.Join(dir, "smtp-auth")
	require.NoError(t, os.WriteFile(authFile, []byte("hookinbox:{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o600))
	mp := testenv.MailpitWith(t, &devenv.MailpitTLS{CertFile: certFile, KeyFile: keyFile, AuthFile: authFile})

	msg := outbound.Message{Key: "op:tls", To: "billing@ws.example", Subject: "over TLS", Text: "hello"}
	m := &outbound.SMTPMailer{Addr: mp.SMTPAddr, From: "hookinbox@test.local", Timeout: 5 * time.Second,
		TLS: outbound.SMTPRequired, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		Username: "hookinbox", Password: "relay-password"}
	_, err := m.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(mailpitMessages(t, mp.HTTPURL)) == 1 }, 10*time.Second, 100*time.Millisecond)

	wrong := *m
	wrong.Password = "not-the-password"
	_, err = wrong.Send(context.Background(), msg)
	require.Error(t, err)
	require.True(t, outbound.IsPermanent(err), err.Error())
	require.NotContains(t, err.Error(), "not-the-password")

	clear := *m
	clear.TLS = outbound.SMTPOff
	_, err = clear.Send(context.Background(), msg)
	require.Error(t, err, "the relay requires STARTTLS")

	untrusted := *m
	untrusted.TLSConfig = nil // the system roots do not know this certificate
	_, err = untrusted.Send(context.Background(), msg)
	require.Error(t, err)
	require.Len(t, mailpitMessages(t, mp.HTTPURL), 1, "nothing else was delivered")
}
