package xcmd

import (
	"example.com/layered/pipeline"
	"example.com/layered/tools/b/internal/ycmd"
)

func Run() string { return pipeline.Run() + ycmd.Run() }
