//go:build !race

package vllmlog

const raceEnabled = false
