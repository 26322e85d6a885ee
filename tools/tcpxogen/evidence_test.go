package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, commands())
	return code, o.String(), e.String()
}

func evidenceKey(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "internal", "evidence", "testdata", name)
}

func ncclLog(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "testdata", "nccl-logs", name)
}

// signedRun runs nccl-report --sign-key into a fresh directory.
func signedRun(t *testing.T, log, key string, wantCode int) string {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := run(t, "nccl-report", "--log", ncclLog(t, log), "--out", out, "--sign-key", evidenceKey(t, key))
	if code != wantCode {
		t.Fatalf("nccl-report exit %d, want %d\n%s\n%s", code, wantCode, stdout, stderr)
	}
	if !strings.Contains(stdout, "evidence   "+filepath.Join(out, "evidence.sigstore.json")) {
		t.Errorf("summary does not name the bundle:\n%s", stdout)
	}
	return out
}

func files(dir string) []string {
	return []string{"--report", filepath.Join(dir, "nccl-report.ctrf.json"), "--report", filepath.Join(dir, "nccl-busbw.svg")}
}

func TestSignAndVerify(t *testing.T) {
	for _, tc := range []struct {
		log, key, pub string
		code          int
		verdict       string
	}{
		{"healthy.log", "ed25519.pem", "ed25519.pub.pem", cli.ExitOK, "verdict    pass"},
		{"healthy.log", "p256-sec1.pem", "p256.pub.pem", cli.ExitOK, "verdict    pass"},
		// A failed run is signed too: the evidence is of the verdict.
		{"tcp-fallback.log", "p256.pem", "p256.pub.pem", cli.ExitFailure, "verdict    fail"},
	} {
		t.Run(tc.log+"/"+tc.key, func(t *testing.T) {
			dir := signedRun(t, tc.log, tc.key, tc.code)
			args := append([]string{"verify", "--key", evidenceKey(t, tc.pub), filepath.Join(dir, "evidence.sigstore.json")}, files(dir)...)
			code, stdout, stderr := run(t, args...)
			if code != cli.ExitOK {
				t.Fatalf("verify exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range []string{"verify: OK", tc.verdict, "no signing-time proof", "nccl-report.ctrf.json matches its subject", "nccl-busbw.svg matches its subject", "fabric     tcpxo"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// A gIB run is signed as a TCPXO one is, its predicate naming its fabric
// and its pinned images: the NCCL/gIB installer, and no daemon (gIB has
// none). verify prints them from the signed predicate.
func TestSignAndVerifyGIB(t *testing.T) {
	out := t.TempDir()
	log := filepath.Join(repoRoot(t), "validators", "performance", "busbw", "testdata", "gib", "a3ultra-2node-gib.log")
	code, stdout, stderr := run(t, "nccl-report", "--fabric", "gib", "--floor", ">= 300", "--log", log, "--out", out, "--sign-key", evidenceKey(t, "ed25519.pem"))
	if code != cli.ExitOK || !strings.Contains(stdout, "evidence   "+filepath.Join(out, "evidence.sigstore.json")) {
		t.Fatalf("nccl-report --fabric gib --sign-key: exit %d\n%s\n%s", code, stdout, stderr)
	}
	args := append([]string{"verify", "--key", evidenceKey(t, "ed25519.pub.pem"), filepath.Join(out, "evidence.sigstore.json")}, files(out)...)
	code, stdout, stderr = run(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("verify exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"verify: OK", "verdict    pass", "fabric     gib", "installer  us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:", "daemon     none (the fabric has no daemon)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verify's stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestEvidenceNamesNoHost: the log names its hosts (and the report may);
// the signed statement must not.
func TestEvidenceNamesNoHost(t *testing.T) {
	dir := signedRun(t, "healthy.log", "ed25519.pem", cli.ExitOK)
	data, err := os.ReadFile(filepath.Join(dir, "evidence.sigstore.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		DSSEEnvelope struct {
			Payload []byte `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	var stmt struct {
		Predicate map[string]any `json:"predicate"`
	}
	if err := json.Unmarshal(b.DSSEEnvelope.Payload, &stmt); err != nil {
		t.Fatalf("%v: %s", err, b.DSSEEnvelope.Payload)
	}
	if stmt.Predicate["nodes"] != 2.0 || stmt.Predicate["ranks"] != 16.0 || stmt.Predicate["verdict"] != "pass" {
		t.Errorf("predicate %v", stmt.Predicate)
	}
	log, err := os.ReadFile(ncclLog(t, "healthy.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("nccl-bench-node-0")) {
		t.Fatal("the sample log no longer names its hosts; pick one that does")
	}
	for _, host := range []string{"nccl-bench-node", "hostname", "pod", "uuid"} {
		if bytes.Contains(bytes.ToLower(b.DSSEEnvelope.Payload), []byte(host)) {
			t.Errorf("the statement holds %q:\n%s", host, b.DSSEEnvelope.Payload)
		}
	}
	for _, k := range []string{"hosts", "host", "pods", "gpus"} {
		if _, ok := stmt.Predicate[k]; ok {
			t.Errorf("predicate has a %q field", k)
		}
	}
}

func TestVerifyFailures(t *testing.T) {
	dir := signedRun(t, "healthy.log", "ed25519.pem", cli.ExitOK)
	bundle := filepath.Join(dir, "evidence.sigstore.json")
	pub := evidenceKey(t, "ed25519.pub.pem")
	report := filepath.Join(dir, "nccl-report.ctrf.json")

	// Flip one byte of the report.
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	edited := filepath.Join(t.TempDir(), "nccl-report.ctrf.json")
	if err := os.WriteFile(edited, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Flip one byte of the signed payload and of the signature.
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	tampered := func(field string) string {
		var b map[string]any
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		env := b["dsseEnvelope"].(map[string]any)
		holder, key := env, "payload"
		if field == "sig" {
			holder, key = env["signatures"].([]any)[0].(map[string]any), "sig"
		}
		dec, err := base64.StdEncoding.DecodeString(holder[key].(string))
		if err != nil {
			t.Fatal(err)
		}
		dec[len(dec)/2] ^= 0x01
		holder[key] = base64.StdEncoding.EncodeToString(dec)
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "b.json")
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(truncated, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"edited report", []string{"--key", pub, bundle, "--report", edited}, cli.ExitFailure, "nccl-report.ctrf.json differs from its subject"},
		{"not a subject", []string{"--key", pub, bundle, "--report", ncclLog(t, "healthy.log")}, cli.ExitFailure, "healthy.log is not a subject"},
		{"payload", []string{"--key", pub, tampered("payload")}, cli.ExitFailure, "signature does not verify"},
		{"signature", []string{"--key", pub, tampered("sig")}, cli.ExitFailure, "signature does not verify"},
		{"wrong key", []string{"--key", evidenceKey(t, "other-ed25519.pub.pem"), bundle}, cli.ExitFailure, "signature does not verify"},
		{"truncated", []string{"--key", pub, truncated}, cli.ExitUsage, "not a Sigstore bundle"},
		{"private key as --key", []string{"--key", evidenceKey(t, "ed25519.pem"), bundle}, cli.ExitUsage, "this is a private key"},
		{"missing report", []string{"--key", pub, bundle, "--report", filepath.Join(dir, "absent.json")}, cli.ExitUsage, "absent.json"},
		{"missing bundle", []string{"--key", pub, filepath.Join(dir, "absent.json")}, cli.ExitUsage, "absent.json"},
		{"no key", []string{bundle}, cli.ExitUsage, "--key is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"verify"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

// TestUnusableSignKey: the key is refused (exit 2) before the log is
// judged, and nothing is written.
func TestUnusableSignKey(t *testing.T) {
	for key, want := range map[string]string{
		"ed25519-encrypted.pem":   "encrypted",
		"p256-sec1-encrypted.pem": "encrypted",
		"p256.pub.pem":            "this is a public key",
		"p384.pem":                "unsupported key type",
		"absent.pem":              "absent.pem",
	} {
		t.Run(key, func(t *testing.T) {
			out := t.TempDir()
			// Even a log that is not nccl-tests output: the key is read first.
			code, stdout, stderr := run(t, "nccl-report", "--log", evidenceKey(t, "README.md"), "--out", out, "--sign-key", evidenceKey(t, key))
			if code != cli.ExitUsage || !strings.Contains(stderr, "--sign-key") || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr lacks --sign-key and %q:\n%s\n%s", code, want, stdout, stderr)
			}
			entries, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Errorf("wrote %v", entries)
			}
		})
	}
}

// TestCommittedBundleVerifies: a bundle written by an earlier build still
// verifies, offline, with the public key alone.
func TestCommittedBundleVerifies(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "tools", "tcpxogen", "testdata", "evidence")
	args := append([]string{"verify", "--key", evidenceKey(t, "ed25519.pub.pem"), filepath.Join(dir, "evidence.sigstore.json")}, files(dir)...)
	if code, stdout, stderr := run(t, args...); code != cli.ExitOK {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
