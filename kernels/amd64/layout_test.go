package amd64

import (
	"testing"
	"unsafe"

	"github.com/quantserve/quantserve/kernels"
)

// TestBlockLayout pins the field offsets of kernels.QBlock and FBlock that
// the assembly in vnni_amd64.s reads (_gen/main.go writes them there): a
// reordered field fails here, not in memory.
func TestBlockLayout(t *testing.T) {
	var q kernels.QBlock
	var f kernels.FBlock
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"QBlock.U", unsafe.Offsetof(q.U), 0},
		{"QBlock.LDU", unsafe.Offsetof(q.LDU), 24},
		{"QBlock.Rows", unsafe.Offsetof(q.Rows), 32},
		{"QBlock.B", unsafe.Offsetof(q.B), 40},
		{"QBlock.PStr", unsafe.Offsetof(q.PStr), 64},
		{"QBlock.NP", unsafe.Offsetof(q.NP), 72},
		{"QBlock.KQ", unsafe.Offsetof(q.KQ), 80},
		{"QBlock.Flags", unsafe.Offsetof(q.Flags), 88},
		{"QBlock.Acc", unsafe.Offsetof(q.Acc), 96},
		{"QBlock.AccStr", unsafe.Offsetof(q.AccStr), 120},
		{"QBlock.FSum", unsafe.Offsetof(q.FSum), 128},
		{"QBlock.Off", unsafe.Offsetof(q.Off), 152},
		{"QBlock.SA", unsafe.Offsetof(q.SA), 176},
		{"QBlock.Colsum", unsafe.Offsetof(q.Colsum), 200},
		{"QBlock.SB", unsafe.Offsetof(q.SB), 224},
		{"QBlock.C", unsafe.Offsetof(q.C), 248},
		{"QBlock.LDC", unsafe.Offsetof(q.LDC), 272},
		{"QBlock.Bias", unsafe.Offsetof(q.Bias), 536},
		{"QBlock.Res", unsafe.Offsetof(q.Res), 560},
		{"QBlock.LDR", unsafe.Offsetof(q.LDR), 584},
		{"QBlock.Lo", unsafe.Offsetof(q.Lo), 592},
		{"QBlock.Hi", unsafe.Offsetof(q.Hi), 596},
		{"FBlock.A", unsafe.Offsetof(f.A), 0},
		{"FBlock.LDA", unsafe.Offsetof(f.LDA), 24},
		{"FBlock.Rows", unsafe.Offsetof(f.Rows), 32},
		{"FBlock.B", unsafe.Offsetof(f.B), 40},
		{"FBlock.PStr", unsafe.Offsetof(f.PStr), 64},
		{"FBlock.NP", unsafe.Offsetof(f.NP), 72},
		{"FBlock.K", unsafe.Offsetof(f.K), 80},
		{"FBlock.Flags", unsafe.Offsetof(f.Flags), 88},
		{"FBlock.C", unsafe.Offsetof(f.C), 96},
		{"FBlock.LDC", unsafe.Offsetof(f.LDC), 120},
		{"FBlock.Segs", unsafe.Offsetof(f.Segs), 128},
		{"FBlock.SegK", unsafe.Offsetof(f.SegK), 152},
		{"FBlock.Bias", unsafe.Offsetof(f.Bias), 160},
		{"FBlock.Res", unsafe.Offsetof(f.Res), 184},
		{"FBlock.LDR", unsafe.Offsetof(f.LDR), 208},
		{"FBlock.Lo", unsafe.Offsetof(f.Lo), 216},
		{"FBlock.Hi", unsafe.Offsetof(f.Hi), 220},
		{"FBlock.Ahead", unsafe.Offsetof(f.Ahead), 224},
	} {
		if unsafe.Sizeof(uintptr(0)) == 8 && c.got != c.want {
			t.Errorf("%s at offset %d, the assembly reads it at %d", c.name, c.got, c.want)
		}
	}
	// The flag bits the assembly tests.
	if kernels.QLoadAcc != 1 || kernels.QOutChannel != 2 || kernels.QOutBlock != 4 || kernels.QLoadSum != 8 || kernels.QFinal != 16 || kernels.FLoadC != 1 {
		t.Error("flag values differ from the ones the assembly tests")
	}
}
