// Package certs makes the certificates the TLS tests need: a CA, a server certificate for
// loopback signed by it, and a client certificate signed by it (mTLS), written as PEM files.
package certs

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
	"time"
)

// Set is the files of one CA's certificates.
type Set struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// Make writes a CA named name with a server certificate (127.0.0.1, ::1, localhost) and a client
// certificate into dir, valid for a day.
func Make(dir, name string) (Set, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Set{}, fmt.Errorf("making the CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Set{}, fmt.Errorf("making the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Set{}, err
	}
	s := Set{
		CA:         filepath.Join(dir, name+"-ca.pem"),
		ServerCert: filepath.Join(dir, name+"-server.pem"), ServerKey: filepath.Join(dir, name+"-server-key.pem"),
		ClientCert: filepath.Join(dir, name+"-client.pem"), ClientKey: filepath.Join(dir, name+"-client-key.pem"),
	}
	if err := writePEM(s.CA, "CERTIFICATE", caDER); err != nil {
		return Set{}, err
	}
	leaves := []struct {
		cert, key string
		tmpl      *x509.Certificate
	}{
		{s.ServerCert, s.ServerKey, &x509.Certificate{
			SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}},
		{s.ClientCert, s.ClientKey, &x509.Certificate{
			SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: name + " client"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	}
	for _, l := range leaves {
		l.tmpl.NotBefore, l.tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		l.tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return Set{}, err
		}
		der, err := x509.CreateCertificate(rand.Reader, l.tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return Set{}, fmt.Errorf("signing %s: %w", l.cert, err)
		}
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return Set{}, err
		}
		if err := writePEM(l.cert, "CERTIFICATE", der); err != nil {
			return Set{}, err
		}
		if err := writePEM(l.key, "PRIVATE KEY", kb); err != nil {
			return Set{}, err
		}
	}
	return s, nil
}

// writePEM writes one PEM block, readable by the owner only.
func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
