stcheck fuzz loader --replay corpus/regressions/loader/crash-zero-element-dim-2-63.bin
