stcheck fuzz validate --replay corpus/regressions/validate/timeout-json-string-backtracking.bin
