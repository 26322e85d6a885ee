package verifycmd

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/evidence"
)

func matches(data []byte, wantHex string) bool {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == wantHex
}

func subjectNames(r *evidence.Result) []string {
	names := make([]string, 0, len(r.Subjects))
	for n := range r.Subjects {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func orNone(v []string) string {
	if len(v) == 0 {
		return "not in the log"
	}
	return strings.Join(v, ", ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
