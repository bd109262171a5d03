stcheck fuzz differential --replay corpus/regressions/differential/crash-canonical-float-shape.bin
