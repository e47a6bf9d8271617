package model

// CPUTime is cpuTime for the package's external tests: the CPU time the
// process has used, the collector's included, or 0 where it is unknown.
var CPUTime = cpuTime
