// Rendering the checkout page: string building, the other CPU cost of a request.

package main

import (
	"fmt"
	"strings"
)

// renderReceipt builds the receipt's HTML.
//
//go:noinline
func renderReceipt(items []int, total int32) string {
	var b strings.Builder
	b.WriteString("<table>")
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, "<tr><td>%d</td></tr>", items[i%len(items)])
	}
	fmt.Fprintf(&b, "</table><p>%d</p>", total)
	return b.String()
}
