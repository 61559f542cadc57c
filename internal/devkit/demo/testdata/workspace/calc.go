// Package calc holds the small arithmetic helpers of the demo workspace.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int { return a - b }

// Sub returns a minus b.
func Sub(a, b int) int { return a - b }
