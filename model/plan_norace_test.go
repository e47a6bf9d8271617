//go:build !race

package model_test

const planRace = false
