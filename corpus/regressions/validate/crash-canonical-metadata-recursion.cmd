stcheck fuzz validate --replay corpus/regressions/validate/crash-canonical-metadata-recursion.bin
