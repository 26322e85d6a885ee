// Package bandwidth reads the numbers a bandwidth judgement rests on: the
// declared floor (a recipe's nccl-all-reduce-bw value and nccl-report's
// --floor, one grammar for both) and the measurements nccl-tests prints.
//
// strconv.ParseFloat alone accepts far more than either ever holds: hex
// floats ("0x1p9" is 512), "Inf", "NaN", "1e308" and underscores behind a
// base prefix. Each of those passed as a bandwidth before; here each is an
// error, and so is a value no hardware this project targets can reach.
package bandwidth

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MaxGBps is the largest bandwidth, in GB/s, a floor or a measurement may
// state. An a3-megagpu-8g node has 8 × 200 Gb/s GPU NICs (200 GB/s between
// nodes) and NVLink 4 (450 GB/s per GPU and direction inside one); the bus
// bandwidth nccl-tests reports stays below both. 10,000 GB/s is an order of
// magnitude past any of them: a larger number is a corrupt log or a typo,
// never a measurement.
const MaxGBps = 10_000

// floorSyntax is the whole grammar of a floor: an optional ">=" or ">", then
// a plain decimal number of GB/s. Units, exponents, hex and other
// comparisons are rejected rather than guessed at.
var floorSyntax = regexp.MustCompile(`^\s*(>=|>)?\s*([0-9]+(?:\.[0-9]+)?)\s*$`)

// decimalSyntax is a measurement as nccl-tests prints it: %.2f, %.0f, and
// %.1e once a value overflows its column ("1.2e+03"), never signed.
var decimalSyntax = regexp.MustCompile(`^[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?$`)

// Errors a floor is refused with; the caller words the message for its
// input (a recipe line, a flag).
var (
	ErrSyntax      = errors.New(`not a floor: write ">= N" or "> N" (or a bare N), N a positive decimal number of GB/s`)
	ErrNotPositive = errors.New("not a positive bandwidth")
	ErrImplausible = fmt.Errorf("more than %d GB/s, beyond any link this project targets", MaxGBps)
)

// Floor reads the one floor grammar. op is ">=" or ">" as written, ">="
// for a bare number.
func Floor(s string) (op string, gbps float64, err error) {
	m := floorSyntax.FindStringSubmatch(s)
	if m == nil {
		return "", 0, ErrSyntax
	}
	v, err := strconv.ParseFloat(m[2], 64)
	switch {
	case err != nil, math.IsInf(v, 0):
		// The grammar's digits fail only by overflowing.
		return "", 0, ErrImplausible
	case v <= 0:
		return "", 0, ErrNotPositive
	case v > MaxGBps:
		return "", 0, ErrImplausible
	}
	op = m[1]
	if op == "" {
		op = ">="
	}
	return op, v, nil
}

// ErrNotDecimal is returned by Decimal for anything but a finite,
// non-negative decimal number.
var ErrNotDecimal = errors.New("not a finite non-negative decimal number")

// Decimal reads a finite, non-negative decimal number as nccl-tests prints
// it. Hex floats, infinities, NaN and signs are ErrNotDecimal; a decimal
// that overflows a float64 ("1e999") is ErrImplausible.
func Decimal(s string) (float64, error) {
	if !decimalSyntax.MatchString(strings.TrimSpace(s)) {
		return 0, ErrNotDecimal
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, ErrImplausible
	}
	return v, nil
}

// GBps reads a measured bandwidth: a Decimal no larger than MaxGBps.
func GBps(s string) (float64, error) {
	v, err := Decimal(s)
	if err != nil {
		return 0, err
	}
	if v > MaxGBps {
		return 0, ErrImplausible
	}
	return v, nil
}
