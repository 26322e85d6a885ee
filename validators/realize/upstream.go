package realize

// The upstream references the launch verdicts cite, for the enforcers that
// state the same rules elsewhere (the admission policies).
const (
	UpstreamNoTrainer   = upstreamNoTrainer
	UpstreamRawOverride = upstreamRawOverride
	UpstreamReplace     = upstreamReplace
)
