//go:build !unix

package model

import "time"

func cpuTime() time.Duration { return 0 }
