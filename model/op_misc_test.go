package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"slices"
	"testing"

	"github.com/quantserve/quantserve/gemm"
	"github.com/quantserve/quantserve/model/onnxpb"
	"github.com/quantserve/quantserve/tensor"
)

// runOp compiles one node of op with the given attributes and outputs and
// runs it on in.
func runOp(t *testing.T, op string, opset int64, outputs int, attrs []*onnxpb.Attribute, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	d, err := lookup("", op, opset)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(in))
	outs := []string{"y", "z", "w"}[:outputs]
	n := &node{pb: &onnxpb.Node{OpType: op, Inputs: names, Outputs: outs}, attrs: Attrs{}, opset: opset, opts: &Options{Exec: gemm.Default()}, model: &Model{}}
	for _, a := range attrs {
		n.attrs[a.Name] = a
	}
	n.consts = make([]*tensor.Tensor, len(in))
	n.unused = make([]bool, len(in))
	_, compiled, err := compileNodeWith(d, n)
	if err != nil {
		return nil, err
	}
	return runAlone(n, compiled)(in)
}

func TestStringSplitWhitespace(t *testing.T) {
	x := tensor.From([]int{2}, []string{"  a  b\tc ", "one"})
	out, err := runOp(t, "StringSplit", 20, 2, []*onnxpb.Attribute{{Name: "maxsplit", Type: onnxpb.AttrInt, I: 1}}, x)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Data.([]string); !slices.Equal(got, []string{"a", "b\tc", "one", ""}) || !slices.Equal(out[0].Shape, []int{2, 2}) {
		t.Errorf("Y = %q %v", got, out[0].Shape)
	}
	if got := out[1].Data.([]int64); !slices.Equal(got, []int64{2, 1}) {
		t.Errorf("Z = %v", got)
	}
}

func TestRegexFullMatchBadPattern(t *testing.T) {
	_, err := runOp(t, "RegexFullMatch", 20, 1, []*onnxpb.Attribute{{Name: "pattern", Type: onnxpb.AttrString, S: []byte("a(")}}, tensor.From([]int{1}, []string{"a"}))
	if err == nil {
		t.Error("an invalid pattern compiled")
	}
}

func TestImageDecoder(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 10)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	stream := tensor.From([]int{buf.Len()}, buf.Bytes())
	out, err := runOp(t, "ImageDecoder", 20, 1, []*onnxpb.Attribute{{Name: "pixel_format", Type: onnxpb.AttrString, S: []byte("BGR")}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	got := out[0]
	if !slices.Equal(got.Shape, []int{2, 3, 3}) {
		t.Fatalf("shape %v", got.Shape)
	}
	c := img.NRGBAAt(2, 1)
	if p := got.Data.([]uint8)[(1*3+2)*3:]; p[0] != c.B || p[1] != c.G || p[2] != c.R {
		t.Errorf("pixel (2,1) = %v, want BGR of %v", p[:3], c)
	}
	gray, err := runOp(t, "ImageDecoder", 20, 1, []*onnxpb.Attribute{{Name: "pixel_format", Type: onnxpb.AttrString, S: []byte("Grayscale")}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if want := color.GrayModel.Convert(c).(color.Gray).Y; absDiff(gray[0].Data.([]uint8)[5], want) > 1 {
		t.Errorf("gray %v, want about %v", gray[0].Data.([]uint8)[5], want)
	}
	// Garbage, and a header claiming a huge image, are input errors
	// found before any pixel is allocated.
	for name, b := range map[string][]byte{"garbage": []byte("not an image"), "huge": hugePNGHeader(1<<20, 1<<20)} {
		_, err := runOp(t, "ImageDecoder", 20, 1, nil, tensor.From([]int{len(b)}, b))
		if !errors.Is(err, ErrInput) {
			t.Errorf("%s: %v, want an input error", name, err)
		}
	}
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

// hugePNGHeader is a PNG signature and IHDR chunk for a w×h RGB image.
func hugePNGHeader(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	chunk := append([]byte("IHDR"), ihdr...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ihdr)))
	b = append(b, chunk...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
}

func TestNonMaxSuppressionBadShapes(t *testing.T) {
	boxes := tensor.From([]int{1, 2, 4}, make([]float32, 8))
	scores := tensor.From([]int{1, 1, 3}, make([]float32, 3))
	if _, err := runOp(t, "NonMaxSuppression", 11, 1, nil, boxes, scores); !errors.Is(err, ErrInput) {
		t.Errorf("mismatched box counts: %v", err)
	}
}
