//go:build !amd64 || noasm || !gc

package reduce

// Without assembly every kernel is the generic Go loop.

func detectLevel() isaLevel { return levelGeneric }

func archLoop(isaLevel, DType, Op) loop { return nil }

func archDivider(isaLevel, DType) divider { return nil }

func archStreamLoop(isaLevel, DType, Op) (loop, int) { return nil, 0 }
