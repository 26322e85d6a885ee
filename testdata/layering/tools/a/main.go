package main

import (
	"fmt"

	"example.com/layered/pipeline"
)

func main() { fmt.Println(pipeline.Run()) }
