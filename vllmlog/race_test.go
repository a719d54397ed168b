//go:build race

package vllmlog

const raceEnabled = true
