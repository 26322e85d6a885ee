// Package evidence signs a benchmark's results so anyone holding the public
// key can check them later, offline, and verifies such a signature.
//
// The signed document is an in-toto Statement v1 whose subjects are the
// result files (name and SHA-256) and whose predicate is PredicateType: the
// verdict and the figures behind it, and nothing that identifies a host. It
// is DSSE-signed with a long-lived key (ECDSA P-256 or Ed25519) and written
// as a Sigstore bundle (v0.3) carrying only a public-key hint: no
// certificate, no transparency-log entry and no timestamp. Verification is
// sigstore-go's own, with the public key as the only trusted material.
//
// The bundle therefore proves who signed (whoever holds the private key)
// and what (the files' digests and the predicate), never when: nothing in
// it attests the signing time.
package evidence

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	intoto "github.com/in-toto/attestation/go/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// PredicateType identifies the predicate; a change to its meaning gets a
// new version.
const PredicateType = "https://tcpxogen.dev/nccl-bandwidth/v1"

// BundleFile is the bundle's conventional file name, next to the report.
const BundleFile = "evidence.sigstore.json"

// NoSigningTime says what the bundle cannot prove; commands print it.
const NoSigningTime = "the bundle carries no signing-time proof (no timestamp, no transparency-log entry): it shows who signed and what, not when"

// dssePayloadType is the DSSE payload type of an in-toto Statement.
const dssePayloadType = "application/vnd.in-toto+json"

var (
	// ErrInput marks unusable input: a key or bundle that cannot be read
	// as one (exit 2 in a command).
	ErrInput = errors.New("unusable input")
	// ErrMismatch marks a bundle that was read but does not verify: a bad
	// signature, the wrong key, a file that differs from its subject, a
	// foreign predicate type (exit 1 in a command).
	ErrMismatch = errors.New("evidence does not verify")
)

// Predicate is the signed content of PredicateType. It holds the run's
// verdict and figures, the versions seen and pinned, and the tool that
// judged it. It never holds host names, pod names or GPU UUIDs: a bundle
// may be published.
type Predicate struct {
	Verdict       string   `json:"verdict"` // "pass" or "fail"
	Problems      int      `json:"problems"`
	BusBWGBps     float64  `json:"busbwGBps"`
	SizeBytes     int64    `json:"sizeBytes"`
	FloorGBps     float64  `json:"floorGBps"`
	ThresholdGBps float64  `json:"thresholdGBps"`
	NCCL          Versions `json:"nccl"`
	Plugin        Versions `json:"plugin"`
	Nodes         int      `json:"nodes"`
	Ranks         int      `json:"ranks"`
	// RuntimeSource is the provenance class ("shipped", "validator",
	// "user") or "unknown".
	RuntimeSource string `json:"runtimeSource"`
	// Fabric is the fabric the run was judged for: the --fabric value
	// (tcpxo, gib).
	Fabric string `json:"fabric"`
	// InstallerImage and DaemonImage are the fabric's pinned images: for
	// tcpxo the installer and its published tcpxo-daemon, for gib the
	// NCCL/gIB installer and no daemon ("": gIB has none).
	InstallerImage string `json:"installerImage"`
	DaemonImage    string `json:"daemonImage"`
	ToolVersion    string `json:"toolVersion"`

	// The fields below are set by `tcpxogen validate` (a live run) only;
	// a bundle of `tcpxogen nccl-report` (a captured log) has none of them.

	// DeployedRuntimeDigest is "sha256:<hex>" of the canonical JSON (see
	// CanonicalJSON) of the spec of the deployed runtime the run compared
	// with the render and derived the benchmark from.
	DeployedRuntimeDigest string `json:"deployedRuntimeDigest,omitempty"`
	// Images are the images the benchmark's containers ran, as the kubelet
	// resolved them (status.containerStatuses[].imageID and
	// initContainerStatuses), deduplicated by container name, image and
	// imageID; never the pod's name or node.
	Images []RanImage `json:"images,omitempty"`
	// MutableTagsAllowed records --allow-mutable-tags: some image ran by a
	// mutable tag only; those are listed in TagOnlyImages.
	MutableTagsAllowed bool       `json:"mutableTagsAllowed,omitempty"`
	TagOnlyImages      []RanImage `json:"tagOnlyImages,omitempty"`
}

// RanImage is one container's image as the kubelet reported it ran.
type RanImage struct {
	Container string `json:"container"`
	// Init is true for an init (or native sidecar) container.
	Init bool `json:"init,omitempty"`
	// Image is the pod spec's reference; ImageID the resolved one.
	Image   string `json:"image"`
	ImageID string `json:"imageID"`
}

// HasDigest tells whether the imageID names content (a sha256 digest), as
// opposed to a mutable tag, or nothing.
func (r RanImage) HasDigest() bool {
	return strings.Contains(r.ImageID, "@sha256:") || strings.HasPrefix(r.ImageID, "sha256:")
}

// CanonicalJSON encodes v deterministically, the encoding
// DeployedRuntimeDigest is taken over: v's JSON decoded into generic values
// (numbers kept as written) and encoded again with encoding/json, so object
// keys are sorted bytewise, there is no insignificant whitespace, no
// trailing newline, and <, > and & are not escaped.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Digest is "sha256:<hex>" of CanonicalJSON(v).
func Digest(v any) (string, error) {
	data, err := CanonicalJSON(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Versions is a component's versions as the log showed them and as pinned.
type Versions struct {
	Observed []string `json:"observed"`
	Pinned   string   `json:"pinned"`
}

// File is a subject: a file's name as recorded (its base name) and content.
type File struct {
	Name string
	Data []byte
}

// Sign builds the Statement over files and p and returns the Sigstore
// bundle JSON. It needs no network.
func Sign(key *PrivateKey, files []File, p Predicate) ([]byte, error) {
	if key == nil {
		return nil, errNoKey
	}
	if len(files) == 0 {
		return nil, errors.New("evidence: no files to sign")
	}
	stmt, err := statement(files, p)
	if err != nil {
		return nil, err
	}
	payload, err := protojson.Marshal(stmt)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode the statement: %w", err)
	}
	kp, err := newKeypair(key)
	if err != nil {
		return nil, err
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: dssePayloadType}, kp, sign.BundleOptions{Context: context.Background()})
	if err != nil {
		return nil, fmt.Errorf("evidence: sign: %w", err)
	}
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode the bundle: %w", err)
	}
	return append(out, '\n'), nil
}

func statement(files []File, p Predicate) (*intoto.Statement, error) {
	stmt := &intoto.Statement{Type: intoto.StatementTypeUri, PredicateType: PredicateType}
	seen := map[string]bool{}
	for _, f := range files {
		if f.Name == "" || strings.ContainsAny(f.Name, `/\`) {
			return nil, fmt.Errorf("evidence: subject name %q must be a plain file name", f.Name)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("evidence: subject %q given twice", f.Name)
		}
		seen[f.Name] = true
		sum := sha256.Sum256(f.Data)
		stmt.Subject = append(stmt.Subject, &intoto.ResourceDescriptor{Name: f.Name, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}})
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode the predicate: %w", err)
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, pred); err != nil {
		return nil, fmt.Errorf("evidence: encode the predicate: %w", err)
	}
	stmt.Predicate = pred
	if err := stmt.Validate(); err != nil {
		return nil, fmt.Errorf("evidence: statement: %w", err)
	}
	return stmt, nil
}

// Result is what a verified bundle says.
type Result struct {
	Predicate Predicate
	// Subjects maps each subject's name to its sha256 (hex).
	Subjects map[string]string
	// KeyHint is the public key's identifier as the bundle records it.
	KeyHint string
}

// Verify checks bundleJSON with sigstore-go's verifier, trusting pub alone
// and requiring no timestamp (the bundle has none), then checks that the
// statement is of PredicateType and that every file matches the subject of
// its name. Errors wrap ErrInput (unreadable bundle) or ErrMismatch.
func Verify(pub *PublicKey, bundleJSON []byte, files []File) (*Result, error) {
	if pub == nil {
		return nil, errNoKey
	}
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("%w: not a Sigstore bundle: %v", ErrInput, err)
	}
	if _, err := b.Envelope(); err != nil || b.GetDsseEnvelope() == nil {
		return nil, fmt.Errorf("%w: the bundle holds no DSSE envelope (a signed statement)", ErrInput)
	}
	sv, err := signature.LoadVerifier(pub.key, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	// The key is trusted whatever hint the bundle names: the hint is not
	// signed, the signature is what binds the key.
	trusted := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(sv, time.Time{}, time.Time{}), nil
	})
	v, err := verify.NewVerifier(trusted, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("evidence: verifier: %w", err)
	}
	res, err := v.Verify(b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithKey()))
	if err != nil {
		return nil, fmt.Errorf("%w: the signature does not verify with the %s public key %s: %v", ErrMismatch, pub.Algorithm(), pub.Hint(), err)
	}
	stmt := res.Statement
	if stmt == nil {
		return nil, fmt.Errorf("%w: the bundle holds no in-toto statement", ErrMismatch)
	}
	if stmt.GetType() != intoto.StatementTypeUri {
		return nil, fmt.Errorf("%w: statement type %q, want %q", ErrMismatch, stmt.GetType(), intoto.StatementTypeUri)
	}
	if stmt.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("%w: predicate type %q, want %q", ErrMismatch, stmt.GetPredicateType(), PredicateType)
	}
	out := &Result{Subjects: map[string]string{}}
	if h := b.GetVerificationMaterial().GetPublicKey().GetHint(); h != "" {
		out.KeyHint = h
	}
	for _, s := range stmt.GetSubject() {
		out.Subjects[s.GetName()] = s.GetDigest()["sha256"]
	}
	raw, err := protojson.Marshal(stmt.GetPredicate())
	if err != nil {
		return nil, fmt.Errorf("evidence: decode the predicate: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out.Predicate); err != nil {
		return nil, fmt.Errorf("%w: the %s predicate does not decode: %v", ErrMismatch, PredicateType, err)
	}
	var problems []string
	for _, f := range files {
		want, ok := out.Subjects[f.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not a subject (subjects: %s)", f.Name, strings.Join(sortedKeys(out.Subjects), ", ")))
			continue
		}
		sum := sha256.Sum256(f.Data)
		if got := hex.EncodeToString(sum[:]); got != want {
			problems = append(problems, fmt.Sprintf("%s differs from its subject: sha256 %s, signed %s", f.Name, got, want))
		}
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("%w: %s", ErrMismatch, strings.Join(problems, "; "))
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// keypair adapts a PrivateKey to sigstore-go's sign.Keypair.
type keypair struct {
	signer crypto.Signer
	alg    signature.AlgorithmDetails
	hint   []byte
}

var _ sign.Keypair = (*keypair)(nil)

func newKeypair(k *PrivateKey) (*keypair, error) {
	details := protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
	if k.Algorithm() == "Ed25519" {
		details = protocommon.PublicKeyDetails_PKIX_ED25519
	}
	alg, err := signature.GetAlgorithmDetails(details)
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return &keypair{signer: k.signer, alg: alg, hint: []byte(k.Public().Hint())}, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.alg.GetProtoHashType() }
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.alg.GetSignatureAlgorithm()
}
func (k *keypair) GetHint() []byte                { return k.hint }
func (k *keypair) GetPublicKey() crypto.PublicKey { return k.signer.Public() }
func (k *keypair) GetKeyAlgorithm() string {
	if k.alg.GetKeyType() == signature.ED25519 {
		return "ED25519"
	}
	return "ECDSA"
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return string(b), err
}

// SignData signs data: its SHA-256 digest for ECDSA, the data itself for
// pure Ed25519, as sigstore-go's own keypair does.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.alg.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := k.signer.Sign(rand.Reader, toSign, hf)
	if err != nil {
		return nil, nil, err
	}
	return sig, toSign, nil
}
