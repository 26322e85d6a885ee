package ycmd

import "example.com/layered/internal/leaf"

func Run() string { return leaf.Name() }
