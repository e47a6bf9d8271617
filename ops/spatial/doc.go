// Package spatial holds the ONNX operators that move elements between
// positions or sample a tensor at computed positions: Pad, CenterCropPad,
// DepthToSpace, SpaceToDepth and Col2Im rearrange; Resize and Upsample
// resample along axes; GridSample samples an image at the points of a
// grid, which AffineGrid makes.
//
// PadMap and ResizePlanOf resolve a compiled Pad or Resize node on its
// inputs into the map its forward pass applies, which the gradients
// transpose.
package spatial
