package bom

import (
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// quote renders a value read from a data file for a message: bounded, with
// look-alike runes named, so a 900 KB value or a file linked to a secret is
// never echoed whole, once per problem.
func quote(s string) string { return yamlstrict.Quote(s) }

// maxRefShown fits any valid image reference whole: a 255-byte name, a
// 128-byte tag and a sha256 digest.
const maxRefShown = 512

// quoteRef is quote for an image reference, which is legitimately long and
// most useful shown whole.
func quoteRef(s string) string { return excerpt.QuoteN(s, maxRefShown) }

// errExcerpt bounds a parser's error, which may repeat the whole input.
func errExcerpt(err error) string {
	msg := err.Error()
	if len(msg) <= maxRefShown {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxRefShown], "") + fmt.Sprintf("… (%d bytes in all)", len(msg))
}
