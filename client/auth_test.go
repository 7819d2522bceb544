package client_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/natsserver"
)

// startWith starts a real server from a configuration written for the test.
func startWith(t *testing.T, conf string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Config{StoreDir: filepath.Join(dir, "js"), ConfigFile: file})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func userSeed(t *testing.T) (nkeys.KeyPair, string, []byte) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	return kp, pub, seed
}

// NATS_NKEY: a seed file signs the server's nonce; another seed is refused.
func TestConnectWithNKey(t *testing.T) {
	t.Parallel()
	_, pub, seed := userSeed(t)
	url := startWith(t, fmt.Sprintf("authorization { users = [ {nkey: %s} ] }\n", pub))
	nc, err := client.Connection{URL: url, NKey: writeFile(t, "user.nk", seed)}.Connect()
	if err != nil {
		t.Fatalf("connect with the user's seed: %v", err)
	}
	nc.Close()
	_, _, other := userSeed(t)
	if _, err := (client.Connection{URL: url, NKey: writeFile(t, "other.nk", other)}).Connect(); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("connect with another seed: %v", err)
	}
}

// NATS_CREDS: a .creds file of a decentralised (JWT) account.
func TestConnectWithCreds(t *testing.T) {
	t.Parallel()
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opJWT, err := jwt.NewOperatorClaims(opPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := nkeys.CreateAccount()
	acctPub, _ := acct.PublicKey()
	ac := jwt.NewAccountClaims(acctPub)
	acctJWT, err := ac.Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	creds := func(signer nkeys.KeyPair) string {
		_, userPub, seed := userSeed(t)
		uc := jwt.NewUserClaims(userPub)
		uc.IssuerAccount = acctPub
		userJWT, err := uc.Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jwt.FormatUserConfig(userJWT, seed)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, "user.creds", b)
	}
	// JetStream needs a system account.
	sys, _ := nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	sysJWT, err := jwt.NewAccountClaims(sysPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	url := startWith(t, fmt.Sprintf("operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: { %s: %s, %s: %s }\n",
		opJWT, sysPub, acctPub, acctJWT, sysPub, sysJWT))
	nc, err := client.Connection{URL: url, Creds: creds(acct)}.Connect()
	if err != nil {
		t.Fatalf("connect with the account's user: %v", err)
	}
	nc.Close()
	stranger, _ := nkeys.CreateAccount()
	if _, err := (client.Connection{URL: url, Creds: creds(stranger)}).Connect(); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("connect with a user of an unknown account: %v", err)
	}
}

// NATS_CA, NATS_CERT, NATS_KEY: mutual TLS; without the client certificate
// the server refuses.
func TestConnectWithTLS(t *testing.T) {
	t.Parallel()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (certFile, keyFile string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return writeFile(t, name+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			writeFile(t, name+"-key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	}
	caFile := writeFile(t, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	serverCert, serverKey := issue("server", 2, x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := issue("client", 3, x509.ExtKeyUsageClientAuth)
	url := startWith(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }\n", serverCert, serverKey, caFile))

	nc, err := client.Connection{URL: url, CA: caFile, Cert: clientCert, Key: clientKey}.Connect()
	if err != nil {
		t.Fatalf("connect with mutual TLS: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("the connection is not TLS")
	}
	nc.Close()
	if _, err := (client.Connection{URL: url, CA: caFile}).Connect(); err == nil {
		t.Fatal("connected without a client certificate")
	}
}
