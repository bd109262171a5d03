stcheck fuzz differential --replay corpus/regressions/differential/crash-pure-python-scanstring-u-escape.bin
