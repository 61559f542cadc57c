// Package toolspec describes Keel's built-in agent tools and decides, without touching the world,
// whether a tool call may run and what the model is told when it may not.
//
// It is imported by workflow code, so everything here is pure and deterministic: no I/O, no clock,
// no goroutines and no output that depends on map iteration order. The tools that do the work live
// in package tools and run inside activities.
//
// Every text returned to the model follows the same three rules: it says whether anything changed,
// it names the next action, and it carries nothing technical the model would try to fix (no stack
// traces, error numbers, internal paths or chains of wrapped errors).
package toolspec
