package dispatch

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckAutodiff(t *testing.T) {
	if err := CheckAutodiff(Disabled); err != nil {
		t.Errorf("Disabled: %v", err)
	}
	err := CheckAutodiff(Enabled)
	if AutodiffBuilt {
		if err != nil {
			t.Errorf("autodiff build: Enabled = %v", err)
		}
		return
	}
	if !errors.Is(err, ErrAutodiffUnavailable) || !strings.Contains(err.Error(), "-tags autodiff") {
		t.Errorf("default build: Enabled = %v, want ErrAutodiffUnavailable naming the tag", err)
	}
}
