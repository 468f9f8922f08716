// Pricing: the CPU-bound part of a checkout. In release 2.0 applyDiscount does three times
// the work (the regression `make demo` finds).

package main

// pricingWork is how many rounds applyDiscount runs: 3 in release 2.0.
var pricingWork = 1

// applyDiscount hashes the cart's items; its cost is the one that grows in 2.0.
//
//go:noinline
func applyDiscount(items []int) int32 {
	var h int32
	for r := 0; r < pricingWork; r++ {
		for i := 0; i < 600000; i++ {
			h = h*31 + int32(items[i%len(items)])
		}
	}
	return h
}

// tax is the other, unchanged part of pricing.
//
//go:noinline
func tax(items []int) int32 {
	var t int32
	for i := 0; i < 300000; i++ {
		t += int32(items[i%len(items)] * 7)
	}
	return t
}
