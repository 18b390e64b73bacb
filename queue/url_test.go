package queue_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		want queue.ConnectOptions
	}{
		{"rethinkdb://db.internal", queue.ConnectOptions{Address: "db.internal:28015"}},
		{"rethinkdb://db.internal:29015/jobs", queue.ConnectOptions{Address: "db.internal:29015", DB: "jobs"}},
		{"rethinkdb://ann:p%40ss@db:28015/jobs", queue.ConnectOptions{Address: "db:28015", DB: "jobs", Username: "ann", Password: "p@ss"}},
		{"rethinkdb://[::1]:28015", queue.ConnectOptions{Address: "[::1]:28015"}},
		{"rethinkdb://db1,db2:29015,db3/jobs", queue.ConnectOptions{Addresses: []string{"db1:28015", "db2:29015", "db3:28015"}, DB: "jobs"}},
	} {
		t.Run(c.url, func(t *testing.T) {
			got, err := queue.ParseURL(c.url)
			require.NoError(t, err)
			assert.Equal(t, c.want, *got)
		})
	}
}

func TestParseURLTLS(t *testing.T) {
	got, err := queue.ParseURL("rethinkdb://db?tls=true")
	require.NoError(t, err)
	require.NotNil(t, got.TLS)
	assert.Nil(t, got.TLS.RootCAs, "the system's roots")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, selfSigned(t), 0o600))
	got, err = queue.ParseURL("rethinkdb://db?tls_ca=" + ca + "&tls_server_name=rethink")
	require.NoError(t, err)
	require.NotNil(t, got.TLS)
	assert.NotNil(t, got.TLS.RootCAs)
	assert.Equal(t, "rethink", got.TLS.ServerName)
}

func TestParseURLRefuses(t *testing.T) {
	for _, u := range []string{
		"http://db:28015",
		"rethinkdb://",
		"rethinkdb://db:0",
		"rethinkdb://db:x",
		"rethinkdb://db/a/b",
		"rethinkdb://db?tls=maybe",
		"rethinkdb://db?tsl=true",
		"rethinkdb://db?tls_ca=/nonexistent.pem",
		"rethinkdb://db?tls=false&tls_server_name=x",
		"::",
	} {
		_, err := queue.ParseURL(u)
		assert.ErrorIs(t, err, queue.ErrInvalidOption, u)
		assert.ErrorIs(t, err, job.ErrInvalid, u)
	}
	_, err := queue.ParseURL("rethinkdb://ann:secret@db?bad=1")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret", "the password is not repeated in errors")
}

// selfSigned is a PEM certificate, for a tls_ca file.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rethink"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
