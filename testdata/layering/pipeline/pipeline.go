package pipeline

import (
	"example.com/layered/runtimes"
	"example.com/layered/validators/check"
)

func Run() string { return runtimes.Name() + check.Name() }
