package evidence

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// Errors a key is refused with. Each wraps ErrInput.
var (
	// ErrEncryptedKey: the private key is passphrase-protected; tcpxogen
	// signs unattended and never prompts.
	ErrEncryptedKey = fmt.Errorf("%w: the private key is encrypted", ErrInput)
	// ErrPublicKeyGiven: a public key where the private key is needed.
	ErrPublicKeyGiven = fmt.Errorf("%w: this is a public key, not the private key", ErrInput)
	// ErrPrivateKeyGiven: a private key where the public key is needed.
	ErrPrivateKeyGiven = fmt.Errorf("%w: this is a private key, not the public key", ErrInput)
	// ErrUnsupportedKey: neither ECDSA P-256 nor Ed25519.
	ErrUnsupportedKey = fmt.Errorf("%w: unsupported key type; use ECDSA P-256 or Ed25519", ErrInput)
)

// PrivateKey is a signing key read from PEM.
type PrivateKey struct {
	signer crypto.Signer
}

// PublicKey is a verification key read from PEM.
type PublicKey struct {
	key crypto.PublicKey
}

// Algorithm names the key's algorithm: "ECDSA P-256" or "Ed25519".
func (k *PrivateKey) Algorithm() string { return algorithm(k.signer.Public()) }

// Public returns the private key's public half.
func (k *PrivateKey) Public() *PublicKey { return &PublicKey{key: k.signer.Public()} }

// Algorithm names the key's algorithm: "ECDSA P-256" or "Ed25519".
func (k *PublicKey) Algorithm() string { return algorithm(k.key) }

// Hint is the key's identifier as a bundle records it: the base64 SHA-256
// of its PKIX (SubjectPublicKeyInfo) DER encoding.
func (k *PublicKey) Hint() string {
	der, err := x509.MarshalPKIXPublicKey(k.key)
	if err != nil {
		// Only the two supported key types are ever held, and both marshal.
		panic(fmt.Sprintf("evidence: marshal a %T: %v", k.key, err))
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// PEM returns the public key as `openssl pkey -pubout` writes it.
func (k *PublicKey) PEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(k.key)
	if err != nil {
		panic(fmt.Sprintf("evidence: marshal a %T: %v", k.key, err))
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func algorithm(pub crypto.PublicKey) string {
	switch pub.(type) {
	case *ecdsa.PublicKey:
		return "ECDSA P-256"
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", pub)
}

// firstBlock decodes the first PEM block of data.
func firstBlock(data []byte) (*pem.Block, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("%w: not a PEM key (no -----BEGIN ...----- block)", ErrInput)
	}
	return b, nil
}

func encrypted(b *pem.Block) bool {
	return b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED")
}

// ParsePrivateKey reads a private key as `openssl genpkey` writes it:
// PKCS#8 "PRIVATE KEY" holding ECDSA P-256 or Ed25519, or SEC 1 "EC
// PRIVATE KEY" for P-256. Encrypted keys and public keys are refused.
func ParsePrivateKey(data []byte) (*PrivateKey, error) {
	b, err := firstBlock(data)
	if err != nil {
		return nil, err
	}
	if encrypted(b) {
		return nil, ErrEncryptedKey
	}
	var key any
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	case "PUBLIC KEY", "CERTIFICATE":
		return nil, ErrPublicKeyGiven
	default:
		return nil, fmt.Errorf("%w (PEM block %q)", ErrUnsupportedKey, b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: PEM block %q does not parse: %v", ErrInput, b.Type, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w (ECDSA on %s)", ErrUnsupportedKey, k.Curve.Params().Name)
		}
		return &PrivateKey{signer: k}, nil
	case ed25519.PrivateKey:
		return &PrivateKey{signer: k}, nil
	}
	return nil, fmt.Errorf("%w (%T)", ErrUnsupportedKey, key)
}

// ParsePublicKey reads a public key as `openssl pkey -pubout` writes it
// ("PUBLIC KEY", PKIX). A private key is refused, so that a verifier is
// never handed the signing secret by mistake.
func ParsePublicKey(data []byte) (*PublicKey, error) {
	b, err := firstBlock(data)
	if err != nil {
		return nil, err
	}
	if encrypted(b) || strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return nil, ErrPrivateKeyGiven
	}
	if b.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%w (PEM block %q, want \"PUBLIC KEY\")", ErrUnsupportedKey, b.Type)
	}
	key, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: PUBLIC KEY does not parse: %v", ErrInput, err)
	}
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w (ECDSA on %s)", ErrUnsupportedKey, k.Curve.Params().Name)
		}
		return &PublicKey{key: k}, nil
	case ed25519.PublicKey:
		return &PublicKey{key: k}, nil
	}
	return nil, fmt.Errorf("%w (%T)", ErrUnsupportedKey, key)
}

var errNoKey = errors.New("evidence: nil key")

// LoadPrivateKey reads the signing key a command's flag (e.g. "--sign-key")
// names. Every error wraps ErrInput and names the flag, the file and the
// fix; a command reports it as bad input, before doing any work.
func LoadPrivateKey(flag, path string) (*PrivateKey, error) {
	data, err := inputfile.Read(path, inputfile.Spec{What: flag, Max: 64 << 10})
	if err != nil {
		return nil, unusable{err}
	}
	key, err := ParsePrivateKey(data)
	switch {
	case errors.Is(err, ErrEncryptedKey):
		return nil, fmt.Errorf("%s %s: %w; tcpxogen signs unattended and never prompts: keep the key in a secret store and give it decrypted (openssl pkey -in %s -out KEY.pem)", flag, path, err, path)
	case errors.Is(err, ErrPublicKeyGiven):
		return nil, fmt.Errorf("%s %s: %w; give the private key (the public one is for `tcpxogen verify --key`)", flag, path, err)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w; make one with: openssl genpkey -algorithm ed25519 -out KEY.pem", flag, path, err)
	}
	return key, nil
}

// unusable marks err as ErrInput without changing its message.
type unusable struct{ err error }

func (u unusable) Error() string   { return u.err.Error() }
func (u unusable) Unwrap() []error { return []error{u.err, ErrInput} }
