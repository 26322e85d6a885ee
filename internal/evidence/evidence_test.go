package evidence

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func privateKey(t *testing.T, name string) *PrivateKey {
	t.Helper()
	k, err := ParsePrivateKey(read(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

func publicKey(t *testing.T, name string) *PublicKey {
	t.Helper()
	k, err := ParsePublicKey(read(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

var (
	reportFile = File{Name: "nccl-report.ctrf.json", Data: []byte(`{"reportFormat":"CTRF"}`)}
	chartFile  = File{Name: "nccl-busbw.svg", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)}
	predicate  = Predicate{
		Verdict: "pass", BusBWGBps: 312.5, SizeBytes: 8 << 30, FloorGBps: 300, ThresholdGBps: 270,
		NCCL:   Versions{Observed: []string{"2.28.7"}, Pinned: "2.28.7"},
		Plugin: Versions{Observed: []string{"v1.0.15"}, Pinned: "v1.0.15"},
		Nodes:  2, Ranks: 16, RuntimeSource: "unknown", Fabric: "tcpxo",
		InstallerImage: "installer@sha256:aa", DaemonImage: "daemon@sha256:bb", ToolVersion: "test",
	}
)

func signed(t *testing.T, key string) []byte {
	t.Helper()
	b, err := Sign(privateKey(t, key), []File{reportFile, chartFile}, predicate)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sigstoreVerify checks a bundle with sigstore-go alone, none of this
// package's verification code: the bundle must stand on its own.
func sigstoreVerify(t *testing.T, bundleJSON []byte, pub *PublicKey, files ...File) error {
	t.Helper()
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		t.Fatalf("sigstore-go cannot read the bundle: %v", err)
	}
	sv, err := signature.LoadVerifier(pub.key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	tm := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{pub.Hint(): root.NewExpiringKey(sv, time.Time{}, time.Time{})})
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	var artifacts []verify.ArtifactDigest
	for _, f := range files {
		sum := sha256sum(f.Data)
		artifacts = append(artifacts, verify.ArtifactDigest{Algorithm: "sha256", Digest: sum})
	}
	_, err = v.Verify(b, verify.NewPolicy(verify.WithArtifactDigests(artifacts), verify.WithKey()))
	return err
}

func TestRoundTripBothKeyTypes(t *testing.T) {
	for _, tc := range []struct{ priv, pub, alg string }{
		{"p256.pem", "p256.pub.pem", "ECDSA P-256"},
		{"p256-sec1.pem", "p256.pub.pem", "ECDSA P-256"},
		{"ed25519.pem", "ed25519.pub.pem", "Ed25519"},
	} {
		t.Run(tc.priv, func(t *testing.T) {
			b := signed(t, tc.priv)
			pub := publicKey(t, tc.pub)
			if pub.Algorithm() != tc.alg {
				t.Errorf("algorithm %s, want %s", pub.Algorithm(), tc.alg)
			}
			if err := sigstoreVerify(t, b, pub, reportFile, chartFile); err != nil {
				t.Fatalf("sigstore-go refuses the bundle: %v", err)
			}
			res, err := Verify(pub, b, []File{reportFile, chartFile})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(res.Predicate); !bytes.Equal(got, mustJSON(t, predicate)) {
				t.Errorf("predicate round trip:\n got %s\nwant %s", got, mustJSON(t, predicate))
			}
			if res.KeyHint != pub.Hint() || len(res.Subjects) != 2 {
				t.Errorf("hint %q (want %q), subjects %v", res.KeyHint, pub.Hint(), res.Subjects)
			}
		})
	}
}

// TestBundleShape pins what the bundle holds: v0.3, a DSSE in-toto
// statement, a public-key hint, and no certificate, log entry or timestamp.
func TestBundleShape(t *testing.T) {
	var b map[string]any
	if err := json.Unmarshal(signed(t, "p256.pem"), &b); err != nil {
		t.Fatal(err)
	}
	if b["mediaType"] != "application/vnd.dev.sigstore.bundle.v0.3+json" {
		t.Errorf("mediaType %v", b["mediaType"])
	}
	vm := b["verificationMaterial"].(map[string]any)
	if _, ok := vm["publicKey"].(map[string]any)["hint"]; !ok || len(vm) != 1 {
		t.Errorf("verification material is not a bare public-key hint: %v", vm)
	}
	env := b["dsseEnvelope"].(map[string]any)
	if env["payloadType"] != "application/vnd.in-toto+json" {
		t.Errorf("payloadType %v", env["payloadType"])
	}
}

func TestPredicateNamesNoHost(t *testing.T) {
	payload := envelopePayload(t, signed(t, "ed25519.pem"))
	var stmt struct {
		Type          string           `json:"_type"`
		PredicateType string           `json:"predicateType"`
		Subject       []map[string]any `json:"subject"`
		Predicate     map[string]any   `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &stmt); err != nil {
		t.Fatal(err)
	}
	if stmt.Type != "https://in-toto.io/Statement/v1" || stmt.PredicateType != PredicateType || len(stmt.Subject) != 2 {
		t.Fatalf("statement %s", payload)
	}
	want := []string{"verdict", "problems", "busbwGBps", "sizeBytes", "floorGBps", "thresholdGBps", "nccl", "plugin", "nodes", "ranks", "runtimeSource", "fabric", "installerImage", "daemonImage", "toolVersion"}
	if len(stmt.Predicate) != len(want) {
		t.Errorf("predicate has %d fields, want exactly %v: %s", len(stmt.Predicate), want, payload)
	}
	for _, k := range want {
		if _, ok := stmt.Predicate[k]; !ok {
			t.Errorf("predicate lacks %q", k)
		}
	}
	lower := strings.ToLower(string(payload))
	for _, bad := range []string{"host", "pod", "uuid", "gpu-", "node-name", "nodename"} {
		if strings.Contains(lower, bad) {
			t.Errorf("statement mentions %q: %s", bad, payload)
		}
	}
}

func TestTamperedFileFails(t *testing.T) {
	b := signed(t, "p256.pem")
	pub := publicKey(t, "p256.pub.pem")
	for i := range reportFile.Data {
		data := bytes.Clone(reportFile.Data)
		data[i] ^= 0x01
		_, err := Verify(pub, b, []File{{Name: reportFile.Name, Data: data}, chartFile})
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), reportFile.Name+" differs") {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	_, err := Verify(pub, b, []File{{Name: "other.json", Data: reportFile.Data}})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "other.json is not a subject") {
		t.Errorf("unknown file: %v", err)
	}
}

func TestTamperedEnvelopeFails(t *testing.T) {
	pub := publicKey(t, "p256.pub.pem")
	orig := signed(t, "p256.pem")
	for _, field := range []string{"payload", "sig"} {
		n := len(decodedField(t, orig, field))
		for i := 0; i < n; i++ {
			b := flipDecoded(t, orig, field, i)
			_, err := Verify(pub, b, nil)
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("%s byte %d flipped: %v", field, i, err)
			}
			if err := sigstoreVerify(t, b, pub, reportFile, chartFile); err == nil {
				t.Fatalf("%s byte %d flipped: sigstore-go accepts it", field, i)
			}
		}
	}
}

func TestWrongKeyFails(t *testing.T) {
	b := signed(t, "ed25519.pem")
	for _, pub := range []string{"other-ed25519.pub.pem", "p256.pub.pem"} {
		_, err := Verify(publicKey(t, pub), b, []File{reportFile})
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "signature does not verify") {
			t.Errorf("%s: %v", pub, err)
		}
	}
}

func TestOtherPredicateTypeFails(t *testing.T) {
	// A bundle of another predicate type, properly signed by the right key.
	key := privateKey(t, "p256.pem")
	stmt, err := statement([]File{reportFile}, predicate)
	if err != nil {
		t.Fatal(err)
	}
	stmt.PredicateType = "https://slsa.dev/provenance/v1"
	b := signStatement(t, key, stmt)
	_, err = Verify(key.Public(), b, []File{reportFile})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), `predicate type "https://slsa.dev/provenance/v1"`) {
		t.Errorf("got %v", err)
	}
}

func TestUnreadableBundle(t *testing.T) {
	b := signed(t, "p256.pem")
	pub := publicKey(t, "p256.pub.pem")
	for name, data := range map[string][]byte{
		"truncated": b[:len(b)/2],
		"empty":     nil,
		"not json":  []byte("hello"),
		"no dsse":   []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`),
	} {
		if _, err := Verify(pub, data, nil); !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want ErrInput", name, err)
		}
	}
}

func TestKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool
		want    error
	}{
		{"ed25519-encrypted.pem", true, ErrEncryptedKey},
		{"p256-sec1-encrypted.pem", true, ErrEncryptedKey},
		{"p256.pub.pem", true, ErrPublicKeyGiven},
		{"p384.pem", true, ErrUnsupportedKey},
		{"README.md", true, ErrInput},
		{"p256.pem", false, ErrPrivateKeyGiven},
		{"ed25519.pem", false, ErrPrivateKeyGiven},
		{"ed25519-encrypted.pem", false, ErrPrivateKeyGiven},
		{"README.md", false, ErrInput},
	} {
		var err error
		if tc.private {
			_, err = ParsePrivateKey(read(t, tc.name))
		} else {
			_, err = ParsePublicKey(read(t, tc.name))
		}
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrInput) {
			t.Errorf("%s (private %v): %v, want %v", tc.name, tc.private, err, tc.want)
		}
	}
}

func TestSignRefusesBadSubjects(t *testing.T) {
	key := privateKey(t, "p256.pem")
	for _, files := range [][]File{nil, {{Name: "a/b", Data: nil}}, {reportFile, reportFile}} {
		if _, err := Sign(key, files, predicate); err == nil {
			t.Errorf("%v: signed", files)
		}
	}
}

// helpers

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func envelope(t *testing.T, bundleJSON []byte) (map[string]any, map[string]any) {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(bundleJSON, &b); err != nil {
		t.Fatal(err)
	}
	return b, b["dsseEnvelope"].(map[string]any)
}

func envelopePayload(t *testing.T, bundleJSON []byte) []byte {
	return decodedField(t, bundleJSON, "payload")
}

// decodedField is the envelope's payload or its one signature, decoded.
func decodedField(t *testing.T, bundleJSON []byte, field string) []byte {
	t.Helper()
	_, env := envelope(t, bundleJSON)
	s := env["payload"]
	if field == "sig" {
		s = env["signatures"].([]any)[0].(map[string]any)["sig"]
	}
	raw, err := base64.StdEncoding.DecodeString(s.(string))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// flipDecoded flips one bit of byte i of the decoded payload or signature
// and re-encodes the bundle, so the bundle still reads and only the crypto
// can tell.
func flipDecoded(t *testing.T, bundleJSON []byte, field string, i int) []byte {
	t.Helper()
	b, env := envelope(t, bundleJSON)
	raw := decodedField(t, bundleJSON, field)
	raw[i] ^= 0x01
	enc := base64.StdEncoding.EncodeToString(raw)
	if field == "sig" {
		env["signatures"].([]any)[0].(map[string]any)["sig"] = enc
	} else {
		env["payload"] = enc
	}
	return mustJSON(t, b)
}
