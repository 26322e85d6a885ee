package runtimes

import (
	"example.com/layered/bom"
	"example.com/layered/validators/check"
)

func Name() string { return "runtimes/" + bom.Name() + check.Name() }
