package image

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

	"github.com/quantserve/quantserve/onnx/onnxpb"
	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/ops/opstest"
	"github.com/quantserve/quantserve/tensor"
)

func decoder(format string) opstest.Node {
	n := opstest.Node{Op: "ImageDecoder", Opset: 20}
	if format != "" {
		n.Attrs = []*onnxpb.Attribute{{Name: "pixel_format", Type: onnxpb.AttrString, S: []byte(format)}}
	}
	return n
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
	out, err := opstest.Run(t, decoder("BGR"), stream)
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
	gray, err := opstest.Run(t, decoder("Grayscale"), stream)
	if err != nil {
		t.Fatal(err)
	}
	if want := color.GrayModel.Convert(c).(color.Gray).Y; absDiff(gray[0].Data.([]uint8)[5], want) > 1 {
		t.Errorf("gray %v, want about %v", gray[0].Data.([]uint8)[5], want)
	}
	// Garbage, and a header claiming a huge image, are input errors
	// found before any pixel is allocated.
	for name, b := range map[string][]byte{"garbage": []byte("not an image"), "huge": hugePNGHeader(1<<20, 1<<20)} {
		_, err := opstest.Run(t, decoder(""), tensor.From([]int{len(b)}, b))
		if !errors.Is(err, ops.ErrInput) {
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
