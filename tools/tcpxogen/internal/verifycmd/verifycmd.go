// Package verifycmd implements `tcpxogen verify`: check an evidence bundle
// (as `nccl-report --sign-key` writes it) offline with the public key
// alone, and that the given files are the ones it signed.
package verifycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// Size limits: a bundle is a few KiB, a key under one; a report or chart
// a few hundred KiB.
const (
	maxBundle = 16 << 20
	maxKey    = 64 << 10
	maxFile   = 256 << 20
)

// Commands returns the verify command.
func Commands() cli.Commands {
	return cli.Commands{"verify": {Summary: "verify a signed evidence bundle (nccl-report or validate --sign-key) with the public key alone, offline", Run: run}}
}

func run(_ context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("verify", "verify --key PUB.pem BUNDLE [--report FILE]...", s)
	flagsUsage := fs.Usage
	fs.Usage = func() {
		flagsUsage()
		fmt.Fprintf(s.Out, "\nBUNDLE is the %s that `nccl-report --sign-key` or `validate --sign-key` writes. The signature is checked with sigstore-go against --key and nothing else: no network, no transparency log. %s.\n\nExit status: 0 the signature verifies and every --report file matches the digest it signed; 1 it does not (the signature, the file that differs, or a predicate type other than %s); 2 bad usage, or a bundle, key or file that cannot be read as one (a private key given as --key).\n", evidence.BundleFile, capitalize(evidence.NoSigningTime), evidence.PredicateType)
	}
	keyPath := fs.String("key", "", "`FILE`: the signer's public key, PEM (openssl pkey -in KEY.pem -pubout) (required)")
	reports := fs.StringArray("report", nil, "`FILE` to check against the bundle's subject of the same base name, e.g. "+"nccl-report.ctrf.json or the chart; repeatable")
	if err := cli.ParseArgs(fs, args, 1, "one BUNDLE file"); err != nil {
		return err
	}
	if *keyPath == "" {
		return cli.BadInput("--key is required: give the signer's public key (PEM)")
	}
	bundlePath := fs.Arg(0)

	keyData, err := inputfile.Read(*keyPath, inputfile.Spec{What: "--key", Max: maxKey})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	pub, err := evidence.ParsePublicKey(keyData)
	switch {
	case errors.Is(err, evidence.ErrPrivateKeyGiven):
		return cli.BadInput("--key %s: %w; verify with the public key (openssl pkey -in %s -pubout -out PUB.pem) and keep the private key with the signer", *keyPath, err, *keyPath)
	case err != nil:
		return cli.BadInput("--key %s: %w", *keyPath, err)
	}
	bundle, err := inputfile.Read(bundlePath, inputfile.Spec{What: "bundle", Max: maxBundle})
	if err != nil {
		return cli.BadInput("%w", err)
	}
	var files []evidence.File
	seen := map[string]string{}
	for _, p := range *reports {
		name := filepath.Base(p)
		if prev, ok := seen[name]; ok {
			return cli.BadInput("--report %s and --report %s share the name %s: give each subject once", prev, p, name)
		}
		seen[name] = p
		data, err := inputfile.Read(p, inputfile.Spec{What: "--report", Max: maxFile})
		if err != nil {
			return cli.BadInput("%w", err)
		}
		files = append(files, evidence.File{Name: name, Data: data})
	}

	res, err := evidence.Verify(pub, bundle, files)
	if errors.Is(err, evidence.ErrInput) {
		return cli.BadInput("%s: %w", bundlePath, err)
	}
	if res == nil {
		if err == nil {
			err = errors.New("no result")
		}
		fmt.Fprintf(s.Out, "verify: FAIL\n  bundle     %s\n  key        %s (%s %s)\n", bundlePath, *keyPath, pub.Algorithm(), pub.Hint())
		return fmt.Errorf("%s: %w", bundlePath, err)
	}
	summarize(s.Out, bundlePath, *keyPath, pub, res, files, err == nil)
	if err != nil {
		return fmt.Errorf("%s: %w", bundlePath, err)
	}
	return nil
}

func summarize(w io.Writer, bundlePath, keyPath string, pub *evidence.PublicKey, r *evidence.Result, files []evidence.File, ok bool) {
	head := "OK"
	if !ok {
		head = "FAIL"
	}
	p := r.Predicate
	fmt.Fprintf(w, "verify: %s\n", head)
	fmt.Fprintf(w, "  bundle     %s (%s)\n", bundlePath, evidence.PredicateType)
	fmt.Fprintf(w, "  signature  verifies with %s (%s %s)\n", keyPath, pub.Algorithm(), pub.Hint())
	fmt.Fprintf(w, "  time       %s\n", evidence.NoSigningTime)
	fmt.Fprintf(w, "  verdict    %s (%d problem(s))\n", p.Verdict, p.Problems)
	fmt.Fprintf(w, "  measured   %g GB/s busbw at %d bytes; floor %g GB/s, threshold %g GB/s\n", p.BusBWGBps, p.SizeBytes, p.FloorGBps, p.ThresholdGBps)
	fmt.Fprintf(w, "  nodes      %d node(s), %d rank(s)\n", p.Nodes, p.Ranks)
	fmt.Fprintf(w, "  nccl       %s (pinned %s)\n", orNone(p.NCCL.Observed), p.NCCL.Pinned)
	fmt.Fprintf(w, "  plugin     %s (pinned %s)\n", orNone(p.Plugin.Observed), p.Plugin.Pinned)
	fmt.Fprintf(w, "  fabric     %s; runtime source %s\n", p.Fabric, p.RuntimeSource)
	fmt.Fprintf(w, "  installer  %s\n", p.InstallerImage)
	daemon := p.DaemonImage
	if daemon == "" {
		daemon = "none (the fabric has no daemon)"
	}
	fmt.Fprintf(w, "  daemon     %s\n", daemon)
	fmt.Fprintf(w, "  tool       tcpxogen %s\n", p.ToolVersion)
	for _, f := range files {
		state := "matches its subject"
		if want, known := r.Subjects[f.Name]; !known {
			state = "IS NOT A SUBJECT"
		} else if !matches(f.Data, want) {
			state = "DIFFERS from its subject"
		}
		fmt.Fprintf(w, "  file       %s %s\n", f.Name, state)
	}
	if len(files) == 0 {
		fmt.Fprintf(w, "  files      none given (--report FILE); the subjects are %s\n", strings.Join(subjectNames(r), ", "))
	}
}
