package evidence

import (
	"context"
	"crypto/sha256"
	"testing"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

func sha256sum(data []byte) []byte {
	s := sha256.Sum256(data)
	return s[:]
}

// signStatement signs any statement as Sign would.
func signStatement(t *testing.T, key *PrivateKey, stmt *intoto.Statement) []byte {
	t.Helper()
	payload, err := protojson.Marshal(stmt)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := newKeypair(key)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: dssePayloadType}, kp, sign.BundleOptions{Context: context.Background()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
