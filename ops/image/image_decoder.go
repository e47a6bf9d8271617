package image

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // formats ImageDecoder reads
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/quantserve/quantserve/ops"
	"github.com/quantserve/quantserve/tensor"
)

func init() {
	ops.Register(ops.Descriptor{Type: "ImageDecoder", Since: 20, Fold: true}, buildImageDecoder)
}

// ImageDecoderAttrs are ImageDecoder's attributes.
type ImageDecoderAttrs struct {
	PixelFormat string `onnx:"pixel_format" default:"RGB"`
}

// maxDecodedPixels bounds the images ImageDecoder decodes: the header's
// size is checked before any pixel is allocated.
const maxDecodedPixels = 1 << 26

// imageDecoder decodes a JPEG, PNG, GIF, BMP, TIFF or WebP stream to an
// [H, W, 3] RGB or BGR image, or [H, W, 1] grayscale (ITU-R 601 luma,
// rounded as Pillow rounds it).
type imageDecoder struct {
	format string // RGB, BGR or Grayscale
}

func buildImageDecoder(n *ops.Node, at *ImageDecoderAttrs) (ops.Operator, error) {
	if err := n.CheckArity(1, 1, 1, 1); err != nil {
		return nil, err
	}
	switch at.PixelFormat {
	case "RGB", "BGR", "Grayscale":
	default:
		return nil, fmt.Errorf("pixel_format %q is not RGB, BGR or Grayscale", at.PixelFormat)
	}
	return &imageDecoder{format: at.PixelFormat}, nil
}

func (op *imageDecoder) Run(_ *ops.Context, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x := in[0]
	data, ok := x.Data.([]uint8)
	if !ok || x.Rank() != 1 {
		return nil, ops.InputErrorf("ImageDecoder takes a 1-D UINT8 stream, got %v%s", x.DType, tensor.ShapeString(x.Shape))
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, ops.InputErrorf("ImageDecoder: %v", err)
	}
	if cfg.Width*cfg.Height > maxDecodedPixels || cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, ops.InputErrorf("ImageDecoder: a %d×%d image is outside what quantserve decodes (%d pixels)", cfg.Width, cfg.Height, maxDecodedPixels)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, ops.InputErrorf("ImageDecoder: %v", err)
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	ch := 3
	if op.format == "Grayscale" {
		ch = 1
	}
	out := make([]uint8, h*w*ch)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			p := (y*w + x) * ch
			switch op.format {
			case "RGB":
				out[p], out[p+1], out[p+2] = c.R, c.G, c.B
			case "BGR":
				out[p], out[p+1], out[p+2] = c.B, c.G, c.R
			default:
				out[p] = uint8((uint32(c.R)*19595 + uint32(c.G)*38470 + uint32(c.B)*7471 + 0x8000) >> 16)
			}
		}
	}
	return []*tensor.Tensor{tensor.From([]int{h, w, ch}, out)}, nil
}
