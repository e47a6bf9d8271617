package dispatch

import "errors"

// AutodiffMode is the autodiff context a forward pass runs in.
type AutodiffMode int

// The two contexts: Disabled for inference, Enabled when the pass is
// recorded for gradients.
const (
	Disabled AutodiffMode = iota
	Enabled
)

// ErrAutodiffUnavailable is the answer to an Enabled context in a build
// without the autodiff tag. It names the tag to build with.
var ErrAutodiffUnavailable = errors.New("gradients are not built into this server: build it with `go build -tags autodiff`")

// CheckAutodiff returns ErrAutodiffUnavailable for an Enabled context when
// the build has no autodiff support, nil otherwise. It never panics.
func CheckAutodiff(mode AutodiffMode) error {
	if mode == Enabled && !AutodiffBuilt {
		return ErrAutodiffUnavailable
	}
	return nil
}
