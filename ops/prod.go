package ops

// ProdInts returns the product of s (1 for none): the number of elements
// of a shape whose size is already known to fit.
func ProdInts(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}
