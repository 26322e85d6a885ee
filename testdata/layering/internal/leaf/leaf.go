package leaf

func Name() string { return "leaf" }
