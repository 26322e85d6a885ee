package check

import "example.com/layered/bom"

func Name() string { return "check/" + bom.Name() }
