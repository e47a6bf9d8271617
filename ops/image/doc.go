// Package image holds the ONNX operators on images: ImageDecoder, which
// decodes an encoded image stream into pixels.
package image
