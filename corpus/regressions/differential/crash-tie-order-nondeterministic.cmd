stcheck fuzz differential --replay corpus/regressions/differential/crash-tie-order-nondeterministic.bin
