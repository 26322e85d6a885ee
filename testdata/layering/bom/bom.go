package bom

import "example.com/layered/internal/leaf"

func Name() string { return "bom/" + leaf.Name() }
