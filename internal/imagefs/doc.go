// Package imagefs reads a handful of named files out of an OCI image without
// flattening it: the top-down layer scan, its merged view and its integrity
// and memory bounds. It does not decide where an image comes from or cache
// blobs (imagesource), nor what the files mean (extract).
//
// The installer image tcpxogen reads is a multi-GB CUDA base with a few small
// layers on top, and the files we need sit in those top layers. Scan therefore
// reads layers newest first, keeps a merged view of what it has seen (honouring
// whiteouts, opaque directories and directories replaced by files), resolves
// symbolic and hard links inside the image root against that view, and stops
// as soon as every wanted path has either been found or been proven absent.
// Layers it does not need are never merged.
//
// # Concurrency
//
// Layers are read ahead, one per CPU (GOMAXPROCS, WithParallelism) and no
// more than Limits.MaxParallelBytes of worst-case buffers and decompressor
// windows allow, while their results are merged strictly top-down, one
// layer at a time, by the same code a sequential scan runs: whiteouts,
// opaque directories and links mean what they always did, and a read-ahead
// layer below the one that settled the last want is cancelled and dropped
// unseen. Each layer is verified before anything from it is merged. The
// limits are charged in layer order; a layer that failed or went over while
// reading with more room than the layers above left is read again with the
// exact room, so the error reported (the topmost failing layer's) is the one
// a sequential scan reports, on every run.
//
// # Scan index
//
// A layer whose source keeps scan indexes (IndexedLayer; imagesource's blob
// cache) is merged from its index when the index answers everything the
// scan needs: the layer's tar table of contents (names, types, modes, sizes,
// link targets, whiteouts, in stream order, replayed through the same code
// as a read) and the content of the small files scans asked for. An index is
// written only after a read of the layer verified, keyed by the layer's
// digest and IndexVersion, and it carries that digest, the version and a
// SHA-256 of itself: a truncated, bit-flipped, half-written, other-version
// or other-layer index is ignored and rebuilt from a verified read. A scan
// that needs a file the index does not hold reads the layer, and an index
// whose table of contents disagrees with the verified layer is replaced.
// The checksum guards against damage and mix-ups, not against someone who
// can write the cache directory: the cache is trusted as far as what it was
// given after verification (a layer is verified once, when it enters it).
// A layer served from its index costs its recorded sizes against the
// limits, so a scan's verdict never depends on the cache.
//
// # Integrity
//
// go-containerregistry checks a layer's digest only when its compressed stream
// is read to the end, and a tar reader stops at the end-of-archive marker well
// before that. Scan hashes every compressed byte itself, reads every layer it
// opens to EOF (through the decompressor, which also checks the gzip CRC, and
// then the raw stream), and compares the hash with the digest the manifest
// names before anything from the layer (entry names, link targets, whiteouts,
// file content) reaches the merged view or the result. A layer that does not
// verify yields an *IntegrityError and no Result, whatever the source: remote
// registries verify at EOF, but OCI layouts and caches do not verify at all.
// The DiffID is not checked: the manifest pins the compressed digest, and the
// compressed bytes determine the uncompressed ones, so it would add CPU cost
// (and, for some v1.Layer implementations, a second full read) and no
// assurance.
//
// # Memory
//
// Metadata (type, mode, size, link target; never content) of every entry in
// the layers read is kept, because a symlink found further down may point at
// any path in a layer already passed. Limits.MaxEntries bounds it.
//
// Content is buffered only for regular files that can be the answer to a
// wanted path with Want.Content: before each layer Scan knows the path every
// unresolved want is waiting for, and while streaming it also follows
// symlinks met in the same layer to their targets (the usual shape is
// libnccl.so -> libnccl.so.2 -> libnccl.so.2.28.7). Buffers are bounded by
// MaxFileBytes per file and by MaxFileBytes times the number of content wants
// per layer, and are dropped once the layer has been settled. When a want
// resolves to a file whose content was not buffered (its target was streamed
// before the link pointing at it, or a symlink in a lower layer points up
// into a layer already passed) Scan reads that layer once more at the end,
// verified again, and takes only the files it needs; Stats.Rereads counts
// those passes. Retaining every small file of every layer instead would make
// memory grow with the layers' content; re-reading costs bandwidth only in a
// case real images rarely produce.
package imagefs
