package model

import (
	"github.com/quantserve/quantserve/model/onnxpb"
)

func castAttr(to onnxpb.DataType) []*onnxpb.Attribute {
	return []*onnxpb.Attribute{{Name: "to", Type: onnxpb.AttrInt, I: int64(to)}}
}
